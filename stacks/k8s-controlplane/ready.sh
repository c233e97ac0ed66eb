#!/bin/bash
# Readiness from the components' own answers, one line: every check must say yes.
# apiserver /readyz, the MPIJob CRD Established, the operator's lease held, the kwok node Ready.
set -u
state_dir=/var/lib/k8s
kubectl=(/opt/k8s/kubernetes/bin/kubectl "--kubeconfig=$state_dir/admin.kubeconfig"
         --request-timeout=5s)
[ -f "$state_dir/started" ] || { echo "starting"; exit 1; }
readyz=$("${kubectl[@]}" get --raw /readyz 2>&1 | tail -n1)
crd=$("${kubectl[@]}" get crd mpijobs.kubeflow.org -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' 2>&1)
lease=$("${kubectl[@]}" -n mpi-operator get lease mpi-operator -o 'jsonpath={.spec.holderIdentity}' 2>&1)
node=$("${kubectl[@]}" get node kwok-node-0 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' 2>&1)
echo "readyz=$readyz crd=$crd lease=${lease:-none} node=$node"
[ "$readyz" = "ok" ] && [ "$crd" = "True" ] && [ -n "$lease" ] && [ "$node" = "True" ] \
    && [[ $lease != *rror* ]]
