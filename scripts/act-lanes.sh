#!/usr/bin/env bash
# The GitHub workflows executed on this machine with act (not part of .ci/run: it runs the pr
# lane's real stacks again, as GitHub would, each job on this host). Needs what scripts/setup.sh
# installs. Usage: bash scripts/act-lanes.sh [pytest args, e.g. -k example]
set -euo pipefail
cd "$(dirname "$0")/.."
# renovate: datasource=go depName=github.com/nektos/act
export ACT_VERSION=${ACT_VERSION:-v0.2.89}
exec .venv/bin/python -m pytest tests/workflows -p no:randomly -v "$@"
