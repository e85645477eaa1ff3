#!/usr/bin/env bash
# The performance table of issue 12 in one run: every figure is a whole-process median of RUNS
# runs (elapsed time; peak RSS and, for the large imports and the exports, user and system CPU
# time from /usr/bin/time), next to its floor, cat of the same bytes measured in the same run,
# and next to snail-server when SNAIL_BENCH names a driver for it.
#
#   tests/bench/run-bench.sh            # Perch alone beside cat
#   SNAIL_BENCH=/path/to/snail-driver RUNS=7 SIZES="512M 2G" tests/bench/run-bench.sh
#
# Inputs: the real x64 PerfView trace (XPRESS-compressed) from PERCH_DATA_DIR, and synthetic
# traces written by `perch synth --seed 1 --size S` for each S in SIZES (default "512M 2G")
# into BENCH_TMP (default: a temporary folder, deleted at exit). The first size is "the" size
# for the stage, dump, report and export rows; the last one also gives the linearity row.
#
# Perch's stages are measured on one thread (PERCH_THREADS=1), each process doing one stage
# more than the one before (tests/bench/bench_stages.c): read, + decode, + model, + capture
# writer (perch import), so their ratios to cat add up to the one-thread import; the default
# import follows (one thread reads ahead of the model and plays the capture writer behind it).
# perch import does not fsync (unless --sync), so no row waits on the disk. The snail driver is built outside this repository (never commit
# its code; see issue 12 for how) and must answer:
#   $SNAIL_BENCH pass FILE      a bare etl_file::process pass over FILE
#   $SNAIL_BENCH analyze FILE   etl_data_provider::process + analyze_stacks
# Timings mean little on a shared machine: the load average is printed with the table, and the
# host's speed (bench_stages host, a chain of dependent additions, in the rounds of the large
# import and of the exports: on a VM the host can run a vCPU at half speed one minute and full
# speed the next). Beside each large import and export, the least wall time its CPU time
# allows with every CPU busy: a figure above it was lost to waiting, one near it needs less CPU.
#
# Build: gcc -O3, as issue 12 states: CMAKE_BUILD_TYPE=Release (-O3 -DNDEBUG, no assert in the
# code) in build/bench, a build folder of its own (BENCH_BUILD_TYPE=RelWithDebInfo gives the
# linux preset's -O2 -g instead; the flags used are printed with the table).
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
btype="${BENCH_BUILD_TYPE:-Release}"
build="$root/build/bench-$btype"
data="${PERCH_DATA_DIR:-$root/../shared/data}"
runs="${RUNS:-5}"
# The x64 rows last tens of milliseconds, where this VM's noise is widest: they take more runs
# (X64_RUNS, default five times RUNS, at least 15), which cost a few seconds in all.
x64_runs="${X64_RUNS:-$((runs * 5 > 15 ? runs * 5 : 15))}"
sizes=(${SIZES:-512M 2G})
snail="${SNAIL_BENCH:-}"
x64="$data/etl/perfview_net.4.5.2.x64.etl"

cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE="$btype" -DCMAKE_C_COMPILER=gcc >/dev/null
cmake --build "$build" -j2 --target perch bench_stages >/dev/null
cflags="$(gcc --version | head -1), $btype: $(sed -n "s/^CMAKE_C_FLAGS_${btype^^}:STRING=//p" "$build/CMakeCache.txt")"
perch="$build/tools/perch"
stages="$build/tests/bench/bench_stages"
tmp="${BENCH_TMP:-}"
if [ -z "$tmp" ]; then
    tmp=$(mktemp -d "${TMPDIR:-/tmp}/perch-bench.XXXXXX")
    trap 'rm -rf "$tmp"' EXIT INT TERM
fi
[ -f "$x64" ] || { echo "run-bench: $x64 not found (set PERCH_DATA_DIR)" >&2; exit 1; }

