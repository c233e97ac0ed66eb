"""The pure half of the HTCondor driver: a job spec to a staged submit description, and a job
ad back to a contract status.

Neither touches a schedd, so both are the same whichever :class:`~.api.Schedd` the driver
drives, and the driver module stays about the calls and their failure modes.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_stacks.backends.htcondor import staging
from pytest_stacks.backends.htcondor.api import STATUS_NAMES
from pytest_stacks.backends.htcondor.containers import container_universe
from pytest_stacks.contract import JobHandle, JobSpec, JobState, JobStatus

STDOUT_FILE = ".pytest-stacks.out"
STDERR_FILE = ".pytest-stacks.err"
SCRIPT_FILE = "job.sh"
#: condor_submit's spelling of an empty file list (``transfer_output_files = ""``): "none".
EMPTY_LIST = '""'

_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_JOB_ID = re.compile(r"^(\d+)\.(\d+)$")


# ====================================================================== submit descriptions


def describe_job(spec: JobSpec, root: Path, leave_in_queue: str | None,
                 sandboxes: Mapping[str, str] | None = None) -> dict[str, str]:
    """Stage the job's files under ``root`` and return its submit description.

    ``leave_in_queue`` overrides the submitting client's default ``LeaveJobInQueue``; ``None``
    keeps the client's own. ``sandboxes``: the images the execute nodes keep unpacked
    (:func:`~.containers.stack_sandboxes`). Raises ValueError for a spec HTCondor cannot carry
    faithfully.
    """
    _check_spec(spec, root)
    staging.check(spec, set(spec.inputs))
    inputs = root / "inputs"
    iwd = root / "iwd"
    inputs.mkdir(parents=True)
    iwd.mkdir()
    for name, data in spec.inputs.items():
        (inputs / name).write_bytes(data)
    # Values HTCondor's submit language would mangle ($ macros, newlines) travel inside
    # the script instead of `arguments` / `environment`.
    native_args = all(_submit_safe(a) for a in spec.args)
    native_env = {k: v for k, v in spec.env.items() if _submit_safe(v)}
    script_env = {k: v for k, v in spec.env.items() if k not in native_env}
    script = root / SCRIPT_FILE
    script.write_text(_wrap_script(spec, script_env, None if native_args else spec.args))
    script.chmod(0o755)
    description = {
        "universe": "vanilla",
        "executable": str(script),
        "initialdir": str(iwd),
        "output": STDOUT_FILE,
        "error": STDERR_FILE,
        "should_transfer_files": "YES",
        "when_to_transfer_output": "ON_EXIT",
        "request_cpus": str(spec.cpus),
        "request_memory": "128MB",
        "batch_name": spec.name if _submit_safe(spec.name) else "job",
        "allowed_execute_duration": str(int(spec.walltime_s)),
    }
    if spec.args and native_args:
        description["arguments"] = _v2_join(spec.args)
    if native_env:
        description["environment"] = _v2_join(f"{k}={v}" for k, v in native_env.items())
    if spec.inputs or spec.remote_inputs:
        description["transfer_input_files"] = ",".join(
            [*(str(inputs / name) for name in spec.inputs), *spec.remote_inputs.values()])
    # Always a list, so only the declared outputs (and stdout/stderr) come back. Without one
    # the starter returns every new or changed file, and to tell a file the job touched in its
    # first second by its mtime it sleeps 1 s after the input transfer of every such job
    # (FileTransfer, upload_changed_files). `""` is condor_submit's spelling of the empty list.
    description["transfer_output_files"] = ",".join([*spec.outputs, *spec.remote_outputs]) \
        or EMPTY_LIST
    description.update(staging.submit_commands(spec))
    if leave_in_queue is not None:
        description["leave_in_queue"] = leave_in_queue
    if spec.container:
        description.update(container_universe(spec.container, sandboxes))
    return description


def _check_spec(spec: JobSpec, root: Path) -> None:
    for name in [*spec.inputs, *spec.outputs]:
        if not name or "/" in name or name in (".", "..") or "," in name or "$" in name:
            raise ValueError(f"file name {name!r} must be a plain name (no '/', ',' or '$')")
        if name in (STDOUT_FILE, STDERR_FILE):
            raise ValueError(f"file name {name!r} is reserved by the driver")
    for key in spec.env:
        if not _ENV_NAME.match(key):
            raise ValueError(f"environment variable name {key!r} is not valid")
    if "$" in str(root) or "," in str(root):
        raise ValueError(f"run directory {root} must not contain '$' or ','")


def _submit_safe(value: str) -> bool:
    """Whether ``value`` survives HTCondor's submit language unchanged inside V2 quoting."""
    return "$" not in value and all(c.isprintable() for c in value)


