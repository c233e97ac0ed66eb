#!/bin/bash
# Readiness from the components' own answers, one line: every check must say yes.
# apiserver /readyz, the MPIJob CRD Established, the operator's lease held, the real node Ready
# (kubelet, containerd, CNI), CoreDNS ready, and both images imported into containerd.
set -u
state_dir=/var/lib/k8s
kubectl=(/opt/k8s/kubernetes/bin/kubectl "--kubeconfig=$state_dir/admin.kubeconfig"
         --request-timeout=5s)
[ -f "$state_dir/started" ] || { echo "starting"; exit 1; }
readyz=$("${kubectl[@]}" get --raw /readyz 2>&1 | tail -n1)
crd=$("${kubectl[@]}" get crd mpijobs.kubeflow.org -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' 2>&1)
lease=$("${kubectl[@]}" -n mpi-operator get lease mpi-operator -o 'jsonpath={.spec.holderIdentity}' 2>&1)
node=$("${kubectl[@]}" get node pytest-stacks-node -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>&1)
dns=$(curl -sf http://127.0.0.1:8181/ready 2>&1 || echo no)
# grep -c prints 0 when no line matches, nothing when the file is not there yet.
images=$(grep -c "^docker.io/" "$state_dir/images" 2>/dev/null || true)
images=${images:-0}
echo "readyz=$readyz crd=$crd lease=${lease:-none} node=$node dns=$dns images=$images"
[ "$readyz" = "ok" ] && [ "$crd" = "True" ] && [ -n "$lease" ] && [ "$node" = "True" ] \
    && [[ $lease != *rror* ]] && [ "$dns" = "OK" ] && [ "$images" -ge 2 ]
