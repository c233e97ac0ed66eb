#!/bin/bash
# Readiness of one role of the htcondor-pool image (argument, else the role the entrypoint
# recorded in /run/pytest-stacks/role):
#   cm       the master's ready ad says IsReady (collector and negotiator alive)
#   execute  IsReady and the startd reported Ready (STARTD_State)
#   submit   IsReady (schedd alive), sshd listens on port 22, and the collector lists this
#            schedd and at least one execute slot: the pool can run a job submitted here
# `condor_who -wait` exits 0 even when its condition timed out (23.9.6), so the printed ad
# is what counts (see stacks/htcondor/ready.sh).
set -u
role=${1:-$(cat /run/pytest-stacks/role 2>/dev/null || true)}

who() { condor_who -wait:5 "$1" 2>&1 || true; }
has() { printf '%s\n' "$1" | grep -qx "$2"; }
sshd_up() {
    pgrep -x sshd >/dev/null || { echo "sshd: not running"; return 1; }
    awk 'NR > 1 && $2 ~ /:0016$/ && $4 == "0A" { found = 1 } END { exit !found }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null \
        || { echo "sshd: nothing listens on port 22"; return 1; }
}

case "$role" in
    cm|submit)
        out=$(who 'IsReady')
        has "$out" 'IsReady = true' || { echo "not ready: $out"; exit 1; }
        ;;
    execute)
        out=$(who 'IsReady && STARTD_State =?= "Ready"')
        if ! { has "$out" 'IsReady = true' && has "$out" 'STARTD_State = "Ready"'; }; then
            echo "not ready: $out"
            exit 1
        fi
        ;;
    *) echo "unknown role '${role}'"; exit 1 ;;
esac
if [ "$role" = submit ]; then
    sshd_up || exit 1
    schedds=$(condor_status -schedd -af Name 2>&1) || { echo "collector: $schedds"; exit 1; }
    printf '%s\n' "$schedds" | grep -q . || { echo "collector lists no schedd yet"; exit 1; }
    slots=$(condor_status -startd -af Name 2>&1) || { echo "collector: $slots"; exit 1; }
    printf '%s\n' "$slots" | grep -q . || { echo "collector lists no execute slot yet"; exit 1; }
fi
echo ready
