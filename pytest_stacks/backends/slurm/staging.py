"""Resource-side staging for Slurm: the batch script itself downloads a job's remote inputs
before the payload and uploads its remote outputs after it, on the node, with the node's curl
(SigV4-signed, path-style S3 requests), the way a site's job wrappers do. The driver only
writes URLs and the credentials' directory into the script: it never holds the bytes or the
keys, and the key pair reaches curl through a file descriptor, never a command line.

A failed download ends the job before its payload runs (exit :data:`STAGE_IN_FAILED`); a
failed upload after a payload that succeeded ends it with :data:`STAGE_OUT_FAILED` (a payload
that failed keeps its own exit code). Either way the store's own answer (its S3 error
document) and curl's are on the job's stderr. A download lands under a temporary name first,
so the payload never sees a partial file.
"""

from __future__ import annotations

import shlex

from pytest_stacks.backends import remote_files
from pytest_stacks.contract import JobSpec

STAGE_IN_FAILED = 90
STAGE_OUT_FAILED = 91

#: One request: s3 get|put URL FILE. The payload hash header: curl before 8 (bookworm's 7.88)
#: leaves it out of a SigV4 request, and S3 servers require it. A store that accepts the
#: connection and never answers fails the request in minutes, not at the job's walltime.
HELPER = """__pytest_stacks_s3() {
    local creds=CREDS url="https://${2#s3://}" answer how
    answer=$(mktemp) || return 1
    if [ "$1" = get ]; then how=(-o "$3.part"); else how=(-T "$3" -o "$answer"); fi
    if curl -sS --fail-with-body --retry 2 --connect-timeout 20 --max-time 600 \\
        --aws-sigv4 "aws:amz:us-east-1:s3" -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" \\
        "${how[@]}" -K <(printf 'user = "%s:%s"\\n' "$(cat "$creds/access_key")" \\
        "$(cat "$creds/secret_key")") "$url"; then
        rm -f "$answer"
        if [ "$1" = get ]; then mv -f -- "$3.part" "$3"; fi
        return 0
    fi
    cat "$answer" "$3.part" >&2 2>/dev/null; echo >&2
    rm -f "$answer" "$3.part"
    return 1
}
"""


def staged(spec: JobSpec, exports: str) -> str:
    """The batch script: the environment, downloads, the payload in a subshell (its ``exit``
    ends only the payload), uploads, the payload's exit code."""
    if not (spec.remote_inputs or spec.remote_outputs):
        return f"#!/bin/bash\n{exports}{spec.body}\n"
    remote_files.check(spec)
    lines = ["#!/bin/bash", exports.rstrip("\n"), HELPER.replace("CREDS", shlex.quote(
        spec.credentials.rstrip("/")))]
    for name, url in spec.remote_inputs.items():
        lines.append(f"__pytest_stacks_s3 get {url} {name} || "
                     f"{{ echo 'pytest-stacks: staging {name} in from {url} failed' >&2; "
                     f"exit {STAGE_IN_FAILED}; }}")
    lines += ["(", ":", spec.body.rstrip("\n"), ")", "__status=$?"]
    for name, url in spec.remote_outputs.items():
        lines.append(f"__pytest_stacks_s3 put {url} {name} || "
                     f"{{ echo 'pytest-stacks: staging {name} out to {url} failed' >&2; "
                     f"[ $__status -ne 0 ] || __status={STAGE_OUT_FAILED}; }}")
    lines.append("exit $__status")
    return "\n".join(line for line in lines if line) + "\n"
