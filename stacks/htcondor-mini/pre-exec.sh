#!/bin/bash
# Run by the upstream image's /start.sh (its documented hook: /root/config/pre-exec.sh)
# before supervisord starts condor_master. Adapts htcondor/mini for pytest-stacks:
# a `submitter` account for the per-run IDTOKEN, and a pool signing key made per container
# (upstream mini ships none and sets up no IDTOKENS).
set -euo pipefail
getent passwd submitter >/dev/null || useradd --create-home submitter
install -d -o condor -g condor -m 0755 /var/run/condor /var/lock/condor /var/log/condor
install -d -m 0700 /etc/condor/passwords.d /etc/condor/tokens.d
# Always a new one: a key that came with the image is never reused.
rm -f /etc/condor/passwords.d/POOL
head -c 48 /dev/urandom | base64 -w0 | condor_store_cred add -c -i - >/dev/null
