# shellcheck shell=bash
# What the entrypoints of stacks/k8s-controlplane and stacks/k8s-node share: their paths, a
# fresh PKI and kubeconfigs, and the supervision of the components they start. Sourced, not
# run. Each of those images is built from its own folder (the Docker build context), which
# cannot COPY a file from here; so both compose files mount this folder read-only at
# /opt/pytest-stacks/common, and this file is the one copy there is.
#
# The caller runs with `set -euo pipefail`; `say` may be redefined after sourcing.

readonly programs_dir=/opt/k8s # the host-built programs, mounted read-only
# shellcheck disable=SC2034  # used by the entrypoints: the files their image adds
readonly stack_files_dir=/opt/pytest-stacks
readonly state_dir=/var/lib/k8s
readonly log_dir=/var/log/k8s
readonly pki_dir=$state_dir/pki
readonly api_url=https://127.0.0.1:6443
# shellcheck disable=SC2034  # used by the entrypoints
readonly kubectl=$programs_dir/kubernetes/bin/kubectl

# Each line says when since the start, in ms (what a slow start waited on is in the log).
plane_started=${EPOCHREALTIME/./}
say() { echo "pytest-stacks: [$(( (${EPOCHREALTIME/./} - plane_started) / 1000 ))ms] $*"; }

# --- PKI -----------------------------------------------------------------------------------
# A command whose files are readable by root only: umask 077 in a subshell, so the caller's
# umask is never changed.
privately() { # command...
    (umask 077 && "$@")
}

# ECDSA P-256, as kubeadm makes with its ECDSA option: every component here (TLS, the
# service-account token signer, ES256) takes it, and a key takes milliseconds where an RSA
# 2048 key took 0.2 s (the control plane needs six to twelve of them at every start).
new_private_key() { # file
    privately openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null
}

# A key and a certificate signed by the cluster's CA: $pki_dir/NAME.key and NAME.crt.
sign_certificate() { # name subject extended-key-usage [extra extension line]
    local name=$1 subject=$2 usage=$3 extension=${4:-}
    new_private_key "$pki_dir/$name.key"
    openssl req -new -key "$pki_dir/$name.key" -out "$pki_dir/$name.csr" -subj "$subject" \
        2>/dev/null
    printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=%s\n%s\n' \
        "$usage" "$extension" > "$pki_dir/$name.ext"
    openssl x509 -req -in "$pki_dir/$name.csr" -CA "$pki_dir/ca.crt" -CAkey "$pki_dir/ca.key" \
        -CAcreateserial -out "$pki_dir/$name.crt" -days 30 -extfile "$pki_dir/$name.ext" \
        2>/dev/null
}

# The CA, and what every control plane has: the apiserver's serving certificate (for
# 127.0.0.1, the address it advertises, the service IP and the in-cluster names), the client
# certificates of the admin, the controller manager and the scheduler, and the service-account
# signing key pair. The caller signs what else it needs, then calls finish_pki.
make_control_plane_pki() { # apiserver's advertise address [masters]
    local advertised=$1 addresses=IP:127.0.0.1 group=""
    [ "${2:-}" != masters ] || group=/O=system:masters
    [ "$advertised" = 127.0.0.1 ] || addresses+=",IP:$advertised"
    mkdir -p "$pki_dir"
    new_private_key "$pki_dir/ca.key"
    openssl req -x509 -new -key "$pki_dir/ca.key" -out "$pki_dir/ca.crt" -days 30 \
        -subj "/CN=pytest-stacks-ca" -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
    sign_certificate apiserver "/CN=kube-apiserver" serverAuth \
        "subjectAltName=$addresses,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
    sign_certificate admin "/CN=kubernetes-admin/O=system:masters" clientAuth
    # With "masters": both in system:masters, so a plane may start them before RBAC's
    # bootstrap roles (their own among them) exist (stacks/k8s-controlplane says why).
    sign_certificate kube-controller-manager "/CN=system:kube-controller-manager$group" clientAuth
    sign_certificate kube-scheduler "/CN=system:kube-scheduler$group" clientAuth
    new_private_key "$pki_dir/sa.key"
    openssl pkey -in "$pki_dir/sa.key" -pubout -out "$pki_dir/sa.pub"
}

