#!/bin/bash
# Adapt htcondor/mini for pytest-stacks, then hand over to the image's own start-up.
set -euo pipefail
id submitter >/dev/null 2>&1 || useradd --uid 1000 --create-home submitter 2>/dev/null \
    || useradd --create-home submitter
# A fresh pool signing key per container start: never baked, never shared.
install -d -m 0700 /etc/condor/passwords.d
rm -f /etc/condor/passwords.d/POOL
exec /start.sh "$@"
