#!/bin/bash
# Healthy = slurmctld answers `scontrol ping` AND the node "localhost" has
# registered and can take jobs: its compact sinfo state is idle, or mix/alloc/
# comp once jobs run (no "*", "~", "#" suffix, not down/drain/unk).
# With accounting storage (ACCOUNTING=slurmdbd) also: slurmdbd answers and
# slurmctld has registered with it (the cluster's ControlHost is set).
# With the REST API (RESTD=slurmrestd) also: slurmrestd answers on 6820 (401 without a
# token: it listens and has loaded its plugins; the token's answer is the run's own check).
set -eu
scontrol ping 2>/dev/null | grep -q 'is UP'
if [ "$(cat /etc/pytest-stacks-accounting 2>/dev/null || true)" = slurmdbd ]; then
    host=$(sacctmgr -n -P show cluster format=ControlHost 2>/dev/null | head -n 1)
    if [ -z "$host" ]; then echo "slurmdbd: no slurmctld registered"; exit 1; fi
fi
if [ "$(cat /etc/pytest-stacks-restd 2>/dev/null || true)" = slurmrestd ]; then
    code=$(curl -s -o /dev/null -m 4 -w '%{http_code}' http://127.0.0.1:6820/openapi/v3 || true)
    case "$code" in
        200|401) ;;
        *) echo "slurmrestd: no answer on 6820 (HTTP ${code:-none})"; exit 1 ;;
    esac
fi
state=$(sinfo -h -n localhost -o '%t' 2>/dev/null)
case "$state" in
    idle|mix|alloc|comp) exit 0 ;;
    *) echo "node state: ${state:-?}"; exit 1 ;;
esac
