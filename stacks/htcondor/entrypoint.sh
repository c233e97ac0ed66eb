#!/bin/sh
# pytest-stacks HTCondor entrypoint: per-container setup, then `condor_master -f`.
set -eu

: "${CONDOR_PORT:=9618}"
export CONDOR_PORT

# Runtime directories the Debian package leaves to systemd-tmpfiles.
install -d -o condor -g condor -m 0755 /var/run/condor /var/lock/condor /var/log/condor \
    /var/spool/condor /var/lib/condor /var/lib/condor/execute
install -d -o root -g root -m 0700 /etc/condor/passwords.d /etc/condor/tokens.d

# Per-container pool signing key (IDTOKENS). Never part of the image.
# Always a new one: a key that came with an image (or an earlier start) is never reused.
rm -f /etc/condor/passwords.d/POOL
head -c 48 /dev/urandom | base64 -w0 | condor_store_cred add -c -i - >/dev/null

# The stack's object store, if it has one: its container makes a CA per run and shares it in
# this volume. Trusted here like a site's CA on its execute nodes: the curl plugin that
# downloads and uploads s3:// files verifies the store with libcurl's default CA file.
store_ca=/run/pytest-stacks/store-trust/ca.crt
if [ -d "${store_ca%/*}" ]; then
    tries=0
    until [ -s "$store_ca" ] || [ "$tries" -ge 300 ]; do tries=$((tries + 1)); sleep 0.1; done
    [ -s "$store_ca" ] || { echo "the object store never shared its CA ($store_ca)" >&2; exit 1; }
    install -d -m 0755 /etc/ssl/certs
    cat "$store_ca" >> /etc/ssl/certs/ca-certificates.crt
fi

# Daemon logs stay in /var/log/condor; also stream them to `docker compose logs`.
if [ "${CONDOR_LOGS_TO_STDOUT:-1}" = 1 ]; then
    ( cd /var/log/condor && exec tail -n +1 -F MasterLog SharedPortLog CollectorLog \
        NegotiatorLog SchedLog StartLog ShadowLog StarterLog 2>/dev/null ) &
fi

exec "$@"
