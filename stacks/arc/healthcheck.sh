#!/bin/bash
# Healthy = Slurm is (stacks/slurm's check) AND A-REX's REST interface answers its info
# document over https with this start's user certificate.
set -eu
/usr/local/share/pytest-stacks/slurm/healthcheck.sh
globus=/home/submitter/.globus
code=$(curl -s -o /dev/null -w '%{http_code}' --max-time 4 \
    --cacert /etc/grid-security/certificates/ARC-TestCA-stacks.pem \
    --cert "$globus/usercert.pem" --key "$globus/userkey.pem" \
    'https://localhost:8443/arex/rest/1.0/info?schema=glue2' || true)
if [ "$code" != 200 ]; then echo "A-REX REST info: HTTP ${code:-none}"; exit 1; fi
