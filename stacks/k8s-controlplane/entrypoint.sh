#!/bin/bash
# Starts a Kubernetes control plane with kwok nodes and the MPI Operator, then supervises it:
# if any component exits, the container exits (the harness then reports an infrastructure
# error with every component's log). A fresh PKI is made at every start, so credentials are
# per run; nothing here is printed but component names.
set -euo pipefail
# Paths, PKI, kubeconfigs, start/supervise/stop: shared with stacks/k8s-node, mounted by
# compose.yaml from stacks/k8s-common.
common=/opt/pytest-stacks/common/control-plane.sh
[ -r "$common" ] || { echo "pytest-stacks: $common is not mounted (see compose.yaml)" >&2; exit 1; }
# shellcheck source=SCRIPTDIR/../k8s-common/control-plane.sh
source "$common"
# shellcheck source=SCRIPTDIR/../k8s-common/api.sh
source /opt/pytest-stacks/common/api.sh
mkdir -p "$pki_dir" "$log_dir"

start_etcd # (while the PKI is made)
make_control_plane_pki 127.0.0.1 masters
finish_pki
write_kubeconfig "$state_dir/admin.kubeconfig" admin admin
write_kubeconfig "$state_dir/kube-controller-manager.kubeconfig" system:kube-controller-manager \
    kube-controller-manager
write_kubeconfig "$state_dir/kube-scheduler.kubeconfig" system:kube-scheduler kube-scheduler
export KUBECONFIG=$state_dir/admin.kubeconfig

wait_until_ok etcd 60 curl -sf http://127.0.0.1:2381/health

start_component kube-apiserver "$programs_dir/kubernetes/bin/kube-apiserver" \
    --etcd-servers=http://127.0.0.1:2379 --bind-address=0.0.0.0 --secure-port=6443 \
    --advertise-address=127.0.0.1 --service-cluster-ip-range=10.0.0.0/24 \
    --client-ca-file="$pki_dir/ca.crt" --tls-cert-file="$pki_dir/apiserver.crt" \
    --tls-private-key-file="$pki_dir/apiserver.key" \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$pki_dir/sa.pub" \
    --service-account-signing-key-file="$pki_dir/sa.key" \
    --authorization-mode=Node,RBAC --endpoint-reconciler-type=none
# Serving is enough for what the admin (system:masters, authorized before RBAC's bootstrap
# roles exist) does: kwok, the node, the operator's manifest and token, and so the operator,
# start now, while the API's post-start hooks finish (/readyz, 1.5 s later on 1.36). The two
# applies are retried.
wait_until_ok kube-apiserver 120 curl -sf --cacert "$pki_dir/ca.crt" \
    --cert "$pki_dir/admin.crt" --key "$pki_dir/admin.key" "$api_url/version"
say "apiserver serving"
wait_until_ok "the MPIJob CRD" 60 create_mpijob_crd

# kwok needs nothing but the API; the node it manages is registered beside the rest.
start_component kwok "$programs_dir/kwok/bin/kwok" --kubeconfig="$state_dir/admin.kubeconfig" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --cidr=10.244.0.0/16 --node-ip=10.96.0.10 --node-lease-duration-seconds=40 \
    -c "$programs_dir/kwok/files/node-initialize.yaml" \
    -c "$programs_dir/kwok/files/node-heartbeat-with-lease.yaml" \
    -c "$programs_dir/kwok/files/pod-ready.yaml" -c "$programs_dir/kwok/files/pod-delete.yaml" \
    -c "$stack_files_dir/stages/pod-outcome.yaml"
