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

# live_steps <output dir>: perchd's live half under Wine. Wine's ETW records nothing, so
# perchd_fake (perchd linked with the test fake of the ETW calls, tests/win/etw_fake) replays a
# synthetic trace at its own speed through the real-time callback path, as Windows would
# deliver a kernel session; the pipe, the engine, the recorder and the commands are perchd's.
live_steps() {
    local out="$1"
    local -a perch=(wine "$ROOT/build/mingw/tools/perch.exe")
    local -a ctl=(wine "$ROOT/build/mingw/tests/win/etw_fake/perch_etw_fake_ctl.exe")
    rm -rf "$out"
    mkdir -p "$out"
    "${perch[@]}" synth -o "$(winepath -w "$out/live.etl")" --seed 2 --size 16M --cpus 2 >/dev/null
    "${ctl[@]}" reset
    "${ctl[@]}" set Replay "$(winepath -w "$out/live.etl")"
    "${ctl[@]}" set Pace 1 # the trace's own speed: about 20 s of events
    printf '\n$ perchd run ...    # perchd in this console, against the fake ETW\n'
    wine "$ROOT/build/mingw/tests/perchd_fake.exe" run --defaults \
        --data-dir "$(winepath -w "$out/data")" --capture-dir "$(winepath -w "$out/captures")" \
        --duration 120 >"$out/perchd.log" 2>&1 & # the duration: in case Ctrl+C is lost
    local perchd=$! waited=0
    # ready once its pipe answers (the status file says "running" a moment before the pipe is up)
    until "${perch[@]}" status >/dev/null 2>&1; do
        if [ "$waited" -ge 60 ] || ! kill -0 "$perchd" 2>/dev/null; then
            echo "demo: perchd did not start; its output:" >&2
            cat "$out/perchd.log" >&2
            return 1
        fi
        sleep 1
        waited=$((waited + 1))
    done
    step "what perchd is doing, over its pipe" "${perch[@]}" status
    step "the threads that used the most CPU over the last 5 s" "${perch[@]}" top --threads --limit 5
    step "record 3 seconds and copy the capture here" \
        "${perch[@]}" record --duration 3s -o "$(winepath -w "$out/recorded.perch")"
    step "where the CPU went in those 3 seconds" "${perch[@]}" report --top 3 "$(winepath -w "$out/recorded.perch")"
    step "the flight recorder's last 5 s as a capture" \
        "${perch[@]}" snapshot --last 5s -o "$(winepath -w "$out/snapshot.perch")"
    step "the captures perchd keeps" "${perch[@]}" captures
    printf '\n(Ctrl+C stops perchd: Wine turns SIGINT into the console event)\n'
    kill -INT "$perchd"
    if ! wait "$perchd"; then
        echo "demo: perchd failed; its output:" >&2
        cat "$out/perchd.log" >&2
        return 1
    fi
    tail -n 3 "$out/perchd.log"
    printf '(its whole log: %s)\n' "$out/perchd.log"
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
echo "== perchd's live half under Wine, against a fake of the ETW calls replaying a synthetic trace"
live_steps "$ROOT/build/demo/live"
echo
echo "demo: done"
