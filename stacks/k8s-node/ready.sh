#!/bin/bash
# Readiness from the components' own answers, one line: every check must say yes.
# apiserver /readyz, the MPIJob CRD Established, the operator's lease held, the real node Ready
# (kubelet, containerd, CNI), CoreDNS ready, and both images imported into containerd.
set -u
D=/var/lib/k8s
K="/opt/k8s/kubernetes/bin/kubectl --kubeconfig=$D/admin.kubeconfig --request-timeout=5s"
[ -f "$D/started" ] || { echo "starting"; exit 1; }
readyz=$($K get --raw /readyz 2>&1 | tail -n1)
crd=$($K get crd mpijobs.kubeflow.org -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' 2>&1)
lease=$($K -n mpi-operator get lease mpi-operator -o 'jsonpath={.spec.holderIdentity}' 2>&1)
node=$($K get node pytest-stacks-node -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>&1)
dns=$(curl -sf http://127.0.0.1:8181/ready 2>&1 || echo no)
images=$(grep -c "^docker.io/" "$D/images" 2>/dev/null || echo 0)
echo "readyz=$readyz crd=$crd lease=${lease:-none} node=$node dns=$dns images=$images"
[ "$readyz" = "ok" ] && [ "$crd" = "True" ] && [ -n "$lease" ] && [ "$node" = "True" ] \
    && [[ $lease != *rror* ]] && [ "$dns" = "OK" ] && [ "$images" -ge 2 ]
