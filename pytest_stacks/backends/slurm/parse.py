"""Parse what each Slurm version prints, into one normalised shape.

Version differences are handled by reading what the running version emits, not by trusting a
version number: ``job_state`` is a string up to 23.02 and a list from 23.11; ``exit_code`` is a
raw wait status in 22.05, an object from 23.02; 20.11 has no ``--json`` at all. Tests feed these
functions captured real outputs of every version under ``tests/data/slurm``.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from pytest_stacks.contract import JobHandle, JobState, JobStatus


@dataclass(frozen=True)
class SlurmJob:
    job_id: str
    native_state: str
    reason: str
    exit_code: int | None
    signal: int | None
    source: str  # which view said so: squeue-json, scontrol, sacct-c


_STATE_MAP = {
    "PENDING": JobState.PENDING,
    "REQUEUED": JobState.PENDING,
    "REQUEUE_FED": JobState.PENDING,
    "REQUEUE_HOLD": JobState.HELD,
    "RESV_DEL_HOLD": JobState.HELD,
    "CONFIGURING": JobState.RUNNING,
    "RUNNING": JobState.RUNNING,
    "COMPLETING": JobState.RUNNING,
    "STAGE_OUT": JobState.RUNNING,
    "SIGNALING": JobState.RUNNING,
    "RESIZING": JobState.RUNNING,
    "SUSPENDED": JobState.HELD,
    "STOPPED": JobState.HELD,
    "COMPLETED": JobState.COMPLETED,
    "FAILED": JobState.FAILED,
    "TIMEOUT": JobState.FAILED,
    "NODE_FAIL": JobState.FAILED,
    "OUT_OF_MEMORY": JobState.FAILED,
    "BOOT_FAIL": JobState.FAILED,
    "DEADLINE": JobState.FAILED,
    "PREEMPTED": JobState.FAILED,
    "SPECIAL_EXIT": JobState.FAILED,
    "CANCELLED": JobState.CANCELLED,
    "REVOKED": JobState.CANCELLED,
}

_HELD_REASONS = ("JobHeldUser", "JobHeldAdmin")


def normalise(native_state: str, reason: str = "") -> JobState:
    """Map a Slurm state (``"CANCELLED by 1000"``, ``"PENDING"``) to the contract's states."""
    base = native_state.split()[0].rstrip("+").upper() if native_state.strip() else ""
    state = _STATE_MAP.get(base, JobState.UNKNOWN)
    if state is JobState.PENDING and reason in _HELD_REASONS:
        return JobState.HELD
    return state


def parse_version(sinfo_v: str) -> str:
    """``slurm-wlm 24.11.5`` (Debian) or ``slurm 24.11.5`` -> ``24.11.5``."""
    match = re.search(r"(\d+\.\d+\.\d+)", sinfo_v)
    if not match:
        raise ValueError(f"cannot read a version from sinfo -V output {sinfo_v!r}")
    return match.group(1)


def parse_config_version(show_config: str) -> str:
    """``SLURM_VERSION = 24.11.5`` in ``scontrol show config``: slurmctld's own build (it fills
    that field from its ``SLURM_VERSION_STRING``), not the client's, as ``sinfo -V`` is."""
    match = re.search(r"^SLURM_VERSION\s*=\s*(\d+\.\d+\.\d+)", show_config, re.MULTILINE)
    if not match:
        raise ValueError(f"scontrol show config names no SLURM_VERSION: {show_config[:300]!r}")
    return match.group(1)


def parse_sbatch(stdout: str) -> str:
    """``sbatch --parsable`` prints ``<id>`` or ``<id>;<cluster>``."""
    text = stdout.strip().splitlines()[-1] if stdout.strip() else ""
    job_id = text.split(";")[0]
    if not job_id.isdigit():
        raise ValueError(f"sbatch printed no job id: {stdout!r}")
    return job_id


def _exit_pair(text: str) -> tuple[int | None, int | None]:
    match = re.fullmatch(r"\s*(\d+):(\d+)\s*", text or "")
    if not match:
        return None, None
    return int(match.group(1)), int(match.group(2))


