#!/bin/bash
# Healthy = slurmctld answers `scontrol ping` AND the node "localhost" has
# registered and can take jobs: its compact sinfo state is idle, or mix/alloc/
# comp once jobs run (no "*", "~", "#" suffix, not down/drain/unk).
set -eu
scontrol ping 2>/dev/null | grep -q 'is UP'
state=$(sinfo -h -n localhost -o '%t' 2>/dev/null)
case "$state" in
    idle|mix|alloc|comp) exit 0 ;;
    *) echo "node state: ${state:-?}"; exit 1 ;;
esac
