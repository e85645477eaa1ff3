#!/bin/sh
# Runs the symbol benchmark (tests/bench/bench_sym.c) from the linux preset build on a large
# PDB that gen-big-pdb.sh builds once into build/bench-sym (default 100 MB; not committed).
# Usage: tests/bench/run-sym.sh [target_mb]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$root/build/linux"
out="$root/build/bench-sym"
if [ ! -x "$build/tests/bench/bench_sym" ]; then
    cmake --preset linux >/dev/null
    cmake --build --preset linux -j2 --target bench_sym >/dev/null
fi
"$root/tests/bench/gen-big-pdb.sh" "$out" "${1:-100}"
exec "$build/tests/bench/bench_sym" "$out/big.pdb" "$out/big.exe"
