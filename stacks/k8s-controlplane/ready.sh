#!/bin/bash
# Readiness from the components' own answers, one line: every check must say yes.
# apiserver /readyz, the MPIJob CRD Established, the operator's lease held, the kwok node Ready.
# Asked with curl and the admin's certificate (milliseconds each; a kubectl call starts a Go
# program, about 0.2 s of CPU, and the harness asks several times a second while the plane
# starts beside the other stacks). The API answers compact JSON in its types' field order (it
# pretty-prints for a user agent that names curl), so a condition reads "type":"X","status":"Y".
set -u
state_dir=/var/lib/k8s
pki=$state_dir/pki
[ -f "$state_dir/started" ] || { echo "starting"; exit 1; }
get() { # path: the API's answer, or nothing
    curl -s -A pytest-stacks --max-time 5 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" \
        --key "$pki/admin.key" "https://127.0.0.1:6443$1" 2>/dev/null
}
readyz=$(get /readyz)
crd=$(get /apis/apiextensions.k8s.io/v1/customresourcedefinitions/mpijobs.kubeflow.org)
lease=$(get /apis/coordination.k8s.io/v1/namespaces/mpi-operator/leases/mpi-operator)
node=$(get /api/v1/nodes/kwok-node-0)
holder=$(grep -o '"holderIdentity":"[^"]*"' <<< "$lease" | cut -d'"' -f4)
says() { grep -q "\"type\":\"$2\",\"status\":\"True\"" <<< "$1" && echo True || echo no; }
crd_established=$(says "$crd" Established)
node_ready=$(says "$node" Ready)
echo "readyz=${readyz:-none} crd=$crd_established lease=${holder:-none} node=$node_ready"
[ "$readyz" = "ok" ] && [ "$crd_established" = True ] && [ -n "$holder" ] && [ "$node_ready" = True ]
