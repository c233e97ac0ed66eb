#!/bin/bash
# Readiness from the components' own answers, one line: every check must say yes.
# apiserver /readyz, the MPIJob CRD Established, the operator's lease held, the kwok node Ready.
set -u
state_dir=/var/lib/k8s
kubectl=(/opt/k8s/kubernetes/bin/kubectl "--kubeconfig=$state_dir/admin.kubeconfig"
         --request-timeout=5s)
[ -f "$state_dir/started" ] || { echo "starting"; exit 1; }
# The four questions at once (each kubectl call starts a Go program: about 0.2 s).
answers=$(mktemp -d)
trap 'rm -rf "$answers"' EXIT
"${kubectl[@]}" get --raw /readyz > "$answers/readyz" 2>&1 &
"${kubectl[@]}" get crd mpijobs.kubeflow.org -o 'jsonpath={.status.conditions[?(@.type=="Established")].status}' > "$answers/crd" 2>&1 &
"${kubectl[@]}" -n mpi-operator get lease mpi-operator -o 'jsonpath={.spec.holderIdentity}' > "$answers/lease" 2>&1 &
"${kubectl[@]}" get node kwok-node-0 -o 'jsonpath={.status.conditions[?(@.type=="Ready")].status}' > "$answers/node" 2>&1 &
wait
readyz=$(tail -n1 "$answers/readyz")
crd=$(cat "$answers/crd")
lease=$(cat "$answers/lease")
node=$(cat "$answers/node")
echo "readyz=$readyz crd=$crd lease=${lease:-none} node=$node"
[ "$readyz" = "ok" ] && [ "$crd" = "True" ] && [ -n "$lease" ] && [ "$node" = "True" ] \
    && [[ $lease != *rror* ]]
