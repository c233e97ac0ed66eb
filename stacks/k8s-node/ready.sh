#!/bin/bash
# Readiness from the components' own answers, one line: every check must say yes.
# apiserver /readyz, the MPIJob CRD Established, the operator's lease held, the real node Ready
# (kubelet, containerd, CNI), CoreDNS ready, and both images imported into containerd.
# The API is asked with curl and the admin's certificate, as in stacks/k8s-controlplane's
# ready.sh (milliseconds, where each kubectl call is a Go program's start).
set -u
state_dir=/var/lib/k8s
pki=$state_dir/pki
[ -f "$state_dir/started" ] || { echo "starting"; exit 1; }
get() { # path: the API's answer, or nothing
    curl -s -A pytest-stacks --max-time 5 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" \
        --key "$pki/admin.key" "https://127.0.0.1:6443$1" 2>/dev/null
}
says() { grep -q "\"type\":\"$2\",\"status\":\"True\"" <<< "$1" && echo True || echo no; }
readyz=$(get /readyz)
crd=$(says "$(get /apis/apiextensions.k8s.io/v1/customresourcedefinitions/mpijobs.kubeflow.org)" \
    Established)
lease=$(get /apis/coordination.k8s.io/v1/namespaces/mpi-operator/leases/mpi-operator \
    | grep -o '"holderIdentity":"[^"]*"' | cut -d'"' -f4)
node=$(says "$(get /api/v1/nodes/pytest-stacks-node)" Ready)
dns=$(curl -sf http://127.0.0.1:8181/ready 2>&1 || echo no)
# grep -c prints 0 when no line matches, nothing when the file is not there yet.
images=$(grep -c "^docker.io/" "$state_dir/images" 2>/dev/null || true)
images=${images:-0}
echo "readyz=${readyz:-none} crd=$crd lease=${lease:-none} node=$node dns=$dns images=$images"
[ "$readyz" = "ok" ] && [ "$crd" = True ] && [ -n "$lease" ] && [ "$node" = True ] \
    && [ "$dns" = "OK" ] && [ "$images" -ge 2 ]
