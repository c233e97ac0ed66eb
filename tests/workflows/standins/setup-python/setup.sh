#!/usr/bin/env bash
# The host's python$WANT (or python3 when it is that version) in a fresh virtual environment.
set -euo pipefail
found=""
for candidate in "python$WANT" python3; do
    exe=$(command -v "$candidate" || true)
    [ -n "$exe" ] || continue
    have=$("$exe" -c 'import sys; print("%d.%d.%d" % sys.version_info[:3])')
    case "$have." in
        "$WANT".*) found=$exe; break ;;
    esac
done
if [ -z "$found" ]; then
    echo "::error::setup-python stand-in: no python$WANT on this host (PATH=$PATH)"
    exit 1
fi
venv="$RUNNER_TEMP/setup-python-$WANT"
"$found" -m venv "$venv"
"$venv/bin/python" -m pip install -q --upgrade pip
echo "$venv/bin" >> "$GITHUB_PATH"
{
    echo "python-version=$have"
    echo "python-path=$venv/bin/python"
} >> "$GITHUB_OUTPUT"
echo "setup-python stand-in: Python $have from $found in $venv"
