#!/bin/sh
# Runs one Windows program under Wine for ctest: the CROSSCOMPILING_EMULATOR of every target
# (cmake/mingw-w64-x86_64.cmake), so the cmocka test programs, perch and perchd in the CLI
# tests, the fuzz replays and the benchmark smokes. Each of them prints something before it
# can fail (a cmocka program before its first test, perch and perchd an error or a usage), so
# a run that exits non-zero having printed nothing at all never reached main: Wine failed to
# start the process. That happened in CI to win.test_etw_convert (0.01 s, no output; 2,600
# runs here under load never repeated it) and to cli.symbolize_listed (`perch --help`, 0.00 s,
# no output), which ran under plain `wine` then. Such a run is started once more, and the
# retry is written to stderr and appended to $PERCH_WINE_RETRY_LOG (tools/test-all.sh prints
# the count in its summary), so a retried start is never silent. Any run that printed
# something, or a second start that fails, ends the test with its own exit status.
# Output is kept in temporary files and copied out when the program ends (stdout, then stderr).
# With --quiet first (the CLI scripts' programs, tests/CMakeLists.txt's PERCH_WINE_RUN, whose
# stderr the scripts compare line by line) the retry goes only to $PERCH_WINE_RETRY_LOG when
# that is set, and to stderr otherwise.
quiet=
if [ "${1:-}" = --quiet ]; then
    quiet=1
    shift
fi

out=$(mktemp) || exit 125
err=$(mktemp) || exit 125
child=
cleanup() {
    [ -n "$child" ] && kill "$child" 2>/dev/null
    rm -f "$out" "$err"
}
trap 'cleanup; exit 143' TERM INT
trap cleanup EXIT

run_once() {
    wine "$@" >"$out" 2>"$err" &
    child=$!
    wait "$child"
    rc=$?
    child=
    return "$rc"
}

run_once "$@"
rc=$?
if [ "$rc" -ne 0 ] && [ ! -s "$out" ] && [ ! -s "$err" ]; then
    line="wine-test-run: $1 exited $rc with no output (Wine did not start it); started again"
    [ -n "$quiet" ] && [ -n "${PERCH_WINE_RETRY_LOG:-}" ] || echo "$line" >&2
    if [ -n "${PERCH_WINE_RETRY_LOG:-}" ]; then
        echo "$(date -u +%FT%TZ) $line" >>"$PERCH_WINE_RETRY_LOG"
    fi
    run_once "$@"
    rc=$?
fi
cat "$out"
cat "$err" >&2
exit "$rc"
