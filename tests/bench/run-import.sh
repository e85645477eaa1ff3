#!/bin/sh
# Runs the import/export benchmark (tests/bench/bench_import.c) from the linux preset build, in
# a temporary folder that is deleted afterwards (also on failure or Ctrl-C):
#   1. the real x64 PerfView trace imported N times (separate imports, default 20);
#   2. a 128 MB synthetic trace, then a 1 GB one (perch synth --size 1G): throughput, and peak
#      RSS of each process, which must stay under 64 MiB and flat in trace size;
#   3. the exports of a capture with about 1 million samples (perch synth --size 160M, imported).
# Usage: tests/bench/run-import.sh [big_size (default 1G)] [x64_repeats] [temp_parent_dir]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$root/build/linux"
big="${1:-1G}"
repeats="${2:-20}"
data="${PERCH_DATA_DIR:-$root/../shared/data}"
cmake --preset linux >/dev/null
cmake --build --preset linux -j2 --target bench_import perch >/dev/null
bench="$build/tests/bench/bench_import"
perch="$build/tools/perch"
tmp=$(mktemp -d "${3:-${TMPDIR:-/tmp}}/perch-bench-import.XXXXXX")
trap 'rm -rf "$tmp"' EXIT INT TERM

echo "== real trace, replicated by running $repeats imports"
"$bench" import "$data/etl/perfview_net.4.5.2.x64.etl" "$tmp/x64.perch" "$repeats"

echo "== exports of a ~1 M sample capture"
"$perch" synth -o "$tmp/s160.etl" --size 160M --seed 2 >/dev/null
"$perch" import "$tmp/s160.etl" -o "$tmp/s160.perch" >/dev/null
rm -f "$tmp/s160.etl"
"$bench" export "$tmp/s160.perch"
rm -f "$tmp/s160.perch"

echo "== synthetic 128M (for the RSS comparison)"
"$perch" synth -o "$tmp/s128.etl" --size 128M --seed 1 >/dev/null
"$bench" import "$tmp/s128.etl" "$tmp/s128.perch" 1
rm -f "$tmp/s128.etl" "$tmp/s128.perch"

echo "== synthetic $big"
"$perch" synth -o "$tmp/big.etl" --size "$big" --seed 1 >/dev/null
"$bench" import "$tmp/big.etl" "$tmp/big.perch" 1
