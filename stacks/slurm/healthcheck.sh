#!/bin/bash
# Healthy = slurmctld answers `scontrol ping` AND the node "localhost" has
# registered and can take jobs: its compact sinfo state is idle, or mix/alloc/
# comp once jobs run (no "*", "~", "#" suffix, not down/drain/unk).
# With accounting storage (ACCOUNTING=slurmdbd) also: slurmdbd answers and
# slurmctld has registered with it (the cluster's ControlHost is set).
# With the REST API (RESTD=slurmrestd) also: slurmrestd listens on 6820 (a bare connection,
# no request: a request a second would fill its log; the run asks its OpenAPI document with
# the token before the stack counts as ready).
set -eu
scontrol ping 2>/dev/null | grep -q 'is UP'
if [ "$(cat /etc/pytest-stacks-accounting 2>/dev/null || true)" = slurmdbd ]; then
    host=$(sacctmgr -n -P show cluster format=ControlHost 2>/dev/null | head -n 1)
    if [ -z "$host" ]; then echo "slurmdbd: no slurmctld registered"; exit 1; fi
fi
if [ "$(cat /etc/pytest-stacks-restd 2>/dev/null || true)" = slurmrestd ]; then
    if ! (exec 3<>/dev/tcp/127.0.0.1/6820) 2>/dev/null; then
        echo "slurmrestd: not listening on 6820"; exit 1
    fi
fi
state=$(sinfo -h -n localhost -o '%t' 2>/dev/null)
case "$state" in
    idle|mix|alloc|comp) exit 0 ;;
    *) echo "node state: ${state:-?}"; exit 1 ;;
esac
