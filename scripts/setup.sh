#!/usr/bin/env bash
# Set-up command 1 of 2: create the virtual environment, make sure a Docker engine, Compose v2
# and the Debian base images are there (installing them on a Debian host as root), then run the
# main job: the contract suite against a real Slurm stack, or against the fakes where no engine
# can be had.
set -euo pipefail
cd "$(dirname "$0")/.."

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip
.venv/bin/python -m pip install -q -e '.[dev]'
# CI (PYTEST_STACKS_PREBUILD=1, .ci/run): the Kubernetes stacks' Go programs, the longest
# step of a new machine, start building now, in the background, while the rest of the set-up
# waits on the network; scripts/test.sh ends the build if it is still running when it ends.
if [ "${PYTEST_STACKS_PREBUILD:-}" = "1" ]; then
    mkdir -p .pytest-stacks
    PYTEST_STACKS_TIMINGS="$PWD/.pytest-stacks/timings-programs.jsonl" \
        .venv/bin/pytest-stacks build --programs-only 'k8s-*' 'kind-*' \
        > .pytest-stacks/prebuild-programs.log 2>&1 &
    echo $! > .pytest-stacks/prebuild-programs.pid
    # A set-up that fails leaves nothing running.
    # shellcheck disable=SC2317,SC2329  # called by the trap
    stop_prebuild_on_failure() {
        local rc=$?
        if [ "$rc" -ne 0 ]; then
            kill -TERM "$(cat .pytest-stacks/prebuild-programs.pid)" 2>/dev/null || true
        fi
        return "$rc"
    }
    trap stop_prebuild_on_failure EXIT
fi
# The offline CI-config checkers (Renovate with Node 24, check-jsonschema, zizmor).
PYTHON=.venv/bin/python bash scripts/install-checkers.sh
# The report checkers: headless Chromium (the HTML compatibility page) and Allure 3 from npm.
bash scripts/install-chromium.sh
bash scripts/install-allure.sh >/dev/null

MAIN_STACK=${MAIN_STACK:-slurm-24.11}
# doctor says what is missing and fixes what it can; the main job is a real stack wherever an
# engine answers (the stack's own preflight then names anything else it lacks: a base image,
# disk space), the fakes only where none can be had.
.venv/bin/pytest-stacks doctor --fix --stack "$MAIN_STACK" --stack 'slurm-*' --stack 'htcondor-23*' \
    --stack 'k8s-*' || true
if docker info >/dev/null 2>&1; then
    echo "== main job: the contract suite against a real $MAIN_STACK"
    .venv/bin/python -m pytest tests/contract --stack="$MAIN_STACK" -q
else
    echo "== no usable Docker engine here (see doctor above): main job against the fakes"
    .venv/bin/python -m pytest tests/contract -q
fi
