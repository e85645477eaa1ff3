#!/usr/bin/env bash
# Fuzz campaign: runs every libFuzzer target of a PERCH_FUZZ build (the asan preset), one at a
# time, for a number of executions or a wall-time limit per target, and writes one Markdown
# table row per target: executions, exec/s, libFuzzer's final coverage (cov, ft), corpus size
# and crashes.
#
# The targets are listed from the build (ctest's fuzz label), so a target someone adds later
# with perch_add_fuzzer is in the campaign with no edit here; each runs with the seed
# directories and options of its ctest command. Targets whose seeds hold .etl files also get
# a few small synthetic traces (written with the build's own `perch synth`) and the first
# buffers of every seed trace (cut copies under the build directory), and run with a smaller
# -max_len (--etl-max-len): an execution then reads a few buffers, not a whole 1 MiB trace. The corpus each
# target grows lives under the build directory (<build>/fuzz-campaign/corpus/<target>) and is
# kept from one campaign to the next; nothing here writes into the source tree. Crash, leak,
# timeout and out-of-memory reproducers land in <build>/fuzz-campaign/artifacts/.
#
# The binaries are copied first, so rebuilding the preset during a campaign does not change
# what runs. Run it niced and outside the team's test lock; it uses one core.
#
# usage: tests/fuzz/campaign.sh [--build DIR] [--runs N] [--seconds S] [--only REGEX]
#                               [--out FILE]
#   --build DIR   the PERCH_FUZZ build (default build/asan)
#   --runs N      executions per target (default 10000000)
#   --seconds S   wall-time limit per target (default 600), whichever comes first
#   --only REGEX  only the targets whose ctest name (fuzz.<name>) matches
#   --etl-max-len N  -max_len of the targets seeded with .etl files (default 131072)
#   --out FILE    the table (default <build>/fuzz-campaign/table.md)
# Exit status: 0 when no target crashed, 1 when one did, 2 on a usage or setup error.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/../.." && pwd)"
BUILD="$ROOT/build/asan"
RUNS=10000000
SECONDS_MAX=600
ONLY=""
OUT=""
ETL_MAX_LEN=131072

usage() { sed -n '/^# usage:/,/^# Exit status/p' "$0" | sed 's/^# \{0,1\}//'; }
while [ $# -gt 0 ]; do
    case "$1" in
    --build) BUILD="$(cd "$2" && pwd)"; shift 2 ;;
    --runs) RUNS="$2"; shift 2 ;;
    --seconds) SECONDS_MAX="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --etl-max-len) ETL_MAX_LEN="$2"; shift 2 ;;
    --out) OUT="$2"; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "campaign: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
    esac
done
case "$RUNS$SECONDS_MAX$ETL_MAX_LEN" in
*[!0-9]*) echo "campaign: --runs, --seconds and --etl-max-len take numbers" >&2; exit 2 ;;
esac

WORK="$BUILD/fuzz-campaign"
OUT="${OUT:-$WORK/table.md}"
mkdir -p "$WORK/bin" "$WORK/corpus" "$WORK/artifacts" "$WORK/logs" "$WORK/synth" "$WORK/cuts"

# One line per target: name, then the ctest command as tab-separated words.
targets="$(ctest --test-dir "$BUILD" -L '^fuzz$' --show-only=json-v1 2>/dev/null |
    jq -r '.tests[] | [.name] + .command | @tsv')"
if [ -z "$targets" ]; then
    echo "campaign: no fuzz targets in $BUILD (configure it with PERCH_FUZZ=ON: the asan preset)" >&2
    exit 2
fi

synth_seeds() {
    local perch="$BUILD/tools/perch"
    [ -x "$perch" ] || return 0
    [ -s "$WORK/synth/synth_1cpu.etl" ] ||
        "$perch" synth -o "$WORK/synth/synth_1cpu.etl" --seed 1 --cpus 1 --duration-ms 20 >/dev/null
    [ -s "$WORK/synth/synth_2cpu.etl" ] ||
        "$perch" synth -o "$WORK/synth/synth_2cpu.etl" --seed 2 --cpus 2 --duration-ms 40 >/dev/null
}

# cut_seeds <dir>: the first 64 KiB and 128 KiB of every .etl in dir (a trace's header buffer
# and its first event buffers), for the targets that run with the smaller -max_len.
cut_seeds() {
    local f base
    for f in "$1"/*.etl; do
        base="$(basename "$f" .etl)"
        [ -s "$WORK/cuts/$base.64k.etl" ] || head -c 65536 "$f" >"$WORK/cuts/$base.64k.etl"
        [ -s "$WORK/cuts/$base.128k.etl" ] || head -c 131072 "$f" >"$WORK/cuts/$base.128k.etl"
    done
}

# field <log> <name>: a "name: value" field of libFuzzer's last status line (DONE, or the
# last one printed before a crash).
field() {
    grep -E '^#[0-9]+' "$1" | tail -n 1 | sed -n "s/.* $2: \([^ ]*\).*/\1/p"
}