# The controller manager and the scheduler start with the API serving, not ready (/readyz is
# 1.5 s later, RBAC's bootstrap roles; the probe's MPIJob took 0.3 s longer when they started
# after it). Their certificates are in system:masters (`make_control_plane_pki ... masters`),
# so they are authorized before those roles exist, as the admin is; the controllers share the
# manager's credentials (with their own, each one's account and token were made one after
# another at start); neither looks up the API's authentication configmap (their own ports
# serve /healthz alone). A test plane's choice, as kwokctl's: the controllers' own RBAC is
# not what this stack proves (the kind and node stacks keep it).
#
# The controllers a batch test plane's objects meet, not all ~50: they start one after another,
# and with '*' the service account controller, which every new namespace waits on for its
# `default` account, started 4.9 s after the manager (seen on 1.36). These keep what the
# stacks prove: ownership and garbage collection, Jobs (the MPIJob's launcher) and their TTL,
# namespaces and their accounts, the root CA a pod's projected volume names, the workers'
# Service endpoints, the aggregated roles of the operator's release RBAC, and the node
# lifecycle (the API server taints a new node not-ready; this controller lifts the taint once
# the node says Ready).
controllers=serviceaccount-controller,serviceaccount-token-controller
controllers+=,root-ca-certificate-publisher-controller,garbage-collector-controller
controllers+=,namespace-controller,job-controller,ttl-after-finished-controller
controllers+=,pod-garbage-collector-controller,endpoints-controller,endpointslice-controller
controllers+=,clusterrole-aggregation-controller,node-lifecycle-controller
start_component kube-controller-manager "$programs_dir/kubernetes/bin/kube-controller-manager" \
    --kubeconfig="$state_dir/kube-controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10257 \
    --service-account-private-key-file="$pki_dir/sa.key" --root-ca-file="$pki_dir/ca.crt" \
    --cluster-signing-cert-file="$pki_dir/ca.crt" --cluster-signing-key-file="$pki_dir/ca.key" \
    --use-service-account-credentials=false --controllers="$controllers" --leader-elect=false
start_component kube-scheduler "$programs_dir/kubernetes/bin/kube-scheduler" \
    --kubeconfig="$state_dir/kube-scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false

retry_until_ok 60 "$log_dir/node-apply.log" "$kubectl" apply -f "$stack_files_dir/node.yaml" &
node_apply=$!

operator_manifest_without_deployment "$state_dir/mpi-operator.yaml"
# Its CRD is there already (create_mpijob_crd): applied again, its 9000 lines were 0.25 s of
# the server-side apply, on the way to the operator's start.
awk 'BEGIN { RS = "\n---\n"; ORS = "\n---\n" } !/(^|\n)kind: CustomResourceDefinition\n/' \
    "$state_dir/mpi-operator.yaml" > "$state_dir/mpi-operator-rest.yaml"
retry_until_ok 60 "$log_dir/apply.log" \
    "$kubectl" apply --server-side -f "$state_dir/mpi-operator-rest.yaml" \
    || { say "the operator's manifest could not be applied (apply.log)" >&2; exit 1; }
# The operator needs its CRD, its token and its RBAC from the manifest, none of them /readyz.
wait_until_ok "the MPIJob API" 60 mpijobs_served
say "MPIJobs served"
operator_token=$(service_account_token mpi-operator mpi-operator 172800)
[ -n "$operator_token" ] || { say "no token for the operator's service account" >&2; exit 1; }
write_kubeconfig "$state_dir/operator.kubeconfig" mpi-operator "token=$operator_token"
unset operator_token
# KUBECONFIG would win over --kubeConfig: the operator gets only its own credentials.
start_restarting_component mpi-operator env -u KUBECONFIG "$programs_dir/operator/bin/mpi-operator" \
    --kubeConfig="$state_dir/operator.kubeconfig" --lock-namespace=mpi-operator -alsologtostderr

# What the readiness asks too; said here for the log's timeline.
wait_until_ok kube-apiserver 120 curl -sf --cacert "$pki_dir/ca.crt" \
    --cert "$pki_dir/admin.crt" --key "$pki_dir/admin.key" "$api_url/readyz"
say "apiserver ready"
wait "$node_apply" || { say "the kwok node could not be registered (node-apply.log)" >&2; exit 1; }

touch "$state_dir/started"
say "control plane started"
supervise
