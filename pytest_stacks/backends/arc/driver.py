"""The reference ARC driver: A-REX's REST job interface, as a grid client speaks it.

A job is an xRSL description whose executable (``job.sh``: the spec's script, its
environment and arguments) and inputs are client-side input files, uploaded into the job's
session directory after ``action=new``; A-REX hands the job to the batch system once they
are all there. Outputs are named ``outputfiles`` (A-REX keeps only those in the session
directory after the job) and read back with ``GET jobs/<id>/session/<file>``; ``clean``
removes the session directory. The batch system under A-REX is never asked: what the
contract sees is what a grid user sees. Only :meth:`ArcClient.versions` looks into the
stack (``arched --version`` and ``sinfo -V`` through the engine), for both layers' pins.
"""

from __future__ import annotations

import json
import math
import re
import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_stacks.backends.arc import rest, states
from pytest_stacks.backends.arc.rest import ArexRest
from pytest_stacks.contract import (
    ActionResult,
    JobHandle,
    JobSpec,
    JobState,
    JobStatus,
    OutputResult,
    SubmitResult,
)
from pytest_stacks.errors import BackendCallError, InfrastructureError
from pytest_stacks.transports import Transport

SCRIPT = "job.sh"
STDOUT, STDERR = "job.stdout", "job.stderr"
#: The Slurm partition A-REX submits to (arc.conf's [queue: debug]).
QUEUE = "debug"
_NAME = re.compile(r"[^A-Za-z0-9_.-]")


