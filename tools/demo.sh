#!/usr/bin/env bash
# The newcomer's first command: installs what Perch needs (apt-get), builds the native
# (preset linux) and Windows (preset mingw) programs, then shows Perch doing its job with each.
#
# The job itself lives in demo_steps below, run once natively and once under Wine; change only
# that function as Perch grows (for example: make a synthetic trace, import, report, export).
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

# demo_steps <perch command...>: what Perch does on sample data, for one build.
demo_steps() {
    step "which Perch this is" "$@" --version
    step "what it can do" "$@" --help
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
demo_steps "$ROOT/build/linux/tools/perch"

trap perch_wine_stop EXIT
perch_wine_start "$ROOT"
echo
echo "== Perch for Windows, run under Wine (build/mingw)"
demo_steps wine "$ROOT/build/mingw/tools/perch.exe"
step "the Windows service (not implemented yet)" wine "$ROOT/build/mingw/tools/perchd.exe" --version
echo
echo "demo: done"
