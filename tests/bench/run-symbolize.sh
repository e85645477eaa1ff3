#!/bin/sh
# Symbolize benchmark: a capture with 1 M timer samples over 20 modules (20 distinct PE+PDB
# pairs that gen-big-pdb.sh builds once into build/bench-sym/mods, about 1 MB of PDB each;
# not committed), written by sym_capture; times `perch report` of it, `perch symbolize` of it
# (every module's PDB found on the symbol path, loaded and searched) and `perch report` of
# the named capture, side by side. Best of three rounds each (the machine is shared).
# Usage: tests/bench/run-symbolize.sh [samples] [modules]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
build="$root/build/linux"
out="$root/build/bench-sym"
samples="${1:-1000000}"
modules="${2:-20}"
cmake --preset linux >/dev/null
cmake --build --preset linux -j2 --target perch sym_capture >/dev/null
args=""
i=1
while [ "$i" -le "$modules" ]; do
    "$root/tests/bench/gen-big-pdb.sh" "$out/mods" 1 clang "mod$i" >/dev/null
    args="$args --module $out/mods/mod$i.exe --spread 200"
    i=$((i + 1))
done
cap="$out/bench.perch"
# shellcheck disable=SC2086
"$build/tests/fixtures/sym/sym_capture" "$cap" --samples "$samples" --processes 4 $args
now() { date +%s.%N; }
best() { # best <command...>: prints the best wall time of three runs
    b=""
    for _ in 1 2 3; do
        t0=$(now)
        "$@" >/dev/null
        t=$(awk -v a="$(now)" -v b="$t0" 'BEGIN { printf "%.6f", a - b }')
        if [ -z "$b" ] || awk -v t="$t" -v b="$b" 'BEGIN { exit !(t < b) }'; then b=$t; fi
    done
    echo "$b"
}
t_report=$(best "$build/tools/perch" report "$cap")
t_sym=$(best "$build/tools/perch" symbolize "$cap" --symbols "$out/mods" -o "$out/bench-named.perch")
t_named=$(best "$build/tools/perch" report "$out/bench-named.perch")
"$build/tools/perch" symbolize "$cap" --symbols "$out/mods" -o "$out/bench-named.perch" | tail -n 1
printf 'capture: %s samples over %s modules x 4 processes (%s bytes)\n' "$samples" "$modules" \
    "$(stat -c %s "$cap")"
printf '  perch report            %8.3f s\n' "$t_report"
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
printf '  perch symbolize         %8.3f s  = %sx report\n' "$t_sym" "$(ratio "$t_sym" "$t_report")"
printf '  perch report (named)    %8.3f s  = %sx report\n' "$t_named" "$(ratio "$t_named" "$t_report")"
