#!/usr/bin/env bash
# The live path's figures for issue 9, side by side in one run on one trace:
#   1. bench_live.exe (mingw build, under Wine): the offline import (.etl reader -> model ->
#      capture writer, as `perch import`) and the live path perchd runs (fake ETW replay ->
#      EVENT_RECORD callback -> queue -> model thread -> capture writer), in one process;
#   2. bench_etw_callback.exe (same build, under Wine) on the same trace: the callback's cost
#      per event (push: into a queue nobody pops during the pass, the producer's own cost;
#      callback: with a thread popping as the model thread does);
#   3. the native `perch import` (linux build) of the same trace, best wall-clock time, for the
#      cost of Wine itself.
# Then the ratios: live rate / offline rate, callback ns per event / offline import ns per
# event (both under Wine), and Wine's offline rate / the native one. Prints the load average
# before and after: run it on a quiet machine (the figures mean nothing on a loaded one).
#
# Usage: tests/win/run-bench-live.sh [TRACE.etl] [RUNS]
#   default trace: $PERCH_DATA_DIR/etl/perfview_net.4.5.2.x64.etl (../shared/data), RUNS 5.
# Needs the linux and mingw presets configured once (cmake --preset linux; cmake --preset
# mingw); builds the three targets it runs. Uses the Wine prefix build/wine (recreated).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
data="${PERCH_DATA_DIR:-$root/../shared/data}"
trace="${1:-$data/etl/perfview_net.4.5.2.x64.etl}"
runs="${2:-5}"
trace=$(cd "$(dirname "$trace")" && pwd)/$(basename "$trace")
cd "$root"
cmake --build --preset mingw -j2 --target bench_live bench_etw_callback >/dev/null
cmake --build --preset linux -j2 --target perch >/dev/null
. tools/wine.sh
perch_wine_start "$root" >/dev/null
tmp=$(mktemp -d "${TMPDIR:-/tmp}/perch-bench-live.XXXXXX")
trap 'perch_wine_stop; rm -rf "$tmp"' EXIT INT TERM

echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "== bench_live (Wine, mingw build): offline import and live path, best of $runs each"
wine build/mingw/tests/bench_live.exe "$trace" "$runs" | tee "$tmp/live.txt"
echo "== bench_etw_callback (Wine, mingw build), same trace"
wine build/mingw/tests/bench_etw_callback.exe --trace "$trace" --passes "$runs" |
    tee "$tmp/cb.txt"
echo "== native perch import (linux build), same trace, best of $runs"
best=""
for _ in $(seq "$runs"); do
    t0=$(date +%s%N)
    build/linux/tools/perch import "$trace" -o "$tmp/native.perch" >/dev/null 2>&1
    t1=$(date +%s%N)
    dt=$((t1 - t0))
    if [ -z "$best" ] || [ "$dt" -lt "$best" ]; then best=$dt; fi
done
records=$(awk '/^trace:/ {print $(NF-7)}' "$tmp/live.txt" | tr -d ,)
echo "native import: $(awk -v ns="$best" 'BEGIN {printf "%.3f", ns / 1e9}') s" \
    "$(awk -v n="$records" -v ns="$best" 'BEGIN {printf "%.0f", n / (ns / 1e9)}') events/s"
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

off=$(awk '/^offline import:/ {print $5}' "$tmp/live.txt")
live=$(awk '/^live \(fake ETW\):/ {print $6}' "$tmp/live.txt")
push=$(awk '$1 == "push" {print $2}' "$tmp/cb.txt")
cb=$(awk '$1 == "callback" {print $2}' "$tmp/cb.txt")
echo "== ratios (one run, $trace)"
awk -v off="$off" -v live="$live" -v push="$push" -v cb="$cb" -v n="$records" -v ns="$best" '
BEGIN {
    off_ns = 1e9 / off
    printf "offline import under Wine: %.1f ns/event\n", off_ns
    printf "live / offline rate (Wine):                      %.2f\n", live / off
    printf "callback push ns / offline import ns per event:  %.3f (%.1f ns)\n", push / off_ns, push
    printf "callback+pop ns / offline import ns per event:   %.3f (%.1f ns)\n", cb / off_ns, cb
    printf "offline rate Wine / native:                      %.2f\n", off / (n / (ns / 1e9))
}'
