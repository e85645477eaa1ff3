#!/bin/sh
# Runs the .etl reader benchmark (tests/bench/bench_etl.c) from the linux preset build:
# the reader beside `cat` on the same >= 512 MB replicated images, and the XPRESS decoder.
# Usage: tests/bench/run-etl.sh [target_mb] [temp_dir]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$root/build/linux"
if [ ! -x "$build/tests/bench/bench_etl" ]; then
    cmake --preset linux >/dev/null
    cmake --build --preset linux -j2 --target bench_etl >/dev/null
fi
PERCH_DATA_DIR="${PERCH_DATA_DIR:-$root/../shared/data}" exec "$build/tests/bench/bench_etl" "$@"