# run_once NAME CMD...: runs CMD once (output discarded) and appends its elapsed seconds (bash's
# microsecond clock), peak RSS (KiB) and user and system CPU seconds (/usr/bin/time) to
# SECS[NAME], RSS[NAME], USR[NAME] and SYS[NAME]. A failing command stops the script. The
# file CMD writes (its -o argument) is deleted and the disk synced first, outside the timed
# part: opening the previous round's output with truncation would time the file system
# freeing it (about 0.5 ms of the x64 import). The file in $warm, the input of the rows that
# run, is read first, also untimed: issue 12 measures with the page cache warm, and this VM's
# DAMON pages out cache it takes for idle, as a file read in bursts seconds apart can be (run
# 21's cat of the 512 MB trace took 161 ms instead of 66-88; docs/import.md#bench).
# settle NAME...: T[NAME] (median seconds), M[NAME] (median MiB), U[NAME] and K[NAME] (median
# user and system CPU seconds).
declare -A T M U K SECS RSS USR SYS
warm=""
median() { sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
# drop_output CMD...: deletes the regular file after CMD's -o, if any, and syncs.
drop_output() {
    while [ $# -gt 1 ]; do
        if [ "$1" = -o ]; then
            if [ -f "$2" ]; then
                rm -f -- "$2"
                sync
            fi
            return
        fi
        shift
    done
}
run_once() {
    local name="$1" t0 t1 rss usr sys
    shift
    drop_output "$@"
    [ -z "$warm" ] || cat -- "$warm" >/dev/null
    t0=$EPOCHREALTIME
    /usr/bin/time -f "%M %U %S" -o "$tmp/time" "$@" >/dev/null 2>"$tmp/err" ||
        { echo "run-bench: '$*' failed:" >&2; cat "$tmp/err" >&2; exit 1; }
    t1=$EPOCHREALTIME
    SECS[$name]+="$(awk -v a="$t0" -v b="$t1" 'BEGIN { print b - a }') "
    read -r rss usr sys <"$tmp/time"
    RSS[$name]+="$rss "
    USR[$name]+="$usr "
    SYS[$name]+="$sys "
}
settle() {
    local name
    for name in "$@"; do
        T[$name]=$(printf '%s\n' ${SECS[$name]} | median)
        M[$name]=$(printf '%s\n' ${RSS[$name]} | median | awk '{ printf "%.1f", $1 / 1024 }')
        U[$name]=$(printf '%s\n' ${USR[$name]} | median)
        K[$name]=$(printf '%s\n' ${SYS[$name]} | median)
    done
}
# job NAME CMD...: one "NAME|CMD" word for rounds (CMD quoted for eval).
job() {
    local name="$1"
    shift
    printf '%s|%s' "$name" "$(printf '%q ' "$@")"
}
# rounds N JOB...: N rounds, each running every job's command once, in turn: a change of this
# VM's speed while the rows run (it swung by 2x within minutes) falls on all of them alike,
# so their ratios hold. Then the medians.
rounds() {
    local n="$1" i j
    shift
    for ((i = 0; i < n; i++)); do
        for j in "$@"; do eval "run_once ${j%%|*} ${j#*|}"; done
    done
    for j in "$@"; do settle "${j%%|*}"; done
}
# measure NAME CMD...: RUNS runs of one command.
measure() { rounds "$runs" "$(job "$@")"; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
ms() { awk -v a="$1" 'BEGIN { printf "%.0f ms", a * 1000 }'; }
# cpu NAME: the median CPU times of NAME's runs, "user U s, sys S s" (/usr/bin/time's 10 ms),
# and the least wall time that CPU time allows on this machine's CPUs, all of them busy.
ncpu=$(nproc)
cpu() {
    awk -v u="${U[$1]}" -v k="${K[$1]}" -v n="$ncpu" \
        'BEGIN { printf "user %s s, sys %s s; on %d CPUs at least %.0f ms", u, k, n, (u + k) / n * 1000 }'
}
# host NAME: the host's speed in the rounds of NAME, bench_stages host's additions a second.
host() { awk -v t="${T[host.$1]}" 'BEGIN { printf "%.2f G", 0.4 / t }'; }
dms() { awk -v a="$1" 'BEGIN { printf "%+.0f ms", a * 1000 }'; }
dratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%+.2f", a / b; else print "-" }'; }
row() { printf '| %s | %s | %s | %s | %s |\n' "$@"; }

# The inputs.
for s in "${sizes[@]}"; do
    [ -f "$tmp/synth-$s.etl" ] || "$perch" synth -o "$tmp/synth-$s.etl" --seed 1 --size "$s" >/dev/null
done
first="${sizes[0]}"
last="${sizes[${#sizes[@]}-1]}"
inputs=("x64:$x64")
for s in "${sizes[@]}"; do inputs+=("$s:$tmp/synth-$s.etl"); done

# The rows of one input run in rounds (cat, imports, stages, snail), X64_RUNS of them for x64.
for in in "${inputs[@]}"; do
    name="${in%%:*}" file="${in#*:}"
    warm="$file"
    js=("$(job "cat.$name" cat "$file")"
        "$(job "import.$name" "$perch" import "$file" -o "$tmp/$name.perch")")
    if [ "$name" = x64 ] || [ "$name" = "$first" ]; then
        js+=("$(job "read.$name" "$stages" read "$file")"
             "$(job "decode.$name" "$stages" decode "$file")"
             "$(job "model.$name" "$stages" model "$file")"
             "$(job "import1.$name" env PERCH_THREADS=1 "$perch" import "$file" -o "$tmp/$name.perch")")
        if [ "$name" = "$first" ]; then
            js+=("$(job "dump.$first" "$perch" dump --summary "$file")"
                 "$(job "host.import" "$stages" host)")
        fi
        if [ -n "$snail" ]; then
            js+=("$(job "snail_pass.$name" "$snail" pass "$file")"
                 "$(job "snail_analyze.$name" "$snail" analyze "$file")")
        fi
    fi
    rounds "$([ "$name" = x64 ] && echo "$x64_runs" || echo "$runs")" "${js[@]}"
done
for s in "${sizes[@]}"; do
    warm="$tmp/synth-$s.etl"
    measure "report.$s" "$perch" report --json "$tmp/synth-$s.etl"
done
cap="$tmp/$first.perch"
warm="$cap"
js=("$(job cat_cap cat "$cap")"
    "$(job replay_cap "$perch" info "$cap")" # every chunk read and decoded: the exports' floor
    "$(job host.export "$stages" host)")
for fmt in chrome gecko pprof; do
    js+=("$(job "export.$fmt" "$perch" export --format "$fmt" -o "$tmp/out.$fmt" "$cap")")
done
rounds "$runs" "${js[@]}"
# The decoder's row is the run with the median rate of $runs (one run swung 0.66-1.21 GB/s here).
xpress=$(for _ in $(seq "$runs"); do "$stages" xpress "$x64" 512; done |
    awk '{print $2, $0}' | sort -g | awk '{a[NR]=$0} END {print a[int((NR+1)/2)]}' | cut -d' ' -f2-)

echo
echo "Perch performance, $(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg)"
echo "(medians of $runs whole-process runs, $x64_runs for the x64 rows; ratios are to cat of the same bytes in this run)"
echo "(built with $cflags)"
echo "(host speed, dependent additions a second, the median of the rounds: $(host import) in the" \
    "$first trace's, $(host export) in the exports'; one a cycle, so the core's clock as seen here)"
echo
row "figure" "Perch" "× cat" "snail-server" "Perch / snail"
row "---" "---" "---" "---" "---"
for in in "${inputs[@]}"; do
    name="${in%%:*}"
    sn="-" sr="-"
    if [ -n "$snail" ] && [ -n "${T[snail_analyze.$name]:-}" ]; then
        sn="analysis $(ms "${T[snail_analyze.$name]}")"
        sr=$(ratio "${T[import.$name]}" "${T[snail_analyze.$name]}")
    fi
    fig="$(ms "${T[import.$name]}")"
    [ "$name" = x64 ] || fig+=" ($(cpu "import.$name"))"
    row "import $name (default: two threads, reader+writer and model)" "$fig" \
        "$(ratio "${T[import.$name]}" "${T[cat.$name]}")" "$sn" "$sr"
    if [ -n "${T[read.$name]:-}" ]; then
        prev=0
        for st in read decode model import1; do
            d=$(awk -v a="${T[$st.$name]}" -v b="$prev" 'BEGIN { print a - b }')
            label=$([ "$st" = import1 ] && echo "capture writer" || echo "$st")
            row "  stage $label ($name, 1 thread)" "$(dms "$d")" \
                "$(dratio "$d" "${T[cat.$name]}")" "" ""
            prev="${T[$st.$name]}"
        done
        row "  = import $name, 1 thread" "$(ms "${T[import1.$name]}")" \
            "$(ratio "${T[import1.$name]}" "${T[cat.$name]}")" "" ""
    fi
done
if [ "$first" != "$last" ]; then
    # per_byte A B: A / B (the last size's figure over the first's) per byte of trace.
    size_ratio=$(awk -v a="$(stat -c %s "$tmp/synth-$last.etl")" \
        -v b="$(stat -c %s "$tmp/synth-$first.etl")" 'BEGIN { printf "%.9g", a / b }')
    per_byte() { awk -v a="$1" -v b="$2" -v r="$size_ratio" \
        'BEGIN { if (b > 0 && r > 0) printf "%.2f", (a / b) / r; else print "-" }'; }
    row "import $last / import $first per byte (1.00 = linear)" \
        "$(per_byte "${T[import.$last]}" "${T[import.$first]}")" "" "" ""
    # The same in user CPU time: system time on this VM moves with the host's first touch of
    # memory the guest reused (docs/import.md#bench), which user time does not see.
    row "  the same in user CPU time" "$(per_byte "${U[import.$last]}" "${U[import.$first]}")" \
        "" "" ""
fi
sp="-" spr="-"
if [ -n "$snail" ]; then
    sp="bare pass $(ms "${T[snail_pass.$first]}")"
    spr=$(ratio "${T[dump.$first]}" "${T[snail_pass.$first]}")
fi
row "dump --summary $first" "$(ms "${T[dump.$first]}")" \
    "$(ratio "${T[dump.$first]}" "${T[cat.$first]}")" "$sp" "$spr"
for s in "${sizes[@]}"; do
    sn="-" sr="-"
    if [ -n "${M[snail_analyze.$s]:-}" ]; then
        sn="analysis peak RSS ${M[snail_analyze.$s]} MiB"
        sr=$(ratio "${M[report.$s]}" "${M[snail_analyze.$s]}")
    fi
    row "report --json $s peak RSS" "${M[report.$s]} MiB" "" "$sn" "$sr"
done
row "XPRESS decoder alone (x64 buffers, CPU time, median of $runs)" "${xpress#xpress }" "" "" ""
row "  floor: perch info of the $first capture (a replay of every chunk)" \
    "$(ms "${T[replay_cap]}")" "$(ratio "${T[replay_cap]}" "${T[cat_cap]}")" "" ""
for fmt in chrome gecko pprof; do
    row "export $fmt of the $first capture (RSS ${M[export.$fmt]} MiB)" \
        "$(ms "${T[export.$fmt]}") ($(cpu "export.$fmt"))" \
        "$(ratio "${T[export.$fmt]}" "${T[cat_cap]}")" "" ""
done
