#!/bin/bash
# Starts the stack's object store with everything made for this run, inside this container:
# - a certificate authority and the server's certificate for STORE_HOST (the nodes trust the
#   CA from the shared trust volume; its key never leaves this container);
#   a restart of this container makes new ones (and new keys): the stack is per run.
# - the root credentials the gateway accepts, written only to the shared credentials volume
#   the batch nodes mount read-only ("store"), plus a set the gateway has never seen
#   ("unknown"), for the tests of a refused signature. The harness never reads either;
# - the bucket STORE_BUCKET, made through the S3 API (a signed PUT), as any client would.
# /run/pytest-stacks/store-ready appears once the bucket answers; the access log records
# every request with the client's address.
set -euo pipefail

host=${STORE_HOST:?}
bucket=${STORE_BUCKET:?}
trust=/run/pytest-stacks/store-trust
creds=/run/pytest-stacks/store-credentials
data=/srv/store
log_dir=/var/log/pytest-stacks
private=/run/store-private
mkdir -p "$trust" "$creds/store" "$creds/unknown" "$data" "$log_dir" "$private"
chmod 0700 "$private"

# A year: a stack kept with `pytest-stacks up` is borrowed by later runs for days.
openssl req -x509 -newkey rsa:2048 -nodes -days 365 -subj "/CN=pytest-stacks store CA" \
    -keyout "$private/ca.key" -out "$private/ca.crt" 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj "/CN=$host" \
    -keyout "$private/tls.key" -out "$private/tls.csr" 2>/dev/null
printf 'subjectAltName=DNS:%s\n' "$host" > "$private/san.ext"
openssl x509 -req -in "$private/tls.csr" -CA "$private/ca.crt" -CAkey "$private/ca.key" \
    -CAserial "$private/ca.srl" -CAcreateserial -days 365 -extfile "$private/san.ext" \
    -out "$private/tls.crt" 2>/dev/null
# Shared whole or not at all: the nodes read it as soon as it is there.
cp "$private/ca.crt" "$trust/.ca.crt.tmp" && mv -f "$trust/.ca.crt.tmp" "$trust/ca.crt"

for set in store unknown; do
    for part in access_key:10 secret_key:20; do
        openssl rand -hex "${part#*:}" | tr -d '\n' > "$creds/$set/.${part%%:*}.tmp"
        mv -f "$creds/$set/.${part%%:*}.tmp" "$creds/$set/${part%%:*}"
    done
done
chmod 0755 "$creds" "$creds/store" "$creds/unknown"
chmod 0444 "$creds"/*/access_key "$creds"/*/secret_key

ROOT_ACCESS_KEY=$(cat "$creds/store/access_key")
ROOT_SECRET_KEY=$(cat "$creds/store/secret_key")
export ROOT_ACCESS_KEY ROOT_SECRET_KEY
/opt/store/bin/versitygw --port :443 --cert "$private/tls.crt" --key "$private/tls.key" \
    --access-log "$log_dir/access.log" --quiet posix "$data" > "$log_dir/versitygw.log" 2>&1 &
gateway=$!

config=$private/curl.conf  # the key pair reaches curl in a file, never on a command line
printf 'user = "%s:%s"\n' "$ROOT_ACCESS_KEY" "$ROOT_SECRET_KEY" > "$config"
# The payload hash header: curl before 8 (bookworm's 7.88) leaves it out of a SigV4
# request, and the gateway requires it.
made=""
for _ in $(seq 1 400); do
    code=$(curl -sS -K "$config" --aws-sigv4 "aws:amz:us-east-1:s3" \
        -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" --cacert "$trust/ca.crt" \
        --resolve "$host:443:127.0.0.1" -X PUT "https://$host/$bucket" -o "$log_dir/bucket.xml" \
        -w '%{http_code}' 2>/dev/null || true)
    # 409 BucketAlreadyOwnedByYou: a restarted container finds its bucket on the volume.
    if [ "$code" = 200 ] || grep -q BucketAlreadyOwnedByYou "$log_dir/bucket.xml" 2>/dev/null
    then made=yes; break; fi
    if ! kill -0 "$gateway" 2>/dev/null; then
        echo "versitygw exited:" >&2; cat "$log_dir/versitygw.log" >&2; exit 1
    fi
    sleep 0.05
done
if [ -z "$made" ]; then
    echo "the bucket $bucket could not be made (last answer ${code:-none}):" >&2
    cat "$log_dir/bucket.xml" "$log_dir/versitygw.log" >&2 || true
    exit 1
fi
touch /run/pytest-stacks/store-ready
wait "$gateway"
