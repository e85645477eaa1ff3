#!/usr/bin/env bash
# Runs every Perch test: the native build (preset linux, gcc), the sanitizer build (preset
# asan: clang with ASan+UBSan, plus the libFuzzer targets), the ThreadSanitizer build (preset
# tsan: the unit, posix and cli tests) and the Windows build (preset mingw) whose test programs
# ctest runs under Wine. Installs missing dependencies first.
# Two more presets are built but not run (mingw-release, clang-release): every build type
# must compile warning-free with both compilers, and -O3 finds warnings -O2 does not.
#
# Then the viewer checks (tests/viewers/run.sh): the exports and the HTML report opened in the
# real tools (headless Chromium with speedscope and the DevTools Performance panel,
# profiler-cli, go tool pprof), on the linux build.
#
# Each run prints ctest's own summary; at the end one line per preset and a total. Exits
# non-zero if any build fails, any test fails, or any preset ran no test at all.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tools/wine.sh
. "$ROOT/tools/wine.sh"

JOBS="${PERCH_JOBS:-2}"
LOGS="$ROOT/build/test-logs"
PRESETS=(linux asan tsan mingw)
BUILD_ONLY=(mingw-release clang-release)
declare -A PASSED FAILED STATUS BUILT

"$ROOT/tools/setup-deps.sh"
mkdir -p "$LOGS"
# tools/wine-test-run.sh appends here each time Wine failed to start a test program.
export PERCH_WINE_RETRY_LOG="$LOGS/wine-retries.log"
rm -f "$PERCH_WINE_RETRY_LOG"
trap perch_wine_stop EXIT

# run_preset <preset>: configure, build and test; records counts in PASSED/FAILED/STATUS.
run_preset() {
    local preset="$1" log="$LOGS/$1.log" rc=0
    PASSED[$preset]=0
    FAILED[$preset]=0
    echo "==================== $preset ===================="
    if ! cmake --preset "$preset" >"$LOGS/$preset-configure.log" 2>&1; then
        cat "$LOGS/$preset-configure.log"
        STATUS[$preset]="configure failed"
        return
    fi
    if ! cmake --build --preset "$preset" -j"$JOBS" >"$LOGS/$preset-build.log" 2>&1; then
        grep -E 'error|Error' "$LOGS/$preset-build.log" | head -n 40 || true
        STATUS[$preset]="build failed (see $LOGS/$preset-build.log)"
        return
    fi
    if [ "$preset" = mingw ]; then
        perch_wine_start "$ROOT"
    fi
    local run=()
    if [ "$preset" = tsan ] && setarch "$(uname -m)" -R true 2>/dev/null; then
        # clang 14's TSan dies at start where the kernel randomizes more address bits than it
        # knows (vm.mmap_rnd_bits = 32, google/sanitizers#1716): its tests run without ASLR
        run=(setarch "$(uname -m)" -R)
    fi
    "${run[@]}" ctest --preset "$preset" -j"$JOBS" 2>&1 | tee "$log" || rc=$?
    local summary
    summary="$(grep -E '^[0-9]+% tests passed, [0-9]+ tests? failed out of [0-9]+' "$log" | tail -n 1 || true)"
    if [ -z "$summary" ]; then
        STATUS[$preset]="ctest printed no summary (exit $rc)"
        return
    fi
    local failed total
    failed="$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\1/' <<<"$summary")"
    total="$(sed -E 's/.* ([0-9]+) tests? failed out of ([0-9]+).*/\2/' <<<"$summary")"
    PASSED[$preset]=$((total - failed))
    FAILED[$preset]=$failed
    if [ "$total" -eq 0 ]; then
        STATUS[$preset]="no test ran"
    elif [ "$failed" -ne 0 ] || [ "$rc" -ne 0 ]; then
        STATUS[$preset]="failed"
    else
        STATUS[$preset]="ok"
    fi
}

# build_only <preset>: configure and build (warnings are errors); records BUILT.
build_only() {
    local preset="$1"
    echo "==================== $preset (build only) ===================="
    if cmake --preset "$preset" >"$LOGS/$preset-configure.log" 2>&1 &&
        cmake --build --preset "$preset" -j"$JOBS" >"$LOGS/$preset-build.log" 2>&1; then
        BUILT[$preset]=ok
    else
        grep -E 'error|Error' "$LOGS/$preset-build.log" "$LOGS/$preset-configure.log" | head -n 40 || true
        BUILT[$preset]="build failed (see $LOGS/$preset-build.log)"
    fi
    echo "$preset: ${BUILT[$preset]}"
}

for preset in "${PRESETS[@]}"; do
    run_preset "$preset"
done
for preset in "${BUILD_ONLY[@]}"; do
    build_only "$preset"
done

# run_viewers: the viewer checks on the linux build; a missing tool fails them.
run_viewers() {
    local log="$LOGS/viewers.log" rc=0 line
    PASSED[viewers]=0
    FAILED[viewers]=0
    echo "==================== viewers ===================="
    if [ "${STATUS[linux]}" != ok ]; then
        STATUS[viewers]="not run (the linux preset failed)"
        return
    fi
    "$ROOT/tests/viewers/run.sh" "$ROOT/build/linux" 2>&1 | tee "$log" || rc=$?
    line="$(grep -E '^viewers: [0-9]+ passed, [0-9]+ failed$' "$log" | tail -n 1 || true)"
    if [ -n "$line" ]; then
        PASSED[viewers]="$(sed -E 's/viewers: ([0-9]+) passed.*/\1/' <<<"$line")"
        FAILED[viewers]="$(sed -E 's/.* ([0-9]+) failed$/\1/' <<<"$line")"
    fi
    if [ "$rc" -eq 0 ] && [ "${FAILED[viewers]}" -eq 0 ] && [ "${PASSED[viewers]}" -gt 0 ]; then
        STATUS[viewers]="ok"
    else
        STATUS[viewers]="failed (see $log)"
    fi
}
run_viewers
PRESETS+=(viewers)

echo "==================== summary ===================="
total_passed=0
total_failed=0
ok=1
for preset in "${PRESETS[@]}"; do
    echo "$preset: ${PASSED[$preset]} passed, ${FAILED[$preset]} failed (${STATUS[$preset]})"
    total_passed=$((total_passed + PASSED[$preset]))
    total_failed=$((total_failed + FAILED[$preset]))
    [ "${STATUS[$preset]}" = ok ] || ok=0
done
for preset in "${BUILD_ONLY[@]}"; do
    echo "$preset: build only (${BUILT[$preset]})"
    [ "${BUILT[$preset]}" = ok ] || ok=0
done
if [ -s "$PERCH_WINE_RETRY_LOG" ]; then
    echo "wine: $(wc -l <"$PERCH_WINE_RETRY_LOG") test program(s) Wine did not start, started again:"
    sed 's/^/  /' "$PERCH_WINE_RETRY_LOG"
fi
if [ "$ok" -ne 1 ] || [ "$total_passed" -eq 0 ]; then
    echo "test-all: FAILED"
    echo "Total: $total_passed passed, $total_failed failed"
    exit 1
fi
echo "test-all: every preset passed"
echo "Total: $total_passed passed, $total_failed failed"
