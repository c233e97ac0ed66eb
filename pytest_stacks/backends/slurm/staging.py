"""Resource-side staging for Slurm: the batch script itself downloads a job's remote inputs
before the payload and uploads its remote outputs after it, on the node, with the node's curl
(:mod:`~pytest_stacks.backends.s3_curl`), the way a site's job wrappers do. The driver only
writes URLs and the credentials' directory into the script: it never holds the bytes or the
keys.

A failed download ends the job before its payload runs (exit :data:`STAGE_IN_FAILED`); a
failed upload after a payload that succeeded ends it with :data:`STAGE_OUT_FAILED` (a payload
that failed keeps its own exit code). Either way the store's own answer and curl's are on the
job's stderr.
"""

from __future__ import annotations

from pytest_stacks.backends import remote_files, s3_curl
from pytest_stacks.contract import JobSpec

STAGE_IN_FAILED = 90
STAGE_OUT_FAILED = 91


def staged(spec: JobSpec, exports: str) -> str:
    """The batch script: the environment, downloads, the payload in a subshell (its ``exit``
    ends only the payload), uploads, the payload's exit code."""
    if not (spec.remote_inputs or spec.remote_outputs):
        return f"#!/bin/bash\n{exports}{spec.body}\n"
    remote_files.check(spec)
    lines = ["#!/bin/bash", exports.rstrip("\n"), s3_curl.helper(spec.credentials)]
    lines += [s3_curl.download(name, url, f"exit {STAGE_IN_FAILED}")
              for name, url in spec.remote_inputs.items()]
    lines += ["(", ":", spec.body.rstrip("\n"), ")", "__status=$?"]
    lines += [s3_curl.upload(name, url, f"[ $__status -ne 0 ] || __status={STAGE_OUT_FAILED}")
              for name, url in spec.remote_outputs.items()]
    lines.append("exit $__status")
    return "\n".join(line for line in lines if line) + "\n"
