#!/bin/bash
# Readiness from the components' own answers, one line: every check must say yes.
# apiserver /readyz, the MPIJob CRD Established (2 s ago or more: api.sh says why), the
# operator's lease held, the real node Ready (kubelet, containerd, CNI), CoreDNS ready, and
# both images imported into containerd.
# The API is asked with curl (stacks/k8s-common/api.sh, mounted by compose.yaml).
set -u
state_dir=/var/lib/k8s
[ -f "$state_dir/started" ] || { echo "starting"; exit 1; }
# shellcheck source=SCRIPTDIR/../k8s-common/api.sh
source /opt/pytest-stacks/common/api.sh || { echo "api.sh is not mounted"; exit 1; }
operator_plane # readyz, crd, lease
node=$(condition_true "$(api_get /api/v1/nodes/pytest-stacks-node)" Ready)
dns=$(curl -sf http://127.0.0.1:8181/ready 2>&1 || echo no)
# grep -c prints 0 when no line matches, nothing when the file is not there yet.
images=$(grep -c "^docker.io/" "$state_dir/images" 2>/dev/null || true)
images=${images:-0}
echo "readyz=${readyz:-none} crd=$crd lease=${lease:-none} node=$node dns=$dns images=$images"
[ "$readyz" = "ok" ] && [ "$crd" = True ] && [ -n "$lease" ] && [ "$node" = True ] \
    && [ "$dns" = "OK" ] && [ "$images" -ge 2 ]
