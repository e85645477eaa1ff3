# shellcheck shell=bash
# Wine for Perch's Windows tests and demo; source this file, do not run it.
#
# Everything runs in one private, non-interactive 64-bit prefix under build/wine (no Mono or
# Gecko dialogs, no debug chatter). perch_wine_start creates the prefix afresh once per run and
# keeps one persistent wineserver with Wine's background services already up, so each test
# program starts in a fraction of a second and no test inherits a long-lived service process
# (which would hold ctest's output pipe open). perch_wine_stop ends that wineserver only.
# The wineserver and Wine's services outlive the command that started them, so they are
# started with every descriptor above 2 closed: one started under `flock LOCK cmd` would
# otherwise inherit the lock and hold it for as long as it lives.

# Runs a command with the descriptors above 2 closed (a subshell closes them, then execs).
perch__without_inherited_fds() {
    (
        fd=3
        while [ "$fd" -lt 256 ]; do
            eval "exec $fd>&-" 2>/dev/null
            fd=$((fd + 1))
        done
        exec "$@"
    )
}

perch_wine_env() {
    local root="$1"
    export WINEPREFIX="$root/build/wine"
    export WINEARCH=win64
    export WINEDEBUG=-all
    export WINEDLLOVERRIDES="mscoree,mshtml="
}

perch_wine_start() {
    perch_wine_env "$1"
    if [ -d "$WINEPREFIX" ]; then
        wineserver -k >/dev/null 2>&1 || true
    fi
    rm -rf "$WINEPREFIX"
    mkdir -p "$(dirname "$WINEPREFIX")"
    echo "[wine] creating prefix $WINEPREFIX"
    perch__without_inherited_fds wineboot --init </dev/null >/dev/null 2>&1
    wineserver -w
    perch__without_inherited_fds wineserver -p </dev/null >/dev/null 2>&1
    perch__without_inherited_fds wineboot </dev/null >/dev/null 2>&1
}

perch_wine_stop() {
    if [ -n "${WINEPREFIX:-}" ] && [ -d "$WINEPREFIX" ]; then
        wineserver -k >/dev/null 2>&1 || true
    fi
}
