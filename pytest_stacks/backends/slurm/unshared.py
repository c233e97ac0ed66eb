"""Slurm without a shared file system between the login node and the compute nodes
(``options.shared_fs: false``; at a site: nodes with local scratch only).

What a shared-fs client does breaks there: a file it writes into the job's directory on the
login node is not on the node, and a file the job writes is not on the login node afterwards.
So the job carries what it needs in the one thing Slurm itself moves to the node, the batch
script (sbatch sends it to slurmctld, which hands it to the batch host's slurmd): the script
makes the job's working directory on the node and unpacks the inputs there (base64 in the
script), then runs the usual staged script (:mod:`.staging`: remote inputs fetched, the
payload, remote outputs uploaded, by the node's curl).

Nothing the job writes comes back: not its output files (refused at submit, with the way out:
``remote_outputs``), not its stdout (Slurm writes it on the node and, without a shared file
system, brings it nowhere). What the client still learns is what slurmctld knows: the job's
state and exit code.
"""

from __future__ import annotations

import base64
import re
import shlex

from pytest_stacks.backends.slurm import staging
from pytest_stacks.contract import JobSpec

#: The job's own working directory could not be made on the node.
WORKDIR_FAILED = 92
#: slurmctld's default ``max_script_size`` (SchedulerParameters): 4 MiB.
MAX_SCRIPT = 4 * 1024 * 1024
_NAME = re.compile(r"^[A-Za-z0-9._][A-Za-z0-9._-]*$")
_END = "__PYTEST_STACKS_INPUT__"  # never a base64 line: '_' is not in its alphabet
WHY = ("no shared file system between the login node and the compute nodes "
       "(options.shared_fs: false)")


def refusal(spec: JobSpec) -> str:
    """Why the job cannot be run here as asked, or "" when it can."""
    if spec.outputs:
        return (f"refused at submit: output files {list(spec.outputs)} would stay on the node "
                f"the job ran on: {WHY}, and Slurm brings no file back. Name them with an "
                f"s3:// URL (remote_outputs), which the node uploads itself")
    if spec.container:
        return (f"refused at submit: container {spec.container!r}: {WHY}; this driver runs "
                f"container jobs only where the login node's job directory is the node's")
    bad = [n for n in spec.inputs if not _NAME.match(n) or n in (".", "..")]
    if bad:
        return (f"input files {bad}: a plain name in the working directory (letters, digits, "
                f"'.', '_', '-'; not first '-')")
    return ""


def script(spec: JobSpec, workdir: str, exports: str) -> str:
    """The batch script: the working directory made on the node, the inputs unpacked in it,
    then the staged script (its own ``#!`` line dropped). ValueError if it is larger than
    slurmctld takes by default."""
    lines = ["#!/bin/bash",
             f"# pytest-stacks: {WHY}: the job makes its directory and unpacks its inputs",
             f"mkdir -p -- {shlex.quote(workdir)} && cd -- {shlex.quote(workdir)} || "
             f"{{ echo 'pytest-stacks: cannot make {workdir} on '\"$(hostname)\" >&2; "
             f"exit {WORKDIR_FAILED}; }}"]
    for name, data in spec.inputs.items():
        encoded = base64.encodebytes(bytes(data)).decode("ascii")
        lines.append(f"base64 -d > {shlex.quote(name)} <<'{_END}' || exit {WORKDIR_FAILED}\n"
                     f"{encoded}{_END}")
    rest = staging.staged(spec, exports).split("\n", 1)[1]
    text = "\n".join(lines) + "\n" + rest
    if len(text.encode()) > MAX_SCRIPT:
        raise ValueError(
            f"refused at submit: the batch script with the job's inputs is "
            f"{len(text.encode())} bytes, over slurmctld's default max_script_size "
            f"({MAX_SCRIPT}): {WHY}, so inputs travel in the script. Stage large inputs from "
            f"an s3:// URL (remote_inputs) instead")
    return text
