#!/bin/bash
# Readiness of one role of the slurm-cluster image (argument, else the role the
# entrypoint recorded in /run/pytest-stacks/role):
#   ctld   slurmctld answers `scontrol ping` (UP)
#   node   slurmctld UP and this node (= hostname) registered and usable: its
#          compact sinfo state is idle, or mix/alloc/comp once jobs run (a
#          suffix *, ~, # or down/drain/unk is not ready)
#   login  sshd answers with an SSH banner on port 22, and the Slurm client
#          works (`scontrol ping` UP: munge key and controller reachable)
#   jump   sshd answers with an SSH banner on port 22
# So `docker compose up --wait` returns once both nodes can take jobs and both
# SSH hops accept connections.
set -eu
role=${1:-$(cat /run/pytest-stacks/role 2>/dev/null || true)}

ctld_up() { scontrol ping 2>/dev/null | grep -q 'is UP'; }
sshd_up() {
    local banner
    banner=$(timeout 3 bash -c 'exec 3<>/dev/tcp/127.0.0.1/22 && head -c 8 <&3' 2>/dev/null || true)
    [ "$banner" = "SSH-2.0-" ] || { echo "sshd: no banner on 127.0.0.1:22"; return 1; }
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
