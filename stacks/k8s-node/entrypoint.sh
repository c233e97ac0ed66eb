#!/bin/bash
# Starts a Kubernetes control plane, the MPI Operator and one real kubelet node (containerd,
# CNI bridge, CoreDNS, kube-proxy) in this container, then supervises them: if any component
# exits, the container exits (the harness then reports an infrastructure error with every
# component's log). A fresh PKI is made at every start, so credentials are per run; nothing
# here is printed but component names and timings.
set -euo pipefail
# Paths, PKI, kubeconfigs, start/supervise/stop: shared with stacks/k8s-controlplane, mounted
# by compose.yaml from stacks/k8s-common.
common=/opt/pytest-stacks/common/control-plane.sh
[ -r "$common" ] || { echo "pytest-stacks: $common is not mounted (see compose.yaml)" >&2; exit 1; }
# shellcheck source=SCRIPTDIR/../k8s-common/control-plane.sh
source "$common"
# shellcheck source=SCRIPTDIR/../k8s-common/api.sh
source /opt/pytest-stacks/common/api.sh
node_name=pytest-stacks-node
mkdir -p "$pki_dir" "$log_dir"
started_ns=$(date +%s%N)
say() { echo "pytest-stacks: [$(( ($(date +%s%N) - started_ns) / 1000000 ))ms] $*"; }
node_ip=$(ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1)
[ -n "$node_ip" ] || { say "no IPv4 address on eth0" >&2; exit 1; }

