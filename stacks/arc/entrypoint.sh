#!/bin/bash
# Entrypoint of the pytest-stacks ARC image: Slurm first (stacks/slurm's own entrypoint, as a
# child), then this start's credentials (a test CA, the host certificate for "localhost", a
# user certificate for the submit user), then A-REX's two arched processes in the foreground:
# the job manager and the WS/REST interface. Logs stream to stdout; any daemon exiting stops
# the container, so a broken stack is visible.
set -euo pipefail

log() { echo "[arc-entrypoint] $*"; }
slurm_share=/usr/local/share/pytest-stacks/slurm
arc_logs=/var/log/arc

pids=()
# shellcheck disable=SC2317,SC2329  # called by the trap below
stop() {
    log "stopping"
    kill -TERM "${pids[@]}" 2>/dev/null || true
    wait || true
    exit 0
}
trap stop TERM INT

# --- Slurm ---------------------------------------------------------------------
"$slurm_share/entrypoint.sh" &
pids+=($!)
slurm_pid=$!
for _ in $(seq 1 1200); do
    "$slurm_share/healthcheck.sh" >/dev/null 2>&1 && break
    kill -0 "$slurm_pid" 2>/dev/null || { log "Slurm's entrypoint exited"; exit 1; }
    sleep 0.1
done
"$slurm_share/healthcheck.sh" >/dev/null || { log "Slurm not ready within 120 s"; exit 1; }
log "Slurm ready"

# --- Credentials: fresh for every start, never in the image, never printed --------------
# The CA (its key stays in the CA folder, root only), the host certificate for the name
# clients reach the published port by, and the user certificate, installed in the submit
# user's ~/.globus (where ARC's clients look) and its subject added to the allowed list that
# arc.conf's [authgroup: testca] reads.
rm -rf /etc/grid-security
install -d -m 0755 /etc/grid-security
work=$(mktemp -d)
(
    cd "$work"
    arcctl test-ca --ca-id stacks init --validity 2 >/dev/null 2>&1
    arcctl test-ca --ca-id stacks hostcert --hostname localhost --validity 2 >/dev/null 2>&1
    install -m 0644 host-localhost-cert.pem /etc/grid-security/hostcert.pem
    install -m 0600 host-localhost-key.pem /etc/grid-security/hostkey.pem
    rm -rf /home/submitter/.globus
    arcctl test-ca --ca-id stacks usercert --username submitter --install-user submitter \
        --validity 2 >/dev/null 2>&1
)
rm -rf "$work"
test -s /home/submitter/.globus/usercert.pem
test -s /etc/grid-security/testCA.allowed-subjects
log "per-start test CA, host and user certificates made"

# --- A-REX ------------------------------------------------------------------------
install -d -m 0755 "$arc_logs" /var/spool/arc/sessiondir /var/spool/arc/jobstatus
: > "$arc_logs/arex.log"; : > "$arc_logs/ws-interface.log"
tail -n +1 -F "$arc_logs/arex.log" "$arc_logs/ws-interface.log" 2>/dev/null &
pids+=($!)
# The job manager first: the WS interface talks to it through the control directory.
/usr/local/share/pytest-stacks/arc/arc-arex-start -f >"$arc_logs/arex.stderr" 2>&1 &
pids+=($!)
for _ in $(seq 1 300); do
    grep -q "Starting jobs' monitoring" "$arc_logs/arex.log" && break
    sleep 0.1
done
/usr/share/arc/arc-arex-ws-start -f >"$arc_logs/ws-interface.stderr" 2>&1 &
pids+=($!)
log "A-REX $(cat /etc/arc-package-version) started (job manager and WS/REST interface)"

set +e
wait -n "${pids[@]}"
rc=$?
log "a daemon exited (status $rc); stopping the container"
tail -n 20 "$arc_logs"/*.stderr
kill -TERM "${pids[@]}" 2>/dev/null
wait
exit "${rc:-1}"
