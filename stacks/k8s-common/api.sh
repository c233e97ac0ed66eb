# shellcheck shell=bash
# The API as the ready.sh of stacks/k8s-controlplane and stacks/k8s-node ask it: with curl and
# the admin's certificate (milliseconds each; a kubectl call starts a Go program, about 0.2 s
# of CPU, and the harness asks several times a second while a plane starts beside the other
# stacks). Sourced, not run; mounted at /opt/pytest-stacks/common like control-plane.sh.
#
# The API answers compact JSON in its types' field order to a user agent that does not name
# curl (it pretty-prints for curl), so a condition reads "type":"X","status":"Y".

api_get() { # path: the API's answer, or nothing
    local pki=/var/lib/k8s/pki
    curl -s -A pytest-stacks --max-time 5 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" \
        --key "$pki/admin.key" "https://127.0.0.1:6443$1" 2>/dev/null
}

api_post() { # path json-body: the API's answer, or nothing
    local pki=/var/lib/k8s/pki
    curl -s -A pytest-stacks --max-time 5 --cacert "$pki/ca.crt" --cert "$pki/admin.crt" \
        --key "$pki/admin.key" -X POST -H 'Content-Type: application/json' --data "$2" \
        "https://127.0.0.1:6443$1" 2>/dev/null
}

condition_true() { # object-json condition-type: True when that condition's status is True
    grep -q "\"type\":\"$2\",\"status\":\"True\"" <<< "$1" && echo True || echo no
}

# Established 2 s ago or more (the condition's time is in whole seconds, as the API server
# reads it; the container's clock is the server's): while a CRD's
# Established condition is younger than that, the API server holds every create of its objects
# for 2 s (apiextensions-apiserver's customresource_handler.go, for HA servers that may not have
# seen the CRD yet), and the probe's MPIJob waited those 2 s out in one bring-up of three.
settled() { # object-json: True when its Established condition is 2 s old or more
    local since
    since=$(grep -o '"type":"Established","status":"True","lastTransitionTime":"[^"]*"' <<< "$1" \
        | cut -d'"' -f12)
    [ -n "$since" ] && ((${EPOCHREALTIME/./} - $(date -d "$since" +%s)000000 >= 2000000)) \
        && echo True || echo no
}

# shellcheck disable=SC2034  # readyz, crd and lease are read by the ready.sh that calls it
operator_plane() { # sets readyz, crd and lease: what every plane with the operator must answer
    local definition
    readyz=$(api_get /readyz)
    definition=$(api_get \
        /apis/apiextensions.k8s.io/v1/customresourcedefinitions/mpijobs.kubeflow.org)
    crd=$(condition_true "$definition" Established)
    [ "$crd" != True ] || [ "$(settled "$definition")" = True ] || crd=settling
    lease=$(api_get /apis/coordination.k8s.io/v1/namespaces/mpi-operator/leases/mpi-operator \
        | grep -o '"holderIdentity":"[^"]*"' | cut -d'"' -f4)
}
