#!/bin/bash
# Starts a Kubernetes control plane, the MPI Operator and one real kubelet node (containerd,
# CNI bridge, CoreDNS, kube-proxy) in this container, then supervises them: if any component
# exits, the container exits (the harness then reports an infrastructure error with every
# component's log). A fresh PKI is made at every start, so credentials are per run; nothing
# here is printed but component names and timings.
set -euo pipefail
B=/opt/k8s
S=/opt/pytest-stacks
D=/var/lib/k8s
L=/var/log/k8s
P=$D/pki
API=https://127.0.0.1:6443
NODE=pytest-stacks-node
mkdir -p "$P" "$L"
T0=$(date +%s%N)
say() { echo "pytest-stacks: [$(( ($(date +%s%N) - T0) / 1000000 ))ms] $*"; }
NODE_IP=$(ip -4 -o addr show eth0 | awk '{print $4}' | cut -d/ -f1)
[ -n "$NODE_IP" ] || { say "no IPv4 address on eth0" >&2; exit 1; }

# --- what the kubelet needs of this container ------------------------------------------------
# Mount propagation for pod volumes; writable cgroup hierarchies (a per-mount remount: a plain
# remount says "busy"); with the private cgroup namespace the pods' cgroups nest under this
# container's own. The kubelet insists on three kernel settings (vm.overcommit_memory=1,
# kernel.panic=10, kernel.panic_on_oops=1) and fails if it cannot set them; /proc/sys is
# read-only here and the host's values are not ours to change, so files holding the expected
# values are bind-mounted over those entries, inside this container only.
mount --make-rshared /
for m in /sys/fs/cgroup/*; do mount -o remount,bind,rw "$m"; done
mkdir -p /run/pytest-stacks-sysctl
fake_sysctl() {
    local file=/run/pytest-stacks-sysctl/${1//\//_}
    echo "$2" > "$file"
    mount --bind "$file" "/proc/sys/$1"
}
fake_sysctl vm/overcommit_memory 1
fake_sysctl kernel/panic 10
fake_sysctl kernel/panic_on_oops 1
[ -s /etc/machine-id ] || tr -d - < /proc/sys/kernel/random/uuid > /etc/machine-id

PIDS=()
start() { # name command...
    local name=$1
    shift
    "$@" > "$L/$name.log" 2>&1 &
    PIDS+=("$!")
    say "started $name"
}

until_ok() { # what seconds command...
    local what=$1 seconds=$2
    shift 2
    for _ in $(seq 1 $((seconds * 5))); do
        if "$@" > /dev/null 2>&1; then return 0; fi
        sleep 0.2
    done
    say "$what did not come up in ${seconds}s" >&2
    exit 1
}

# --- containerd first: importing the images takes longest, the control plane starts meanwhile
mkdir -p /etc/containerd /etc/cni/net.d
sed "s#@PAUSE_IMAGE@#docker.io/${K8S_PAUSE_IMAGE:?}#" "$S/containerd.toml" > /etc/containerd/config.toml
start containerd containerd --config /etc/containerd/config.toml
import_images() {
    for _ in $(seq 1 150); do ctr version > /dev/null 2>&1 && break; sleep 0.2; done
    for tar in "$B"/images/*.tar; do
        ctr -n k8s.io images import "$tar" || return 1
    done
    ctr -n k8s.io images ls -q > "$D/images"
}
import_images > "$L/image-import.log" 2>&1 &
IMPORT=$!

# --- PKI, kubeconfigs --------------------------------------------------------------------------
sign() { # name subject usage [extra extension line]
    openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n%s\n' \
        "$3" "${4:-}" > "$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" \
        -days 30 -extfile "$1.ext" 2>/dev/null
}
pki() {
    cd "$P"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 \
        -subj "/CN=pytest-stacks-ca" -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
    sign apiserver "/CN=kube-apiserver" serverAuth \
        "subjectAltName=IP:127.0.0.1,IP:$NODE_IP,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
    sign admin "/CN=kubernetes-admin/O=system:masters" clientAuth
    sign kube-controller-manager "/CN=system:kube-controller-manager" clientAuth
    sign kube-scheduler "/CN=system:kube-scheduler" clientAuth
    sign kubelet "/CN=system:node:$NODE/O=system:nodes" clientAuth
    sign kubelet-serving "/CN=$NODE" serverAuth "subjectAltName=IP:$NODE_IP,DNS:$NODE"
    sign apiserver-kubelet-client "/CN=kube-apiserver-kubelet-client/O=system:masters" clientAuth
    sign kube-proxy "/CN=system:kube-proxy" clientAuth
    sign coredns "/CN=system:pytest-stacks:coredns" clientAuth
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key 2>/dev/null
    openssl pkey -in sa.key -pubout -out sa.pub
    rm -f ./*.csr ./*.ext ca.srl
    chmod 0600 ./*.key
    cd /
}

kubeconfig() { # file user [cert-name | token=TOKEN]
    local auth
    if [[ $3 == token=* ]]; then
        auth="    token: ${3#token=}"
    else
        auth="    client-certificate-data: $(base64 -w0 "$P/$3.crt")
    client-key-data: $(base64 -w0 "$P/$3.key")"
    fi
    umask 077
    cat > "$1" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: pytest-stacks
  cluster:
    server: $API
    certificate-authority-data: $(base64 -w0 "$P/ca.crt")
users:
- name: $2
  user:
$auth
contexts:
- name: pytest-stacks
  context: {cluster: pytest-stacks, user: $2}
current-context: pytest-stacks
KUBECONFIG
}

pki
kubeconfig "$D/admin.kubeconfig" admin admin
for n in kube-controller-manager kube-scheduler kubelet kube-proxy coredns; do
    kubeconfig "$D/$n.kubeconfig" "$n" "$n"
done
export KUBECONFIG=$D/admin.kubeconfig
K=$B/kubernetes/bin/kubectl
say "pki done"

# --- control plane (flags as in stacks/k8s-controlplane, plus what reaches the kubelet) ------
start etcd "$B/etcd/bin/etcd" --name=pytest-stacks --data-dir="$D/etcd" \
    --listen-client-urls=http://127.0.0.1:2379 --advertise-client-urls=http://127.0.0.1:2379 \
    --listen-peer-urls=http://127.0.0.1:2380 --initial-advertise-peer-urls=http://127.0.0.1:2380 \
    --initial-cluster=pytest-stacks=http://127.0.0.1:2380 --initial-cluster-state=new \
    --listen-metrics-urls=http://127.0.0.1:2381 --log-level=warn
until_ok etcd 60 curl -sf http://127.0.0.1:2381/health

start kube-apiserver "$B/kubernetes/bin/kube-apiserver" \
    --etcd-servers=http://127.0.0.1:2379 --bind-address=0.0.0.0 --secure-port=6443 \
    --advertise-address="$NODE_IP" --service-cluster-ip-range=10.0.0.0/24 \
    --client-ca-file="$P/ca.crt" --tls-cert-file="$P/apiserver.crt" \
    --tls-private-key-file="$P/apiserver.key" \
    --kubelet-client-certificate="$P/apiserver-kubelet-client.crt" \
    --kubelet-client-key="$P/apiserver-kubelet-client.key" \
    --kubelet-preferred-address-types=InternalIP,Hostname \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
    --authorization-mode=Node,RBAC --endpoint-reconciler-type=none
until_ok kube-apiserver 120 curl -sf --cacert "$P/ca.crt" --cert "$P/admin.crt" \
    --key "$P/admin.key" "$API/readyz"
say "apiserver ready"

start kube-controller-manager "$B/kubernetes/bin/kube-controller-manager" \
    --kubeconfig="$D/kube-controller-manager.kubeconfig" \
    --authentication-kubeconfig="$D/kube-controller-manager.kubeconfig" \
    --authorization-kubeconfig="$D/kube-controller-manager.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10257 \
    --service-account-private-key-file="$P/sa.key" --root-ca-file="$P/ca.crt" \
    --cluster-signing-cert-file="$P/ca.crt" --cluster-signing-key-file="$P/ca.key" \
    --use-service-account-credentials=true --controllers='*' --leader-elect=false
start kube-scheduler "$B/kubernetes/bin/kube-scheduler" \
    --kubeconfig="$D/kube-scheduler.kubeconfig" \
    --authentication-kubeconfig="$D/kube-scheduler.kubeconfig" \
    --authorization-kubeconfig="$D/kube-scheduler.kubeconfig" \
    --bind-address=127.0.0.1 --secure-port=10259 --leader-elect=false

# The operator's release manifest (CRD, namespace, RBAC) from its pinned module; its Deployment
# is removed because the operator runs here, out of cluster, with exactly that RBAC.
$K apply --server-side -f "$B/operator/files/mpi-operator.yaml" > "$L/apply.log"
$K -n mpi-operator delete deployment mpi-operator --wait=false >> "$L/apply.log"
# CoreDNS reads Services, EndpointSlices, Pods and Namespaces with its own identity.
$K apply -f - >> "$L/apply.log" <<RBAC
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
$K wait --for=condition=Established --timeout=60s crd/mpijobs.kubeflow.org >> "$L/apply.log"
TOKEN=$($K -n mpi-operator create token mpi-operator --duration=48h)
kubeconfig "$D/operator.kubeconfig" mpi-operator "token=$TOKEN"
unset TOKEN
# KUBECONFIG would win over --kubeConfig: the operator gets only its own credentials.
start mpi-operator env -u KUBECONFIG "$B/operator/bin/mpi-operator" \
    --kubeConfig="$D/operator.kubeconfig" --lock-namespace=mpi-operator -alsologtostderr

# --- the node ----------------------------------------------------------------------------------
cp "$S/10-pytest-stacks.conflist" /etc/cni/net.d/
start coredns "$B/coredns/bin/coredns" -conf "$S/Corefile"
if ! wait "$IMPORT"; then
    say "importing the images into containerd failed:" >&2
    tail -n 20 "$L/image-import.log" >&2
    exit 1
fi
say "images imported: $(tr '\n' ' ' < "$D/images")"
mkdir -p /var/lib/kubelet
sed "s/@NODE_IP@/$NODE_IP/" "$S/kubelet.yaml" > /var/lib/kubelet/config.yaml
start kubelet "$B/node/bin/kubelet" --config=/var/lib/kubelet/config.yaml \
    --kubeconfig="$D/kubelet.kubeconfig" --hostname-override="$NODE" --node-ip="$NODE_IP" --v=2
start kube-proxy "$B/node/bin/kube-proxy" --config="$S/kube-proxy.yaml" --v=2

touch "$D/started"
say "node started"
set +e
wait -n "${PIDS[@]}"
code=$?
say "a component exited (status $code); stopping" >&2
exit 1