def parse_scontrol_jobs(text: str) -> dict[str, SlurmJob]:
    """``scontrol show job -o``: one job per line of ``Key=Value`` pairs (every version)."""
    jobs: dict[str, SlurmJob] = {}
    for line in text.splitlines():
        if "JobId=" not in line:
            continue
        fields = dict(re.findall(r"(\w+)=(\S*)", line))
        job_id = fields.get("JobId", "")
        if not job_id:
            continue
        code, signal = _exit_pair(fields.get("ExitCode", ""))
        jobs[job_id] = SlurmJob(job_id, fields.get("JobState", ""), fields.get("Reason", ""),
                                code, signal, "scontrol")
    return jobs


def _number(value: Any) -> int | None:
    """Slurm JSON numbers are plain ints before 23.02 and ``{"set", "number"}`` after."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, dict):
        if value.get("set") is False or value.get("infinite"):
            return None
        number = value.get("number")
        return number if isinstance(number, int) else None
    return None


def _json_exit(value: Any) -> tuple[int | None, int | None]:
    if isinstance(value, int) and not isinstance(value, bool):
        # 22.05 and earlier: the raw wait status (exit 3 -> 768).
        if value & 0x7F:
            return None, value & 0x7F
        return value >> 8, 0
    if isinstance(value, dict):
        code = _number(value.get("return_code"))
        signal_obj = value.get("signal")
        signal = _number(signal_obj.get("id")) if isinstance(signal_obj, dict) else None
        return code, signal
    return None, None


def _json_state(value: Any) -> str:
    if isinstance(value, list):  # 23.11+: ["COMPLETED"] or ["PENDING", "REQUEUED"]
        return " ".join(str(v) for v in value)
    return str(value or "")


def parse_squeue_json(text: str) -> dict[str, SlurmJob]:
    data = json.loads(text)
    jobs: dict[str, SlurmJob] = {}
    for raw in data.get("jobs", []):
        job_id = str(raw.get("job_id"))
        code, signal = _json_exit(raw.get("exit_code"))
        reason = raw.get("state_reason") or ""
        jobs[job_id] = SlurmJob(job_id, _json_state(raw.get("job_state")), str(reason),
                                code, signal, "squeue-json")
    return jobs


def parse_sacct_c(text: str) -> dict[str, SlurmJob]:
    """``sacct -c -P -n --format=JobID,State,ExitCode`` (reads the jobcomp/filetxt log)."""
    jobs: dict[str, SlurmJob] = {}
    for line in text.splitlines():
        parts = line.split("|")
        if len(parts) < 3 or not parts[0].strip():
            continue
        job_id = parts[0].strip()
        if not job_id.isdigit():
            continue  # job steps (12.batch) do not concern the contract
        code, signal = _exit_pair(parts[2])
        jobs[job_id] = SlurmJob(job_id, parts[1].strip(), "", code, signal, "sacct-c")
    return jobs


def parse_jobcomp(text: str) -> dict[str, SlurmJob]:
    """The jobcomp/filetxt log itself: ``JobId=12 ... JobState=FAILED ... ExitCode=3:0``."""
    return {
        job.job_id: SlurmJob(job.job_id, job.native_state, job.reason, job.exit_code,
                             job.signal, "jobcomp")
        for job in parse_scontrol_jobs(text).values()
    }


def job_status(handle: JobHandle, job: SlurmJob | None, unknown: str) -> JobStatus:
    """The contract's status of a job as Slurm shows it (whichever client read it: the
    commands or slurmrestd); ``unknown`` is the reason given when Slurm does not know it."""
    if job is None:
        return JobStatus(handle, JobState.UNKNOWN, "", None, unknown)
    state = normalise(job.native_state, job.reason)
    reason = job.reason if job.reason not in ("", "None") else ""
    if job.signal:
        reason = f"{reason} signal {job.signal}".strip()
    return JobStatus(handle, state, job.native_state, job.exit_code, reason)
