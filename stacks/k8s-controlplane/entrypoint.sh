#!/bin/bash
# Starts a Kubernetes control plane with kwok nodes and the MPI Operator, then supervises it:
# if any component exits, the container exits (the harness then reports an infrastructure
# error with every component's log). A fresh PKI is made at every start, so credentials are
# per run; nothing here is printed but component names.
set -euo pipefail
B=/opt/k8s
S=/opt/pytest-stacks
D=/var/lib/k8s
L=/var/log/k8s
P=$D/pki
API=https://127.0.0.1:6443
mkdir -p "$P" "$L"
say() { echo "pytest-stacks: $*"; }

pki() {
    cd "$P"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 30 \
        -subj "/CN=pytest-stacks-ca" -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
    sign apiserver "/CN=kube-apiserver" serverAuth \
        "subjectAltName=IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
    sign admin "/CN=kubernetes-admin/O=system:masters" clientAuth
    sign kube-controller-manager "/CN=system:kube-controller-manager" clientAuth
    sign kube-scheduler "/CN=system:kube-scheduler" clientAuth
    openssl genpkey -algorithm RSA -pkeyopt rsa_keygen_bits:2048 -out sa.key 2>/dev/null
    openssl pkey -in sa.key -pubout -out sa.pub
    rm -f ./*.csr ./*.ext ca.srl
    chmod 0600 ./*.key
    cd /
}

sign() { # name subject usage [extra extension line]
    openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature,keyEncipherment\nextendedKeyUsage=%s\n%s\n' \
        "$3" "${4:-}" > "$1.ext"
    openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" \
        -days 30 -extfile "$1.ext" 2>/dev/null
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

pki
kubeconfig "$D/admin.kubeconfig" admin admin
kubeconfig "$D/kube-controller-manager.kubeconfig" system:kube-controller-manager kube-controller-manager
kubeconfig "$D/kube-scheduler.kubeconfig" system:kube-scheduler kube-scheduler
export KUBECONFIG=$D/admin.kubeconfig
K=$B/kubernetes/bin/kubectl

start etcd "$B/etcd/bin/etcd" --name=pytest-stacks --data-dir="$D/etcd" \
    --listen-client-urls=http://127.0.0.1:2379 --advertise-client-urls=http://127.0.0.1:2379 \
    --listen-peer-urls=http://127.0.0.1:2380 --initial-advertise-peer-urls=http://127.0.0.1:2380 \
    --initial-cluster=pytest-stacks=http://127.0.0.1:2380 --initial-cluster-state=new \
    --listen-metrics-urls=http://127.0.0.1:2381 --log-level=warn
until_ok etcd 60 curl -sf http://127.0.0.1:2381/health

start kube-apiserver "$B/kubernetes/bin/kube-apiserver" \
    --etcd-servers=http://127.0.0.1:2379 --bind-address=0.0.0.0 --secure-port=6443 \
    --advertise-address=127.0.0.1 --service-cluster-ip-range=10.0.0.0/24 \
    --client-ca-file="$P/ca.crt" --tls-cert-file="$P/apiserver.crt" \
    --tls-private-key-file="$P/apiserver.key" \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$P/sa.pub" --service-account-signing-key-file="$P/sa.key" \
    --authorization-mode=Node,RBAC --endpoint-reconciler-type=none
until_ok kube-apiserver 120 curl -sf --cacert "$P/ca.crt" --cert "$P/admin.crt" \
    --key "$P/admin.key" "$API/readyz"

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
$K wait --for=condition=Established --timeout=60s crd/mpijobs.kubeflow.org >> "$L/apply.log"
TOKEN=$($K -n mpi-operator create token mpi-operator --duration=48h)
kubeconfig "$D/operator.kubeconfig" mpi-operator "token=$TOKEN"
unset TOKEN
$K apply -f "$S/node.yaml" >> "$L/apply.log"

start kwok "$B/kwok/bin/kwok" --kubeconfig="$D/admin.kubeconfig" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --cidr=10.244.0.0/16 --node-ip=10.96.0.10 --node-lease-duration-seconds=40 \
    -c "$B/kwok/files/node-initialize.yaml" -c "$B/kwok/files/node-heartbeat-with-lease.yaml" \
    -c "$B/kwok/files/pod-ready.yaml" -c "$B/kwok/files/pod-delete.yaml" \
    -c "$S/stages/pod-outcome.yaml"
# KUBECONFIG would win over --kubeConfig: the operator gets only its own credentials.
start mpi-operator env -u KUBECONFIG "$B/operator/bin/mpi-operator" \
    --kubeConfig="$D/operator.kubeconfig" --lock-namespace=mpi-operator -alsologtostderr

touch "$D/started"
say "control plane started"
set +e
wait -n "${PIDS[@]}"
code=$?
say "a component exited (status $code); stopping" >&2
exit 1
