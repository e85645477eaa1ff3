#!/usr/bin/env bash
# Installs the viewer checks' npm packages (speedscope, puppeteer-core, profiler-cli) at the
# versions pinned in tests/viewers/package-lock.json, with `npm ci`, into build/viewers.
# puppeteer-core never downloads a browser: the checks drive Debian's /usr/bin/chromium.
# Safe to run again: nothing is done while the installed lock equals the repository's.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
WORK="$ROOT/build/viewers"
mkdir -p "$WORK"
cp "$ROOT"/tests/viewers/package.json "$ROOT"/tests/viewers/package-lock.json \
    "$ROOT"/tests/viewers/*.mjs "$WORK/"
if cmp -s "$WORK/package-lock.json" "$WORK/node_modules/.perch-lock" 2>/dev/null; then
    exit 0
fi
echo "[viewers] npm ci (tests/viewers/package-lock.json)"
(cd "$WORK" && PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund --loglevel=error)
cp "$WORK/package-lock.json" "$WORK/node_modules/.perch-lock"
