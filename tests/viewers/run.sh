#!/usr/bin/env bash
# The viewer checks: Perch's exports opened in the tools a user opens them with, and the
# numbers those tools show compared with `perch report --json` (tests/viewers/check_*.mjs).
#   speedscope   the npm package's app in Debian's headless Chromium (puppeteer-core)
#   chrome       the DevTools Performance panel bundled in that Chromium
#   gecko        Mozilla's profiler-cli (the Firefox Profiler's processing, from npm)
#   pprof        go tool pprof -top and -traces
#   folded       the folded counts add up to the report's timer samples
#   html         perch report --html in the same Chromium
# on the real x64 PerfView trace (../shared/data) and on a synthetic trace (perch synth).
#
# Usage: tests/viewers/run.sh BUILD_DIR   (a build of the linux preset: BUILD_DIR/tools/perch)
# npm packages come from tests/viewers/package-lock.json (npm ci into build/viewers);
# screenshots go to build/viewers/screenshots/. Prints "viewers: N passed, N failed" and
# exits non-zero when a check fails or a tool is missing (never skips quietly).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
BUILD="$(cd "${1:?usage: run.sh BUILD_DIR}" && pwd)"
PERCH="$BUILD/tools/perch"
WORK="$ROOT/build/viewers"
OUT="$WORK/out"
SHOTS="$WORK/screenshots"
DATA="${PERCH_DATA_DIR:-$ROOT/../shared/data}"
X64="$DATA/etl/perfview_net.4.5.2.x64.etl"

die() { echo "viewers: FAILED: $*" >&2; echo "viewers: 0 passed, 1 failed"; exit 1; }

for tool in node npm go "${PERCH_CHROMIUM:-/usr/bin/chromium}" "$PERCH"; do
    command -v "$tool" >/dev/null 2>&1 || die "$tool is missing (tools/setup-deps.sh installs it)"
done
[ -f "$X64" ] || die "the real trace $X64 is missing (set PERCH_DATA_DIR)"

"$ROOT/tests/viewers/install.sh" || die "npm ci failed (the npm registry is needed once)"
mkdir -p "$OUT" "$SHOTS"

input_of() { if [ "$1" = x64 ]; then echo "$X64"; else echo "$OUT/synth.etl"; fi; }

echo "viewers: exports"
"$PERCH" synth -o "$OUT/synth.etl" --seed 1 --size 4M >/dev/null
for t in x64 synth; do
    in="$(input_of "$t")"
    "$PERCH" report --json --top 100000 "$in" >"$OUT/$t.report.json"
    for f in chrome gecko speedscope; do
        "$PERCH" export -f "$f" "$in" -o "$OUT/$t.$f.json"
    done
    "$PERCH" export -f pprof "$in" -o "$OUT/$t.pb"
    "$PERCH" export -f folded "$in" -o "$OUT/$t.folded"
done

passed=0
failed=0
# check NAME COMMAND...: runs one check, adds its counts (its last line: N passed, N failed).
check() {
    local name="$1" log="$OUT/$1.log" rc=0
    shift
    local t0=$SECONDS
    (cd "$WORK" && "$@") >"$log" 2>&1 || rc=$?
    grep -E '^(ok|FAIL) ' "$log" | sed 's/^/  /' || true
    local line p f
    line="$(grep -E '[0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1 || true)"
    p="$(sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed$/\1/' <<<"${line:-x 0 passed, 1 failed}")"
    f="$(sed -E 's/.* ([0-9]+) passed, ([0-9]+) failed$/\2/' <<<"${line:-x 0 passed, 1 failed}")"
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        f=1
        tail -n 20 "$log" | sed 's/^/  | /'
    fi
    passed=$((passed + p))
    failed=$((failed + f))
    echo "viewers: $name: $p passed, $f failed ($((SECONDS - t0)) s)"
}

folded_total() { awk '{ n += $NF } END { print n + 0 }' "$1"; }
json_field() { node -e "console.log(JSON.parse(require('fs').readFileSync('$1'))['$2'])"; }
folded_check() {
    local ok=0 bad=0
    for t in x64 synth; do
        local want got
        want="$(json_field "$OUT/$t.report.json" samples)"
        got="$(folded_total "$OUT/$t.folded")"
        if [ "$want" = "$got" ]; then
            echo "ok   folded $t: timer samples only: $got (expected $want)"; ok=$((ok + 1))
        else
            echo "FAIL folded $t: timer samples only: $got (expected $want)"; bad=$((bad + 1))
        fi
    done
    echo "folded: $ok passed, $bad failed"
    [ "$bad" -eq 0 ]
}

for t in x64 synth; do
    check "speedscope-$t" node check_speedscope.mjs "$OUT/$t.speedscope.json" \
        "$OUT/$t.report.json" "$SHOTS/speedscope-$t.png"
    check "devtools-$t" node check_devtools.mjs "$OUT/$t.chrome.json" "$OUT/$t.report.json" \
        "$SHOTS/devtools-$t.png"
    check "profiler-cli-$t" node check_gecko.mjs "$OUT/$t.gecko.json" "$OUT/$t.report.json"
    check "pprof-$t" node check_pprof.mjs "$OUT/$t.pb" "$OUT/$t.report.json"
done
check folded folded_check
for t in x64 synth; do
    # the page's tables use the default --top, so compare with the report of the same --top
    "$PERCH" report --json "$(input_of "$t")" >"$OUT/$t.report-top10.json"
    "$PERCH" report --html "$OUT/$t.report.html" "$(input_of "$t")" 2>/dev/null
    check "html-$t" node check_html.mjs "$OUT/$t.report.html" "$OUT/$t.report-top10.json" \
        "$SHOTS/report-$t.png" "$([ "$t" = x64 ] && echo 1000 || echo 5000)"
done
echo "viewers: screenshots in $SHOTS"
echo "viewers: $passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
