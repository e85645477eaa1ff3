#!/bin/sh
# Checks tools/wine-test-run.sh, the wrapper through which ctest starts every Windows program
# under Wine: a run that fails having printed nothing is started once more and the retry is
# said; a run that printed anything, or succeeded, is never started twice. A fake `wine` on
# PATH plays each case (it counts its starts in a file and reads its script from another).
# Usage: wine_retry.sh <path of tools/wine-test-run.sh>
set -u
wrapper=$1
dir=$(mktemp -d) || exit 1
trap 'rm -rf "$dir"' EXIT
failures=0

cat >"$dir/wine" <<'FAKE'
#!/bin/sh
n=$(($(cat "$FAKE_DIR/count" 2>/dev/null || echo 0) + 1))
echo "$n" >"$FAKE_DIR/count"
# The line for this start: "<exit status> <stdout text or -> <stderr text or ->".
set -- $(sed -n "${n}p" "$FAKE_DIR/plan")
[ "$2" = - ] || echo "$2"
[ "$3" = - ] || echo "$3" >&2
exit "$1"
FAKE
chmod +x "$dir/wine"

# check <name> <plan lines> <expected status> <expected starts> <expected stdout> <retry said>
# [--quiet]
check() {
    name=$1 plan=$2 want_rc=$3 want_starts=$4 want_out=$5 want_said=$6
    shift 6
    rm -f "$dir/count" "$dir/log"
    printf '%s\n' "$plan" >"$dir/plan"
    FAKE_DIR=$dir PATH="$dir:$PATH" PERCH_WINE_RETRY_LOG="$dir/log" \
        "$wrapper" "$@" prog.exe >"$dir/out" 2>"$dir/err"
    rc=$?
    starts=$(cat "$dir/count")
    out=$(cat "$dir/out")
    said=no
    grep -q "started again" "$dir/err" && said=stderr
    logged=no
    [ -s "$dir/log" ] && grep -q "prog.exe exited" "$dir/log" && logged=yes
    ok=yes
    [ "$rc" = "$want_rc" ] || ok=no
    [ "$starts" = "$want_starts" ] || ok=no
    [ "$out" = "$want_out" ] || ok=no
    [ "$said" = "$want_said" ] || ok=no
    if [ "$want_starts" = 2 ]; then [ "$logged" = yes ] || ok=no; else [ "$logged" = no ] || ok=no; fi
    if [ "$ok" = yes ]; then
        echo "ok   $name"
    else
        echo "FAIL $name: status $rc (want $want_rc), starts $starts (want $want_starts)," \
             "stdout '$out' (want '$want_out'), retry on stderr: $said (want $want_said)," \
             "in the log: $logged"
        failures=$((failures + 1))
    fi
}

check "a silent failed start is started again" "$(printf '3 - -\n0 hello -')" 0 2 hello stderr
check "a silent failed start twice keeps the second status" "$(printf '3 - -\n5 - -')" 5 2 "" stderr
check "a failure that printed is not started again" "1 - oops" 1 1 "" no
check "a failure with stdout only is not started again" "2 again -" 2 1 again no
check "a silent success is not started again" "0 - -" 0 1 "" no
check "--quiet keeps the retry off stderr when the log is set" \
      "$(printf '3 - -\n0 hi -')" 0 2 hi no --quiet

[ "$failures" = 0 ] && echo "wine_retry: all passed" && exit 0
echo "wine_retry: $failures failed"
exit 1
