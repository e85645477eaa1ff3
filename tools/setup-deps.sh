#!/usr/bin/env bash
# Installs everything Perch needs to build and test on Debian 12 (lld and llvm build the
# symbol fixtures and are their reference: llvm-pdbutil, llvm-symbolizer), then builds the one
# dependency Debian does not package for mingw-w64: cmocka, from Debian's own source package,
# into build/deps/cmocka-mingw (static, outside the source tree, never committed).
#
# Then the viewer checks' tools: Debian's chromium (and Node.js with npm when the machine has
# none), and the npm packages pinned in tests/viewers/package-lock.json (npm ci into
# build/viewers, tests/viewers/install.sh).
#
# Safe to run again: packages already installed and a cmocka already built are left alone.
# Uses apt-get directly as root (CI) or through sudo otherwise.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
DEPS="$ROOT/build/deps"
CMOCKA_PREFIX="$DEPS/cmocka-mingw"
# Bump when the way cmocka is built changes, so existing build folders rebuild it.
CMOCKA_STAMP="$CMOCKA_PREFIX/perch-build-2"

PACKAGES=(
    cmake make gcc libc6-dev clang libclang-rt-14-dev libcmocka-dev
    mingw-w64 wine wine64
    lld llvm
    dpkg-dev xz-utils patch ca-certificates
    golang-go python3
    chromium
)
# Node.js: the machine's own when it has one (an image may ship a newer one than Debian's).
command -v node >/dev/null 2>&1 || PACKAGES+=(nodejs npm)

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    else
        sudo "$@"
    fi
}

log() { printf '[setup-deps] %s\n' "$*"; }

# run_logged <log file> <command...>: runs quietly, shows the log's end if the command fails.
run_logged() {
    local file="$1"
    shift
    if ! "$@" >"$file" 2>&1; then
        tail -n 40 "$file" >&2
        echo "setup-deps: failed: $* (full log: $file)" >&2
        exit 1
    fi
}

APT_UPDATED=0
apt_update_once() {
    if [ "$APT_UPDATED" -eq 0 ]; then
        log "apt-get update"
        as_root apt-get update -q
        APT_UPDATED=1
    fi
}

install_packages() {
    local missing=()
    for p in "${PACKAGES[@]}"; do
        if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
            missing+=("$p")
        fi
    done
    if [ "${#missing[@]}" -eq 0 ]; then
        log "all packages present"
        return
    fi
    apt_update_once
    log "installing: ${missing[*]}"
    as_root env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing[@]}"
}

# apt-get source needs a deb-src entry. Add one for the same mirror and suites the machine
# already uses for binary packages (deb822 debian.sources on Debian 12, or a classic list).
ensure_deb_src() {
    local dir=/etc/apt/sources.list.d target=/etc/apt/sources.list.d/perch-deb-src.sources
    if grep -Eqs '^(Types:.*deb-src|deb-src )' /etc/apt/sources.list "$dir"/*.sources \
        "$dir"/*.list; then
        return
    fi
    if [ -f "$dir/debian.sources" ]; then
        log "adding deb-src entries mirroring $dir/debian.sources"
        sed -E 's/^Types:.*/Types: deb-src/' "$dir/debian.sources" | as_root tee "$target" >/dev/null
    elif [ -f /etc/apt/sources.list ]; then
        log "adding deb-src entries mirroring /etc/apt/sources.list"
        sed -nE 's/^deb (.*)/deb-src \1/p' /etc/apt/sources.list |
            as_root tee /etc/apt/sources.list.d/perch-deb-src.list >/dev/null
    else
        echo "setup-deps: no apt source found to mirror for deb-src" >&2
        exit 1
    fi
    APT_UPDATED=0
}

build_cmocka_mingw() {
    if [ -f "$CMOCKA_STAMP" ] && [ -f "$CMOCKA_PREFIX/lib/libcmocka.a" ]; then
        log "cmocka for mingw already built in $CMOCKA_PREFIX"
        return
    fi
    ensure_deb_src
    apt_update_once
    rm -rf "$DEPS/src" "$DEPS/cmocka-build" "$CMOCKA_PREFIX"
    mkdir -p "$DEPS/src"
    log "fetching Debian's cmocka source package"
    (cd "$DEPS/src" && apt-get source -q cmocka)
    local srcdir
    srcdir="$(find "$DEPS/src" -mindepth 1 -maxdepth 1 -type d -name 'cmocka-*' | head -n 1)"
    if [ -z "$srcdir" ]; then
        echo "setup-deps: apt-get source cmocka produced no source tree" >&2
        exit 1
    fi
    log "building $(basename "$srcdir") for x86_64-w64-mingw32 (static)"
    run_logged "$DEPS/cmocka-configure.log" cmake -S "$srcdir" -B "$DEPS/cmocka-build" \
        -DCMAKE_TOOLCHAIN_FILE="$ROOT/cmake/mingw-w64-x86_64.cmake" \
        -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$CMOCKA_PREFIX" \
        -DCMAKE_C_FLAGS="-D__USE_MINGW_ANSI_STDIO=1" \
        -DBUILD_SHARED_LIBS=OFF -DWITH_STATIC_LIB=ON -DWITH_EXAMPLES=OFF \
        -DUNIT_TESTING=OFF -DPICKY_DEVELOPER=OFF
    run_logged "$DEPS/cmocka-build.log" cmake --build "$DEPS/cmocka-build" -j2
    run_logged "$DEPS/cmocka-install.log" cmake --install "$DEPS/cmocka-build"
    # cmocka 1.1.5 always builds a DLL too, and may name the archive cmocka-static. Keep only
    # include/ and lib/libcmocka.a so nothing can link the DLL (the PE-imports test would fail).
    if [ -f "$CMOCKA_PREFIX/lib/libcmocka-static.a" ]; then
        mv -f "$CMOCKA_PREFIX/lib/libcmocka-static.a" "$CMOCKA_PREFIX/lib/libcmocka.a"
    fi
    rm -rf "${CMOCKA_PREFIX:?}/bin" "$CMOCKA_PREFIX/lib/cmake" "$CMOCKA_PREFIX/lib/pkgconfig" \
        "$CMOCKA_PREFIX/lib/libcmocka.dll.a"
    # Perch builds with __USE_MINGW_ANSI_STDIO (C99 printf: %zu, %llu), and so does cmocka
    # above; make the header's format checks agree, or -Werror rejects %zu in fail_msg().
    sed -i 's/__format__ (__printf__,/__format__ (__gnu_printf__,/' "$CMOCKA_PREFIX/include/cmocka.h"
    grep -q '__gnu_printf__' "$CMOCKA_PREFIX/include/cmocka.h"
    if [ ! -f "$CMOCKA_PREFIX/lib/libcmocka.a" ]; then
        echo "setup-deps: cmocka build did not produce $CMOCKA_PREFIX/lib/libcmocka.a" >&2
        exit 1
    fi
    touch "$CMOCKA_STAMP"
    log "cmocka for mingw installed in $CMOCKA_PREFIX"
}

install_packages
build_cmocka_mingw
"$ROOT/tests/viewers/install.sh"
