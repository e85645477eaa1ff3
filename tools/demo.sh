#!/usr/bin/env bash
# The newcomer's first command: installs what Perch needs (apt-get), builds the native
# (preset linux) and Windows (preset mingw) programs, then shows Perch doing its job with each.
#
# The job itself lives in demo_steps below, run once natively (outputs in build/demo) and once
# under Wine (build/demo/wine): make a synthetic trace, import it, describe, report, export.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
# shellcheck source=tools/wine.sh
. "$ROOT/tools/wine.sh"

JOBS="${PERCH_JOBS:-2}"

# step <description> <command...>: prints what runs, then runs it.
step() {
    local what="$1"
    shift
    printf '\n$ %s    # %s\n' "$*" "$what"
    "$@"
}

# demo_steps <output dir> <perch command...>: Perch's main job on a trace it makes itself:
# a synthetic kernel trace, imported into a capture, described, reported, exported.
demo_steps() {
    local out="$1"
    shift
    mkdir -p "$out"
    step "which Perch this is" "$@" --version
    step "make a synthetic NT kernel logger trace (made up, deterministic)" \
        "$@" synth -o "$out/demo.etl" --seed 1 --size 8M
    step "import it: .etl -> model -> compact capture" "$@" import "$out/demo.etl" -o "$out/demo.perch"
    step "what the capture holds" "$@" info "$out/demo.perch"
    step "where the CPU went" "$@" report --top 3 "$out/demo.perch"
    step "Chrome trace events: open in ui.perfetto.dev" \
        "$@" export -f chrome "$out/demo.perch" -o "$out/demo.chrome.json"
    step "Firefox Profiler: open in profiler.firefox.com" \
        "$@" export -f gecko "$out/demo.perch" -o "$out/demo.gecko.json"
    step "speedscope: open in speedscope.app" \
        "$@" export -f speedscope "$out/demo.perch" -o "$out/demo.speedscope.json"
    step "pprof: go tool pprof -top $out/demo.pb" "$@" export -f pprof "$out/demo.perch" -o "$out/demo.pb"
    step "folded stacks: flamegraph.pl $out/demo.folded > demo.svg" \
        "$@" export -f folded "$out/demo.perch" -o "$out/demo.folded"
    step "what was written" ls -l "$out"
}

build() {
    echo "== building preset $1"
    cmake --preset "$1" >/dev/null
    cmake --build --preset "$1" -j"$JOBS" >/dev/null
}

"$ROOT/tools/setup-deps.sh"
build linux
build mingw

echo
echo "== Perch on Linux (build/linux)"
demo_steps "$ROOT/build/demo" "$ROOT/build/linux/tools/perch"

trap perch_wine_stop EXIT
perch_wine_start "$ROOT"
echo
echo "== Perch for Windows, run under Wine (build/mingw)"
demo_steps "$ROOT/build/demo/wine" wine "$ROOT/build/mingw/tools/perch.exe"
step "the Windows service (its live session needs Windows; under Wine it runs against a test fake of ETW, docs/service.md)" wine "$ROOT/build/mingw/tools/perchd.exe" --version
echo
echo "demo: done"