def _v2_join(words: Any) -> str:
    """New-syntax quoting for ``arguments``/``environment``: double quotes around the whole,
    single quotes around each word, quotes inside doubled."""
    quoted = ["'" + w.replace("'", "''").replace('"', '""') + "'" for w in words]
    return '"' + " ".join(quoted) + '"'


def _wrap_script(spec: JobSpec, env: Mapping[str, str], args: Sequence[str] | None) -> str:
    """The executable: the user's script under bash, with what the submit language cannot
    carry (values with ``$`` or newlines) exported or set here instead. In a container image
    under the image's own ``/bin/sh``: an image need not have bash (the probe image has only
    BusyBox), and a missing interpreter ends the job before it writes anything."""
    lines = ["#!/bin/sh" if spec.container else "#!/bin/bash"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    if args is not None:
        lines.append("set -- " + " ".join(shlex.quote(a) for a in args))
    return "\n".join(lines) + "\n" + staging.wrapped(spec, spec.body) + "\n"


# ====================================================================== job ads


def job_ids_of(job_ids: Sequence[str]) -> list[str]:
    """The ids that name a job (``cluster.proc``), once each, in order."""
    return [j for j in dict.fromkeys(job_ids) if _JOB_ID.match(j)]


def job_constraint(job_ids: Sequence[str]) -> str:
    """A constraint matching exactly ``job_ids``; ``false`` when none is a job id."""
    parts = []
    for job_id in job_ids:
        match = _JOB_ID.match(job_id)
        if match:
            parts.append(f"(ClusterId == {int(match[1])} && ProcId == {int(match[2])})")
    return " || ".join(parts) if parts else "false"


def ad_id(ad: Mapping[str, Any]) -> str:
    return f"{int(ad['ClusterId'])}.{int(ad['ProcId'])}"


def native_state(ad: Mapping[str, Any]) -> str:
    code = ad.get("JobStatus")
    return f"{code} ({STATUS_NAMES.get(code, 'Unknown')})" if isinstance(code, int) else "?"


def job_status(handle: JobHandle, ad: Mapping[str, Any]) -> JobStatus:
    code = ad.get("JobStatus")
    native = native_state(ad)
    exit_code = ad.get("ExitCode")
    exit_code = exit_code if isinstance(exit_code, int) and not isinstance(
        exit_code, bool) else None
    if code == 1:
        return JobStatus(handle, JobState.PENDING, native)
    if code in (2, 6):
        return JobStatus(handle, JobState.RUNNING, native)
    if code == 3:
        return JobStatus(handle, JobState.CANCELLED, native, exit_code,
                         str(ad.get("RemoveReason") or ""))
    if code == 4:
        if ad.get("ExitBySignal") is True:
            return JobStatus(handle, JobState.FAILED, native, None,
                             f"signal {ad.get('ExitSignal')}")
        if exit_code is None or exit_code != 0:
            reason = "" if exit_code is not None else "no exit code recorded"
            return JobStatus(handle, JobState.FAILED, native, exit_code, reason)
        return JobStatus(handle, JobState.COMPLETED, native, 0)
    if code == 5:
        return JobStatus(handle, JobState.HELD, native, exit_code,
                         str(ad.get("HoldReason") or ""))
    if code == 7:
        return JobStatus(handle, JobState.HELD, native, None, "suspended")
    return JobStatus(handle, JobState.UNKNOWN, native, None, f"unexpected JobStatus {code!r}")


def totals_text(totals: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(totals.items()) if str(k).startswith("Total"))
