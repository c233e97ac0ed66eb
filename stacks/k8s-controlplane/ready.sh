#!/bin/bash
# Readiness from the components' own answers, one line: every check must say yes.
# apiserver /readyz, the MPIJob CRD Established (2 s ago or more: api.sh says why), the
# operator's lease held, the kwok node Ready.
# The API is asked with curl (stacks/k8s-common/api.sh, mounted by compose.yaml).
set -u
state_dir=/var/lib/k8s
[ -f "$state_dir/started" ] || { echo "starting"; exit 1; }
# shellcheck source=SCRIPTDIR/../k8s-common/api.sh
source /opt/pytest-stacks/common/api.sh || { echo "api.sh is not mounted"; exit 1; }
operator_plane # readyz, crd, lease
node=$(condition_true "$(api_get /api/v1/nodes/kwok-node-0)" Ready)
echo "readyz=${readyz:-none} crd=$crd lease=${lease:-none} node=$node"
[ "$readyz" = "ok" ] && [ "$crd" = True ] && [ -n "$lease" ] && [ "$node" = True ]
