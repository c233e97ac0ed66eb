#!/bin/bash
# Readiness of one role of the slurm-cluster image (argument, else the role the
# entrypoint recorded in /run/pytest-stacks/role):
#   ctld   slurmctld answers `scontrol ping` (UP)
#   node   slurmctld UP and this node (= hostname) registered and usable: its
#          compact sinfo state is idle, or mix/alloc/comp once jobs run (a
#          suffix *, ~, # or down/drain/unk is not ready)
#   login  sshd listens on port 22, and the Slurm client
#          works (`scontrol ping` UP: munge key and controller reachable)
#   jump   sshd listens on port 22
# So `docker compose up --wait` returns once both nodes can take jobs and both
# SSH hops accept connections.
set -eu
role=${1:-$(cat /run/pytest-stacks/role 2>/dev/null || true)}

ctld_up() { scontrol ping 2>/dev/null | grep -q 'is UP'; }
# sshd is listening on port 22 (a LISTEN socket, state 0A, on port 0016 in
# /proc/net/tcp{,6}) and its process is alive. Not a TCP connect: sshd logs
# every connection that sends no SSH identification (two lines a second).
sshd_up() {
    pgrep -x sshd >/dev/null || { echo "sshd: not running"; return 1; }
    awk 'NR > 1 && $2 ~ /:0016$/ && $4 == "0A" { found = 1 } END { exit !found }' \
        /proc/net/tcp /proc/net/tcp6 2>/dev/null \
        || { echo "sshd: nothing listens on port 22"; return 1; }
}

case "$role" in
    ctld) ctld_up ;;
    node)
        ctld_up
        name=$(hostname -s)
        state=$(sinfo -h -n "$name" -o '%t' 2>/dev/null)
        case "$state" in
            idle|mix|alloc|comp) ;;
            *) echo "node $name state: ${state:-?}"; exit 1 ;;
        esac
        ;;
    login) sshd_up; ctld_up ;;
    jump) sshd_up ;;
    *) echo "unknown role '${role}'"; exit 1 ;;
esac