# The signing requests, their extension files and the CA's serial go; keys and certificates stay.
finish_pki() {
    rm -f "$pki_dir"/*.csr "$pki_dir"/*.ext "$pki_dir/ca.srl"
}

# A kubeconfig for the API at $api_url, trusting the cluster's CA, readable by root only.
write_kubeconfig() { # file user (certificate-name | token=TOKEN)
    local file=$1 user=$2 credential=$3 auth
    if [[ $credential == token=* ]]; then
        auth="    token: ${credential#token=}"
    else
        auth="    client-certificate-data: $(base64 -w0 "$pki_dir/$credential.crt")
    client-key-data: $(base64 -w0 "$pki_dir/$credential.key")"
    fi
    privately write_kubeconfig_file "$file" "$user" "$auth"
}

write_kubeconfig_file() { # file user auth-lines
    cat > "$1" <<KUBECONFIG
apiVersion: v1
kind: Config
clusters:
- name: pytest-stacks
  cluster:
    server: $api_url
    certificate-authority-data: $(base64 -w0 "$pki_dir/ca.crt")
users:
- name: $2
  user:
$3
contexts:
- name: pytest-stacks
  context: {cluster: pytest-stacks, user: $2}
current-context: pytest-stacks
KUBECONFIG
}

# --- components ----------------------------------------------------------------------------
# The components started so far: supervise watches them.
background_pids=()
declare -A component_names=() # pid -> name, for supervise's message

start_component() { # name command...: runs it in the background, its output in $log_dir/NAME.log
    local name=$1
    shift
    "$@" > "$log_dir/$name.log" 2>&1 &
    background_pids+=("$!")
    component_names[$!]=$name
    say "started $name"
}

# The MPI Operator upstream runs as a Deployment: when it exits, its pod's container is started
# again (restartPolicy Always). It exits on purpose when it cannot renew its leader lease within
# its hard-coded 5 s (klog.Fatalf, status 255), which a loaded API server can cause; here it is
# started again the same way instead of taking the whole stack down. Each restart is written
# to its log. Every other component exiting still ends the stack (supervise).
start_restarting_component() { # name command...
    local name=$1
    shift
    (
        child=""
        trap '[ -n "$child" ] && kill -TERM "$child" 2>/dev/null; exit 0' TERM INT
        restarts=0
        while true; do
            "$@" >> "$log_dir/$name.log" 2>&1 &
            child=$!
            status=0
            wait "$child" || status=$? # the entrypoint runs under set -e
            restarts=$((restarts + 1))
            echo "pytest-stacks: $name exited (status $status); started again" \
                "(restart $restarts), as its Deployment's pod would be" >> "$log_dir/$name.log"
            sleep 1
        done
    ) &
    background_pids+=("$!")
    component_names[$!]=$name
    say "started $name (started again whenever it exits)"
}

# etcd for the control plane: plain HTTP on loopback, so it needs no certificate and can start
# while the PKI is made. A new member campaigns once its election timeout has passed (1 s by
# default, measured: "no leader" for 1.0 s while the PKI was done after 0.1 s, and the API
# server waited on it); one member on loopback has no peer to miss a heartbeat from, so a
# tenth of etcd's defaults (heartbeat 10 ms, election 100 ms; etcd asks for 5x or more).
start_etcd() {
    start_component etcd "$programs_dir/etcd/bin/etcd" --name=pytest-stacks \
        --data-dir="$state_dir/etcd" --heartbeat-interval=10 --election-timeout=100 \
        --listen-client-urls=http://127.0.0.1:2379 --advertise-client-urls=http://127.0.0.1:2379 \
        --listen-peer-urls=http://127.0.0.1:2380 --initial-advertise-peer-urls=http://127.0.0.1:2380 \
        --initial-cluster=pytest-stacks=http://127.0.0.1:2380 --initial-cluster-state=new \
        --listen-metrics-urls=http://127.0.0.1:2381 --log-level=warn
}

wait_until_ok() { # what seconds command...: exits the entrypoint if the command never succeeds
    local what=$1 seconds=$2
    shift 2
    for _ in $(seq 1 $((seconds * 10))); do
        if "$@" > /dev/null 2>&1; then return 0; fi
        sleep 0.1
    done
    say "$what did not come up in ${seconds}s" >&2
    exit 1
}

retry_until_ok() { # seconds log command...: again every 0.2 s until it succeeds, output in log
    local deadline=$((SECONDS + $1)) log=$2
    shift 2
    until "$@" >> "$log" 2>&1; do
        ((SECONDS < deadline)) || return 1
        sleep 0.2
    done
}

# --- the MPI Operator's release --------------------------------------------------------------
# Its release manifest (CRD, namespace, RBAC) from its pinned module, without its Deployment
# (the one document of that kind): the operator runs here, out of cluster, with exactly that
# RBAC. Filtered, not applied and then deleted: one kubectl call fewer at every start.
operator_manifest_without_deployment() { # file written
    local release=$programs_dir/operator/files/mpi-operator.yaml
    awk 'BEGIN { RS = "\n---\n"; ORS = "\n---\n" } !/(^|\n)kind: Deployment\n/' \
        "$release" > "$1"
    if ! grep -q '^kind: Deployment$' "$release" || grep -q '^kind: Deployment$' "$1" \
        || ! grep -q '^kind: CustomResourceDefinition$' "$1"; then
        say "the operator's release manifest is not one Deployment beside the rest: $release" >&2
        exit 1
    fi
}

# The operator's CRD alone, created the moment the API serves (as YAML: the API takes it), so
# that it is Established, and settled (api.sh's `settled`), by the time the plane is otherwise
# ready: with the whole release, applied by kubectl (a Go program, its discovery on an API just
# started), it was Established 1 s later. The release applied after it changes nothing of it.
create_mpijob_crd() {
    local release=$programs_dir/operator/files/mpi-operator.yaml pki=$pki_dir code
    awk 'BEGIN { RS = "\n---\n"; ORS = "\n" } /(^|\n)kind: CustomResourceDefinition\n/' \
        "$release" > "$state_dir/mpijob-crd.yaml"
    code=$(curl -s -o /dev/null -w '%{http_code}' -A pytest-stacks --max-time 10 \
        --cacert "$pki/ca.crt" --cert "$pki/admin.crt" --key "$pki/admin.key" -X POST \
        -H 'Content-Type: application/yaml' --data-binary "@$state_dir/mpijob-crd.yaml" \
        "$api_url/apis/apiextensions.k8s.io/v1/customresourcedefinitions")
    [ "$code" = 201 ] || [ "$code" = 409 ]
}

# True once the MPIJob CRD is Established and the API serves MPIJobs (asked with curl: api.sh
# must be sourced). The API refuses a new CRD's objects (429, Retry-After: 1 s) until their
# storage is ready, a few tens of ms; the operator's client, refused at its first List, waited
# that whole second before it asked again (seen: its lease 1.05 s after its start, the
# readiness waiting on it). Asked here every 0.1 s, the operator's first List is answered.
mpijobs_served() {
    [ "$(condition_true \
        "$(api_get /apis/apiextensions.k8s.io/v1/customresourcedefinitions/mpijobs.kubeflow.org)" \
        Established)" = True ] \
        && api_get '/apis/kubeflow.org/v2beta1/mpijobs?limit=1' | grep -q '"kind":"MPIJobList"'
}

# A token of a service account from the TokenRequest API (curl, as api.sh asks; a kubectl
# call starts a Go program and reads the API's discovery first). Prints nothing on failure.
service_account_token() { # namespace name seconds
    api_post "/api/v1/namespaces/$1/serviceaccounts/$2/token" \
        "{\"apiVersion\":\"authentication.k8s.io/v1\",\"kind\":\"TokenRequest\",\"spec\":{\"expirationSeconds\":$3}}" \
        | grep -o '"token":"[^"]*"' | cut -d'"' -f4
}

# The entrypoint is PID 1 (the compose services set no `init`): a signal it does not trap is
# ignored, so `docker stop` would wait out its grace period and then kill everything. On TERM
# or INT the components stop newest first, each waited for before the next gets TERM (the
# apiserver, stopped after etcd, would retry etcd until killed), for 3 s at most; then every
# other background job (such as the node's image import) gets TERM. Whatever still runs after
# 8 s in all (docker stop's default grace is 10 s) is killed; all are waited for; the
# container exits.
# shellcheck disable=SC2317,SC2329  # called by the trap below (shellcheck 0.9 says SC2317)
stop_components() {
    local deadline=$((SECONDS + 8)) index pid others
    trap - TERM INT
    say "stopping"
    for ((index = ${#background_pids[@]} - 1; index >= 0; index--)); do
        stop_process "${background_pids[index]}" $((SECONDS + 3 < deadline ? SECONDS + 3 : deadline))
    done
    mapfile -t others < <(jobs -p)
    for pid in "${others[@]}"; do
        stop_process "$pid" "$deadline"
    done
    mapfile -t others < <(jobs -p)
    if ((${#others[@]})); then
        kill -KILL "${others[@]}" 2>/dev/null || true
    fi
    wait 2>/dev/null || true # (no "Killed" job reports in the log)
    exit 0
}

# shellcheck disable=SC2317,SC2329  # called by stop_components (shellcheck 0.9 says SC2317)
stop_process() { # pid deadline (in $SECONDS): TERM, then wait for it until the deadline
    local pid=$1 deadline=$2
    kill -TERM "$pid" 2>/dev/null || return 0
    while ((SECONDS < deadline)); do
        kill -0 "$pid" 2>/dev/null || return 0 # bash reaps its children as they exit
        sleep 0.1
    done
}
trap stop_components TERM INT

# Until one component exits; then the container exits (the harness reports an infrastructure
# error with every component's log).
supervise() {
    local status exited="" name
    set +e
    wait -n -p exited "${background_pids[@]}"
    status=$?
    name=${component_names[$exited]:-}
    if [ -n "$name" ]; then
        say "$name exited (status $status); stopping. The end of its log:" >&2
        tail -n 15 "$log_dir/$name.log" >&2
    else
        say "a component exited (status $status); stopping" >&2
    fi
    exit 1
}