# --- what the kubelet needs of this container ------------------------------------------------
# Mount propagation for pod volumes; writable cgroup hierarchies (a per-mount remount: a plain
# remount says "busy"); with the private cgroup namespace the pods' cgroups nest under this
# container's own. The kubelet insists on three kernel settings (vm.overcommit_memory=1,
# kernel.panic=10, kernel.panic_on_oops=1) and fails if it cannot set them; /proc/sys is
# read-only here and the host's values are not ours to change, so files holding the expected
# values are bind-mounted over those entries, inside this container only.
mount --make-rshared /
for hierarchy in /sys/fs/cgroup/*; do mount -o remount,bind,rw "$hierarchy"; done
mkdir -p /run/pytest-stacks-sysctl
fake_sysctl() { # key (as a path under /proc/sys) value
    local file=/run/pytest-stacks-sysctl/${1//\//_}
    echo "$2" > "$file"
    mount --bind "$file" "/proc/sys/$1"
}
fake_sysctl vm/overcommit_memory 1
fake_sysctl kernel/panic 10
fake_sysctl kernel/panic_on_oops 1
[ -s /etc/machine-id ] || tr -d - < /proc/sys/kernel/random/uuid > /etc/machine-id

# --- containerd first: importing the images takes longest, the control plane starts meanwhile
mkdir -p /etc/containerd /etc/cni/net.d
sed "s#@PAUSE_IMAGE@#docker.io/${K8S_PAUSE_IMAGE:?}#" "$stack_files_dir/containerd.toml" \
    > /etc/containerd/config.toml
start_component containerd containerd --config /etc/containerd/config.toml
import_images() {
    for _ in $(seq 1 150); do ctr version > /dev/null 2>&1 && break; sleep 0.2; done
    for tar in "$programs_dir"/images/*.tar; do
        ctr -n k8s.io images import "$tar" || return 1
    done
    ctr -n k8s.io images ls -q > "$state_dir/images"
}
import_images > "$log_dir/image-import.log" 2>&1 &
image_import_pid=$!

start_etcd # (while the PKI is made)

# --- The object store's CA (stacks with options.object_store): a site's nodes trust their
# store; a job's staging containers mount this node's trust (the store writes its CA within a
# second of starting, beside us).
store_ca=/run/pytest-stacks/store-trust/ca.crt
if [ -d "${store_ca%/*}" ]; then
    for _ in $(seq 1 300); do [ -s "$store_ca" ] && break; sleep 0.1; done
    [ -s "$store_ca" ] || { say "the object store never shared its CA ($store_ca)"; exit 1; }
    cat "$store_ca" >> /etc/ssl/certs/ca-certificates.crt
    say "trusting the object store's CA"
fi

# --- PKI, kubeconfigs --------------------------------------------------------------------------
make_control_plane_pki "$node_ip"
sign_certificate kubelet "/CN=system:node:$node_name/O=system:nodes" clientAuth
sign_certificate kubelet-serving "/CN=$node_name" serverAuth \
    "subjectAltName=IP:$node_ip,DNS:$node_name"
sign_certificate apiserver-kubelet-client "/CN=kube-apiserver-kubelet-client/O=system:masters" \
    clientAuth
sign_certificate kube-proxy "/CN=system:kube-proxy" clientAuth
sign_certificate coredns "/CN=system:pytest-stacks:coredns" clientAuth
finish_pki
write_kubeconfig "$state_dir/admin.kubeconfig" admin admin
for component in kube-controller-manager kube-scheduler kubelet kube-proxy coredns; do
    write_kubeconfig "$state_dir/$component.kubeconfig" "$component" "$component"
done
export KUBECONFIG=$state_dir/admin.kubeconfig
say "pki done"

# --- control plane (flags as in stacks/k8s-controlplane, plus what reaches the kubelet) ------
wait_until_ok etcd 60 curl -sf http://127.0.0.1:2381/health

start_component kube-apiserver "$programs_dir/kubernetes/bin/kube-apiserver" \
    --etcd-servers=http://127.0.0.1:2379 --bind-address=0.0.0.0 --secure-port=6443 \
    --advertise-address="$node_ip" --service-cluster-ip-range=10.0.0.0/24 \
    --client-ca-file="$pki_dir/ca.crt" --tls-cert-file="$pki_dir/apiserver.crt" \
    --tls-private-key-file="$pki_dir/apiserver.key" \
    --kubelet-client-certificate="$pki_dir/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$pki_dir/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP,Hostname \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$pki_dir/sa.pub" \
    --service-account-signing-key-file="$pki_dir/sa.key" \
    --authorization-mode=Node,RBAC --endpoint-reconciler-type=none
wait_until_ok kube-apiserver 120 curl -sf --cacert "$pki_dir/ca.crt" \
    --cert "$pki_dir/admin.crt" --key "$pki_dir/admin.key" "$api_url/readyz"
say "apiserver ready"

start_component kube-controller-manager "$programs_dir/kubernetes/bin/kube-controller-manager" \
    --kubeconfig="$state_dir/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig="$state_dir/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig="$state_dir/kube-controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10257 \
    --service-account-private-key-file="$pki_dir/sa.key" --root-ca-file="$pki_dir/ca.crt" \
    --cluster-signing-cert-file="$pki_dir/ca.crt" --cluster-signing-key-file="$pki_dir/ca.key" \
    --use-service-account-credentials=true --controllers='*' --leader-elect=false
start_component kube-scheduler "$programs_dir/kubernetes/bin/kube-scheduler" \
    --kubeconfig="$state_dir/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig="$state_dir/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig="$state_dir/kube-scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false

# The operator's release manifest (CRD, namespace, RBAC) from its pinned module, without its
# Deployment: the operator runs here, out of cluster, with exactly that RBAC.
operator_manifest_without_deployment "$state_dir/mpi-operator.yaml"
{
    "$kubectl" apply --server-side -f "$state_dir/mpi-operator.yaml"
    # CoreDNS reads Services, EndpointSlices, Pods and Namespaces with its own identity.
    "$kubectl" apply -f - <<RBAC
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: "pytest-stacks:coredns"}
rules:
- apiGroups: [""]
  resources: [endpoints, services, pods, namespaces]
  verbs: [list, watch]
- apiGroups: [discovery.k8s.io]
  resources: [endpointslices]
  verbs: [list, watch]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: "pytest-stacks:coredns"}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: "pytest-stacks:coredns"}
subjects:
- {apiGroup: rbac.authorization.k8s.io, kind: User, name: "system:pytest-stacks:coredns"}
RBAC
} > "$log_dir/apply.log"
wait_until_ok "the MPIJob API" 60 mpijobs_served
operator_token=$(service_account_token mpi-operator mpi-operator 172800)
[ -n "$operator_token" ] || { say "no token for the operator's service account" >&2; exit 1; }
write_kubeconfig "$state_dir/operator.kubeconfig" mpi-operator "token=$operator_token"
unset operator_token
# KUBECONFIG would win over --kubeConfig: the operator gets only its own credentials.
start_restarting_component mpi-operator env -u KUBECONFIG "$programs_dir/operator/bin/mpi-operator" \
    --kubeConfig="$state_dir/operator.kubeconfig" --lock-namespace=mpi-operator -alsologtostderr

# --- the node ----------------------------------------------------------------------------------
cp "$stack_files_dir/10-pytest-stacks.conflist" /etc/cni/net.d/
start_component coredns "$programs_dir/coredns/bin/coredns" -conf "$stack_files_dir/Corefile"
if ! wait "$image_import_pid"; then
    say "importing the images into containerd failed:" >&2
    tail -n 20 "$log_dir/image-import.log" >&2
    exit 1
fi
say "images imported: $(tr '\n' ' ' < "$state_dir/images")"
mkdir -p /var/lib/kubelet
sed "s/@NODE_IP@/$node_ip/" "$stack_files_dir/kubelet.yaml" > /var/lib/kubelet/config.yaml
start_component kubelet "$programs_dir/node/bin/kubelet" --config=/var/lib/kubelet/config.yaml \
    --kubeconfig="$state_dir/kubelet.kubeconfig" --hostname-override="$node_name" \
    --node-ip="$node_ip" --v=2
start_component kube-proxy "$programs_dir/node/bin/kube-proxy" \
    --config="$stack_files_dir/kube-proxy.yaml" --v=2

touch "$state_dir/started"
say "node started"
supervise
