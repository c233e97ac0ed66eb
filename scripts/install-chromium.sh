#!/usr/bin/env bash
# Install headless Chromium (Debian's `chromium` package) for tests/checks/test_report_browser.py,
# which opens a rendered compatibility report in a real browser and checks the table it shows.
# Idempotent: nothing is installed when `chromium` is already on PATH. Quiet unless it fails;
# exits non-zero when Chromium cannot be had (not root, no apt-get, or apt-get failed).
set -euo pipefail

say() { printf 'install-chromium: %s\n' "$*"; }

if command -v chromium >/dev/null 2>&1; then
    say "chromium already installed ($(command -v chromium))"
    exit 0
fi
if ! command -v apt-get >/dev/null 2>&1; then
    say "chromium is not on PATH and apt-get is not available: install Chromium by hand" >&2
    exit 1
fi
sudo=()
if [[ "$(id -u)" != 0 ]]; then
    if ! command -v sudo >/dev/null 2>&1; then
        say "installing chromium needs root (or sudo)" >&2
        exit 1
    fi
    sudo=(sudo)
fi

log="$(mktemp)"
trap 'rm -f "$log"' EXIT
export DEBIAN_FRONTEND=noninteractive
say "apt-get install chromium"
if ! { "${sudo[@]}" apt-get update -qq && \
       "${sudo[@]}" apt-get install -y -qq --no-install-recommends chromium; } >"$log" 2>&1; then
    tail -n 40 "$log" >&2
    say "apt-get install chromium failed (output above)" >&2
    exit 1
fi
if ! command -v chromium >/dev/null 2>&1; then
    say "chromium was installed but is not on PATH" >&2
    exit 1
fi
say "installed $(chromium --version 2>/dev/null || echo chromium)"
