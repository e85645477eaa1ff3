#!/usr/bin/env bash
# Builds a large PE+PDB pair for the symbol benchmarks (never committed): generated C files,
# each with many functions full of locals and a struct type, compiled by clang with CodeView
# debug information and linked by lld. The PDB grows by about 2.2 KB per function.(about 2.2 KB).
#
# Usage: gen-big-pdb.sh OUT_DIR [TARGET_MB] [CLANG]   (default 100 MB)
# Writes OUT_DIR/big.exe and OUT_DIR/big.pdb; does nothing when a big.pdb of at least the
# target size is already there.
set -euo pipefail

OUT="$1"
TARGET_MB="${2:-100}"
CLANG="${3:-clang}"
PER_FILE=500
mkdir -p "$OUT"
if [ -f "$OUT/big.pdb" ] && [ "$(stat -c %s "$OUT/big.pdb")" -ge $((TARGET_MB * 1000000)) ]; then
    echo "gen-big-pdb: $OUT/big.pdb is already $(($(stat -c %s "$OUT/big.pdb") / 1000000)) MB"
    exit 0
fi
FILES=$(((TARGET_MB * 1000000 / 2200 + PER_FILE - 1) / PER_FILE))
echo "gen-big-pdb: $FILES files x $PER_FILE functions for about $TARGET_MB MB of PDB"
cd "$OUT"
rm -f gen_*.c gen_*.o
for ((f = 0; f < FILES; f++)); do
    awk -v f="$f" -v n="$PER_FILE" 'BEGIN {
        printf "struct s%d { int a; long b; double c; char d[8]; };\n", f
        for (i = 0; i < n; i++) {
            printf "int f%d_%d(int x)\n{\n", f, i
            for (k = 0; k < 48; k++)
                printf "    volatile int v%d = x + %d;\n", k, k
            printf "    struct s%d st = {x, %d, 1.0, {0}};\n    return st.a", f, i
            for (k = 0; k < 48; k += 6)
                printf " + v%d", k
            printf ";\n}\n"
        }
    }' >"gen_$f.c"
done
echo 'void entry(void) {}' >gen_main.c
ls gen_*.c | xargs -P 2 -I{} "$CLANG" --target=x86_64-w64-mingw32 -g -gcodeview -O0 \
    -fdebug-compilation-dir=. -c {} -o {}.o
"$CLANG" --target=x86_64-w64-mingw32 -fuse-ld=lld -nostdlib -Wl,-e,entry \
    -Wl,--no-insert-timestamp -Wl,--pdb=big.pdb gen_*.o -o big.exe
rm -f gen_*.c gen_*.o
echo "gen-big-pdb: $OUT/big.pdb: $(($(stat -c %s big.pdb) / 1000000)) MB"