class ArcClient:
    """Bulk calls against one A-REX; ``transport`` reaches the stack's container (versions
    only), ``pins`` the versions the manifest pins for each layer (``daemon``, ``slurm``)."""

    def __init__(self, api: ArexRest, transport: Transport, stack: str,
                 pins: Mapping[str, str]) -> None:
        self._api, self._transport, self._stack = api, transport, stack
        self._pins = dict(pins)
        self._outputs: dict[str, tuple[str, ...]] = {}
        self._versions: dict[str, str] | None = None

    # ------------------------------------------------------------ versions
    def versions(self) -> dict[str, str]:
        """A-REX's own version (``arched --version``) as the daemon's, and Slurm's
        (``sinfo -V``) beside it; a layer that is not its pin fails closed (the manifest's
        check covers the daemon, this one Slurm)."""
        if self._versions is None:
            arex = self._version(["arched", "--version"], r"arched version (\S+)")
            slurm = self._version(["sinfo", "-V"], r"slurm(?:-wlm)? (\S+)")
            pinned = self._pins.get("slurm", "")
            if pinned and slurm != pinned:
                raise InfrastructureError(
                    self._stack, f"Slurm under A-REX reports {slurm!r} but the manifest pins "
                    f"{pinned!r} (components.slurm). Rebuild the stack's image, or fix the pin.")
            self._versions = {"daemon": arex, "slurm": slurm}
        return dict(self._versions)

    def _version(self, argv: list[str], pattern: str) -> str:
        said = self._transport.run(argv, timeout=30)
        found = re.search(pattern, said.stdout + said.stderr)
        if not found:
            raise BackendCallError(f"`{' '.join(argv)}` said nothing usable: "
                                   f"{(said.stdout + said.stderr).strip()[:300]}")
        return found.group(1)

    # ------------------------------------------------------------ submit
    def submit(self, specs: Sequence[JobSpec]) -> list[SubmitResult]:
        """One ``action=new`` for the whole bulk (an xRSL multi-request), then each job's
        files uploaded; a job whose upload fails is cleaned and refused with the reason."""
        if not specs:
            return []
        refused = {i: why for i, spec in enumerate(specs) if (why := _unsupported(spec))}
        wanted = [i for i in range(len(specs)) if i not in refused]
        results: dict[int, SubmitResult] = {i: SubmitResult(None, why)
                                            for i, why in refused.items()}
        if wanted:
            description = "+" + "".join(f"({_xrsl(specs[i])})" for i in wanted)
            created = self._api.create(description)
            if len(created) != len(wanted):
                raise BackendCallError(f"A-REX answered {len(created)} entries for "
                                       f"{len(wanted)} job descriptions")
            for i, entry in zip(wanted, created, strict=True):
                results[i] = self._upload(specs[i], entry)
        return [results[i] for i in range(len(specs))]

    def _upload(self, spec: JobSpec, entry: Mapping[str, Any]) -> SubmitResult:
        if rest.code(entry) != 201 or not entry.get("id"):
            return SubmitResult(None, f"A-REX refused the job: {entry.get('status-code')} "
                                      f"{entry.get('reason', '')}".strip())
        job_id = str(entry["id"])
        files = {SCRIPT: _script(spec).encode(), **spec.inputs}
        for name, data in files.items():
            answer = self._api.put_file(job_id, name, data)
            if answer.status not in (200, 201, 204):
                self._api.manage("clean", [job_id])
                return SubmitResult(None, f"upload of {name} refused: HTTP {answer.status} "
                                          f"{answer.body[:200]!r}")
        self._outputs[job_id] = spec.outputs
        return SubmitResult(JobHandle(self._stack, job_id))

    # ------------------------------------------------------------ status
    def status(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        """``action=info`` for all: the REST state and the exit code of each job's
        information document. A job A-REX does not know (never, or no longer) is UNKNOWN."""
        answers = self._api.manage("info", [h.job_id for h in handles])
        return [_status(handle, entry) for handle, entry in zip(handles, answers, strict=True)]

    def describe_jobs(self, handles: Sequence[JobHandle]) -> str:
        try:
            answers = self._api.manage("info", [h.job_id for h in handles])
        except BackendCallError as exc:
            return f"A-REX info: {exc}"
        return "\n".join(json.dumps(entry, sort_keys=True) for entry in answers)

    # ------------------------------------------------------------ outputs
    def fetch_outputs(self, handles: Sequence[JobHandle], dest: Path) -> list[OutputResult]:
        return [self._fetch(handle, dest / handle.job_id) for handle in handles]

    def _fetch(self, handle: JobHandle, folder: Path) -> OutputResult:
        names = self._outputs.get(handle.job_id)
        if names is None:
            return OutputResult(handle, error="not submitted by this client: its outputs "
                                              "are unknown")
        files: dict[str, Path] = {}
        for name in names:
            answer = self._api.get_file(handle.job_id, name)
            if answer.status != 200:
                return OutputResult(handle, error=f"{name}: HTTP {answer.status} "
                                                  f"{answer.body[:200]!r}")
            folder.mkdir(parents=True, exist_ok=True)
            (folder / name).write_bytes(answer.body)
            files[name] = folder / name
        return OutputResult(handle, files)

    # ------------------------------------------------------------ kill, purge
    def kill(self, handles: Sequence[JobHandle]) -> list[ActionResult]:
        return self._act("kill", handles)

    def purge(self, handles: Sequence[JobHandle]) -> list[ActionResult]:
        """``action=clean`` for the finished jobs; an unfinished one is refused per job here.
        A-REX 7.0 accepts cleaning a running job ("202 Queued for cleaning") and leaves it
        running in Slurm (seen here), so its answer cannot be the refusal the contract asks
        for: the job's own state, read first, is."""
        current = self.status(handles)
        finished = [h for h, s in zip(handles, current, strict=True)
                    if s.state.is_terminal or s.state is JobState.UNKNOWN]
        done = dict(zip(finished, self._act("clean", finished), strict=True))
        return [done.get(h) or ActionResult(h, f"job {h.job_id} is {s.native_state}, not "
                                               "finished: cleaning it would lose its outputs")
                for h, s in zip(handles, current, strict=True)]

    def _act(self, action: str, handles: Sequence[JobHandle]) -> list[ActionResult]:
        answers = self._api.manage(action, [h.job_id for h in handles])
        return [ActionResult(handle) if rest.code(entry) in (200, 202, 204)
                else ActionResult(handle, f"A-REX refused {action}: {entry.get('status-code')} "
                                          f"{entry.get('reason', '')}".strip())
                for handle, entry in zip(handles, answers, strict=True)]

    def close(self) -> None:
        """Nothing held: every call opens and closes its own connection."""


def _status(handle: JobHandle, entry: Mapping[str, Any]) -> JobStatus:
    if rest.code(entry) == 404:
        return JobStatus(handle, JobState.UNKNOWN, "", reason=str(entry.get("reason", "")))
    activity = (entry.get("info_document") or {}).get("ComputingActivity") or {}
    listed = activity.get("State") or []
    listed = [listed] if isinstance(listed, str) else listed
    native = next((s.split(":", 1)[1] for s in listed if s.startswith("arcrest:")), "")
    exit_code = _int(activity.get("ExitCode"))
    if not native:
        return JobStatus(handle, JobState.UNKNOWN, "",
                         reason=f"no arcrest state in A-REX's answer: {dict(entry)}")
    errors = activity.get("Error") or ""
    return JobStatus(handle, states.normalise(native, exit_code), native, exit_code,
                     reason="; ".join(errors) if isinstance(errors, list) else str(errors))


def _int(value: Any) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def _unsupported(spec: JobSpec) -> str:
    """Why A-REX cannot run the job as asked ("" if it can): what this driver does not stage
    is refused at submit, never run without it."""
    if spec.container:
        return f"this ARC stack runs no container jobs (asked for image {spec.container!r})"
    if spec.remote_inputs or spec.remote_outputs:
        return "remote inputs and outputs are not staged by this ARC driver yet"
    taken = {SCRIPT, STDOUT, STDERR} & (set(spec.inputs) | set(spec.outputs))
    if taken:
        return f"file names {sorted(taken)} are the driver's own"
    return ""


def _script(spec: JobSpec) -> str:
    """The executable A-REX runs: bash, the spec's environment and arguments, its body."""
    lines = ["#!/bin/bash"]
    lines += [f"export {key}={shlex.quote(value)}" for key, value in spec.env.items()]
    if spec.args:
        lines.append("set -- " + " ".join(shlex.quote(a) for a in spec.args))
    return "\n".join(lines) + "\n" + spec.body


def _quoted(value: str) -> str:
    """An xRSL string literal (a double quote inside is written twice)."""
    return '"' + value.replace('"', '""') + '"'


def _xrsl(spec: JobSpec) -> str:
    """One job's xRSL: its files all client-side inputs and named outputs."""
    inputs = "".join(f"({_quoted(name)} \"\")" for name in (SCRIPT, *spec.inputs))
    outputs = "".join(f"({_quoted(name)} \"\")" for name in (*spec.outputs, STDOUT, STDERR))
    name = _NAME.sub("_", spec.name)[:60] or "job"
    minutes = max(1, math.ceil(spec.walltime_s / 60))
    return (f"&(executable={_quoted(SCRIPT)})(jobname={_quoted(name)})"
            f"(stdout={_quoted(STDOUT)})(stderr={_quoted(STDERR)})"
            f"(inputfiles={inputs})(outputfiles={outputs})"
            f"(queue={_quoted(QUEUE)})(count={spec.cpus})(walltime=\"{minutes}\")")
