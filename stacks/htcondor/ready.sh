#!/bin/sh
# pytest-stacks-ready [SECONDS]: exit 0 only when the pool is ready for jobs, i.e. the
# master's ready ad says IsReady (every daemon alive) AND the startd reported Ready.
#
# `condor_who -wait:N EXPR` alone is not enough on 23.9.6: it exits 0 even when EXPR never
# became true (timeout), and prints nothing (still exit 0) before the master is up. With the
# startd on hold it reports IsReady = true and no STARTD_State. So the printed ad is checked.
wait="${1:-0}"
out=$(condor_who -wait:"${wait}" 'IsReady && STARTD_State =?= "Ready"' 2>&1) || true
if printf '%s\n' "$out" | grep -qx 'IsReady = true' \
   && printf '%s\n' "$out" | grep -qx 'STARTD_State = "Ready"'; then
    echo ready
    exit 0
fi
echo "not ready after ${wait}s:" >&2
printf '%s\n' "$out" >&2
exit 1
