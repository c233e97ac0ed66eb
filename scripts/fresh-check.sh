#!/usr/bin/env bash
# A new machine, as near as this one can be made one: HEAD cloned into a temporary folder and
# run through .ci/run (what CI runs) with every cache empty:
#   - HOME, XDG_CACHE_HOME (pytest-stacks' Go builds and image tars), GOCACHE, GOMODCACHE and
#     GOPATH point at empty folders (pip, npm, Go and the Compose plugin start from nothing);
#   - every image this project builds (pytest-stacks/*, the seeded Debian bases included) and
#     the engine's build cache are removed first, so they are seeded and built again.
# What stays is the Docker engine package itself (a new machine installs it in about a minute
# with `scripts/setup.sh`) and the Debian/PyPI/npm/Go mirrors.
#
#   bash scripts/fresh-check.sh            # keeps the clone and its log for reading
#   KEEP_IMAGES=1 bash scripts/fresh-check.sh   # empty caches, but the images stay
#
# It prints the wall time of .ci/run and, from its log, each stage's time.
set -euo pipefail
cd "$(dirname "$0")/.."

work=$(mktemp -d "${TMPDIR:-/tmp}/pytest-stacks-fresh.XXXXXX")
git clone -q . "$work/project"
mkdir -p "$work/home" "$work/cache" "$work/go-build" "$work/go/pkg/mod"
echo "fresh-check: clone of $(git rev-parse --short HEAD) in $work/project"

if [ "${KEEP_IMAGES:-0}" != "1" ] && docker info >/dev/null 2>&1; then
    mapfile -t ours < <(docker images --format '{{.Repository}}:{{.Tag}}' \
        | grep -E '^pytest-stacks/' || true)
    if [ "${#ours[@]}" -gt 0 ]; then
        echo "fresh-check: removing ${#ours[@]} image(s) of this project"
        docker rmi -f "${ours[@]}" >/dev/null
    fi
    docker builder prune -af >/dev/null
    docker image prune -f >/dev/null
fi

started=$SECONDS
rc=0
(
    cd "$work/project"
    export HOME="$work/home" XDG_CACHE_HOME="$work/cache" GOCACHE="$work/go-build" \
        GOMODCACHE="$work/go/pkg/mod" GOPATH="$work/go"
    bash .ci/run
) > "$work/ci.log" 2>&1 || rc=$?
took=$((SECONDS - started))
# The empty caches are full now (Go's module and build caches alone are 15-19 GB): two runs
# kept filled this disk and the next `.ci/run` failed with "no space left on device". The
# log and the clone stay for reading; KEEP_CACHES=1 keeps the caches too.
if [ "${KEEP_CACHES:-0}" != "1" ]; then
    chmod -R u+w "${work:?}/go" 2>/dev/null || true  # Go's module cache is read-only
    rm -rf "${work:?}/home" "${work:?}/cache" "${work:?}/go-build" "${work:?}/go"
fi

echo "fresh-check: .ci/run exited $rc after $((took / 60)) min $((took % 60)) s"
echo "fresh-check: per stage (from $work/ci.log):"
sed -n '/^== where the time went, per stage/,$p' "$work/ci.log"
exit "$rc"
