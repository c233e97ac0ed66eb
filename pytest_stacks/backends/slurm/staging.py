"""Resource-side staging for Slurm: the batch script itself downloads a job's remote inputs
before the payload and uploads its remote outputs after it, on the node, with the node's curl
(SigV4-signed, path-style S3 requests), the way a site's job wrappers do. The driver only
writes URLs and the credentials' directory into the script: it never holds the bytes or the
keys, and the key pair reaches curl through a file descriptor, never a command line.

A failed download ends the job before its payload runs (exit :data:`STAGE_IN_FAILED`), a
failed upload after it (exit :data:`STAGE_OUT_FAILED`), each with the store's own answer (its
S3 error document) on the job's stderr.
"""

from __future__ import annotations

import shlex

from pytest_stacks.backends import remote_files
from pytest_stacks.contract import JobSpec

STAGE_IN_FAILED = 90
STAGE_OUT_FAILED = 91


#: One request: s3 METHOD URL FILE. The payload hash header: curl before 8 (bookworm's 7.88)
#: leaves it out of a SigV4 request, and S3 servers require it.
HELPER = """__pytest_stacks_s3() {
    local creds=CREDS
    local url="https://${2#s3://}" how=(-o "$3")
    [ "$1" = put ] && how=(-T "$3" -o /dev/null)
    curl -sS --fail-with-body --retry 2 --aws-sigv4 "aws:amz:us-east-1:s3" \\
        -H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "${how[@]}" -K <(printf \\
        'user = "%s:%s"\\n' "$(cat "$creds/access_key")" "$(cat "$creds/secret_key")") "$url"
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
        lines.append(f"__pytest_stacks_s3 get {shlex.quote(url)} {shlex.quote(name)} || "
                     f"{{ echo 'pytest-stacks: staging {name} in from {url} failed' >&2; "
                     f"rm -f {shlex.quote(name)}; exit {STAGE_IN_FAILED}; }}")
    lines += ["(", spec.body.rstrip("\n"), ")", "__status=$?"]
    for name, url in spec.remote_outputs.items():
        lines.append(f"__pytest_stacks_s3 put {shlex.quote(url)} {shlex.quote(name)} || "
                     f"{{ echo 'pytest-stacks: staging {name} out to {url} failed' >&2; "
                     f"exit {STAGE_OUT_FAILED}; }}")
    lines.append("exit $__status")
    return "\n".join(line for line in lines if line) + "\n"
