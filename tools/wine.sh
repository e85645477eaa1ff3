# shellcheck shell=bash
# Wine for Perch's Windows tests and demo; source this file, do not run it.
#
# Everything runs in one private, non-interactive 64-bit prefix under build/wine (no Mono or
# Gecko dialogs, no debug chatter). perch_wine_start creates the prefix afresh once per run and
# keeps one persistent wineserver with Wine's background services already up, so each test
# program starts in a fraction of a second and no test inherits a long-lived service process
# (which would hold ctest's output pipe open). perch_wine_stop ends that wineserver only.

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
    wineboot --init </dev/null >/dev/null 2>&1
    wineserver -w
    wineserver -p </dev/null >/dev/null 2>&1
    wineboot </dev/null >/dev/null 2>&1
}

perch_wine_stop() {
    if [ -n "${WINEPREFIX:-}" ] && [ -d "$WINEPREFIX" ]; then
        wineserver -k >/dev/null 2>&1 || true
    fi
}