stat_value() { sed -n "s/^stat::$2: *//p" "$1" | tail -n 1; }

{
    echo "Fuzz campaign, $(date -u '+%Y-%m-%d %H:%M UTC') on $(nproc) cores, load average at start: $(cut -d' ' -f1-3 /proc/loadavg)"
    echo
    echo "Command: \`tests/fuzz/campaign.sh --runs $RUNS --seconds $SECONDS_MAX --etl-max-len $ETL_MAX_LEN${ONLY:+ --only '$ONLY'}\` (build: ${BUILD#"$ROOT"/}, source $(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown))"
    echo
    echo "| target | executions | wall s | exec/s | cov | ft | corpus (units / bytes) | crashes |"
    echo "|---|---:|---:|---:|---:|---:|---|---|"
} >"$OUT"

# Snapshot every binary before the first run.
while IFS=$'\t' read -r name bin args; do
    [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]] && continue
    cp -f "$bin" "$WORK/bin/"
done <<<"$targets"

crashed=0
while IFS=$'\t' read -r name bin args; do
    [ -n "$ONLY" ] && ! [[ "$name" =~ $ONLY ]] && continue
    short="${name#fuzz.}"
    exe="$WORK/bin/$(basename "$bin")"
    opts=() dirs=("$WORK/corpus/$short")
    mkdir -p "$WORK/corpus/$short"
    IFS=$'\t' read -r -a words <<<"$args"
    for w in "${words[@]}"; do
        case "$w" in
        -max_total_time=* | -runs=*) ;;
        -*) opts+=("$w") ;;
        *) [ -d "$w" ] && dirs+=("$w") ;;
        esac
    done
    etl_seeded=0
    for d in "${dirs[@]:1}"; do
        if compgen -G "$d/*.etl" >/dev/null; then
            etl_seeded=1
            cut_seeds "$d"
        fi
    done
    if [ "$etl_seeded" -eq 1 ]; then
        synth_seeds
        dirs+=("$WORK/synth" "$WORK/cuts")
        opts=("${opts[@]/#-max_len=*/-max_len=$ETL_MAX_LEN}")
    fi
    log="$WORK/logs/$short.log"
    before="$(find "$WORK/artifacts" -name "$short-*" | sort)"
    start="$(date +%s)"
    echo "[campaign] $short: up to $RUNS runs or ${SECONDS_MAX}s ($(date -u +%H:%M:%S))" >&2
    rc=0
    timeout -k 30 $((SECONDS_MAX + 300)) "$exe" -runs="$RUNS" -max_total_time="$SECONDS_MAX" \
        -print_final_stats=1 -artifact_prefix="$WORK/artifacts/$short-" "${opts[@]}" \
        "${dirs[@]}" >"$log" 2>&1 || rc=$?
    wall=$(($(date +%s) - start))
    new="$(comm -13 <(echo "$before") <(find "$WORK/artifacts" -name "$short-*" | sort) |
        xargs -r -n1 basename | tr '\n' ' ')"
    execs="$(stat_value "$log" number_of_executed_units)"
    execs="${execs:-$(grep -E '^#[0-9]+' "$log" | tail -n 1 | sed 's/^#\([0-9]*\).*/\1/')}"
    eps="$(stat_value "$log" average_exec_per_sec)"
    eps="${eps:-$(field "$log" exec/s)}"
    corp="$(field "$log" corp)"
    # libFuzzer keeps inputs slower than -report_slow_units (10 s) as slow-unit-*: noted,
    # not a crash (on a loaded machine they say more about the load than the target).
    slow="$(echo "$new" | tr ' ' '\n' | grep -c -- '-slow-unit-' || true)"
    new="$(echo "$new" | tr ' ' '\n' | grep -v -- '-slow-unit-' | tr '\n' ' ' || true)"
    new="${new% }"
    crashes="none"
    if [ "$rc" -ne 0 ] || [ -n "$new" ]; then
        crashed=1
        crashes="exit $rc; reproducer: ${new:-none written} (log: ${log#"$ROOT"/})"
    fi
    [ "$slow" -gt 0 ] && crashes="$crashes ($slow slow unit(s) kept)"
    if [ "${execs:-0}" -lt "$RUNS" ] && [ "$rc" -eq 0 ]; then
        execs="${execs:-0} (wall-time limit, not $RUNS)"
    fi
    corp_units="${corp%%/*}"
    corp_bytes="${corp#*/}"
    echo "| $short | $execs | $wall | ${eps:-?} | $(field "$log" cov) | $(field "$log" ft) | ${corp_units:-?} / ${corp_bytes:-?} | $crashes |" >>"$OUT"
done <<<"$targets"

echo >>"$OUT"
echo "Load average at the end: $(cut -d' ' -f1-3 /proc/loadavg), $(date -u '+%H:%M UTC')." >>"$OUT"
cat "$OUT"
exit "$crashed"
