"""The reference HTCondor driver: the job contract over a small schedd interface.

The driver talks to a :class:`Schedd` (below): a handful of calls that the real
``htcondor2.Schedd`` answers through a thin wrapper (:class:`BindingsSchedd`) and the in-process
double answers directly (:class:`pytest_stacks.backends.fake_htcondor.FakeSchedd`), so the fake
lane exercises this very code.

Each job is one cluster of one proc, submitted with spooling (the pool shares no filesystem
with the client): the spec's script becomes the executable, its inputs are written to a
per-job staging directory under ``run_dir`` and listed in ``transfer_input_files``, its outputs
are ``transfer_output_files``, and ``initialdir`` is a per-job local directory into which
``retrieve`` writes the outputs (the driver then copies them into ``dest / job_id``). Status
reads the queue first and the history for jobs that have left it; an id neither knows is
UNKNOWN. Kill is ``Remove``. Purge releases a finished job: it sets the job's
``LeaveJobInQueue`` to false, so the schedd drops the job and its spool at its next periodic
evaluation and history keeps the real final state (``Remove`` on a completed job would record it
as Removed), and deletes the local copies, so a later fetch is a per-job error at once.

Output retrieval, the ``output_retrieval`` option (``stack.options`` or :meth:`with_options`):

``"repeatable"`` (the default)
    Submit sets ``leave_in_queue`` to the pre-25.8.2 10-day expression, so a completed job stays
    in the queue and a second fetch returns the same files, whatever the client version. This
    is the default because the contract advertises ``outputs.repeatable`` and because a client
    upgrade must not silently change what a test suite sees.
``"one-shot"``
    No override: the submitting client's own default applies. A 25.8.2+ client (HTCONDOR-3508,
    e.g. the PyPI ``htcondor`` 25.14 bindings) writes an expression under which the job leaves
    the queue at the schedd's next periodic evaluation after its first successful retrieval;
    an older client keeps the old behaviour. This is what a user of a current client gets.

The one-shot hazard is silent: a second ``retrieve`` of a job that left the queue raises nothing
and writes nothing. ``fetch_outputs`` therefore never trusts the absence of an exception: it
checks that the job is in the queue before retrieving, reports a job that has left after an
earlier retrieval as a per-job error naming one-shot retrieval, and after every retrieval checks
that the declared outputs (and the job's stdout file) actually arrived.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from pytest_stacks.contract import (
    TERMINAL,
    ActionResult,
    JobHandle,
    JobSpec,
    JobState,
    JobStatus,
    OutputResult,
    SubmitResult,
)
from pytest_stacks.errors import BackendCallError

if TYPE_CHECKING:
    from pytest_stacks.backends.fake_htcondor import FakeSchedd
    from pytest_stacks.manifest import Stack

#: The default LeaveJobInQueue of spooled jobs written by clients before 25.8.2: keep a
#: completed job for ten days.
OLD_LEAVE_IN_QUEUE = (
    "JobStatus == 4 && (CompletionDate =?= UNDEFINED || CompletionDate == 0 || "
    "((time() - CompletionDate) < 864000))"
)
#: The default written by 25.8.2+ clients (HTCONDOR-3508): leave after a successful retrieval.
NEW_LEAVE_IN_QUEUE = (
    "JobStatus == 4 && (time() - (CompletionDate ?: time())) < 864000 && "
    "(StageOutFinish ?: 0) < EnteredCurrentStatus"
)
ONE_SHOT_SINCE = (25, 8, 2)
OUTPUT_RETRIEVAL_MODES = ("repeatable", "one-shot")

STATUS_NAMES = {1: "Idle", 2: "Running", 3: "Removed", 4: "Completed", 5: "Held",
                6: "Transferring Output", 7: "Suspended"}
STDOUT_FILE = ".pytest-stacks.out"
STDERR_FILE = ".pytest-stacks.err"
SCRIPT_FILE = "job.sh"
ONE_SHOT_GONE = ("job left the queue after an earlier retrieval (one-shot output retrieval, "
                 "HTCondor 25.8.2+ client); its outputs are gone")

_STATUS_PROJECTION = ["ClusterId", "ProcId", "JobStatus", "ExitCode", "ExitBySignal",
                      "ExitSignal", "HoldReason", "HoldReasonCode", "RemoveReason"]
_JOB_ID = re.compile(r"^(\d+)\.(\d+)$")
_ENV_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class ScheddError(Exception):
    """A schedd call failed (raised by both the bindings wrapper and the fake)."""


@dataclass(frozen=True)
class Submitted:
    """What a spooled submit returns: the cluster, its procs, and what ``spool`` needs."""

    cluster: int
    first_proc: int
    num_procs: int
    native: Any = None

    @property
    def job_ids(self) -> list[str]:
        return [f"{self.cluster}.{p}"
                for p in range(self.first_proc, self.first_proc + self.num_procs)]


class Schedd(Protocol):
    """The part of a schedd the driver uses; ads are plain dicts of Python values."""

    def submit(self, description: Mapping[str, str], *, spool: bool = True,
               count: int = 1) -> Submitted: ...

    def spool(self, submitted: Submitted) -> None: ...

    def retrieve(self, job_id: str) -> None:
        """Write the job's outputs to its submit-time ``initialdir``."""
        ...

    def act(self, action: str, job_ids: Sequence[str], reason: str = "") -> dict[str, Any]:
        """``action`` is ``"remove"``; returns the totals ad (TotalSuccess, TotalNotFound...)."""
        ...

    def edit(self, job_ids: Sequence[str], attribute: str, value: str) -> int:
        """Set ``attribute`` to the ClassAd expression ``value``; returns the jobs matched."""
        ...

    def query(self, constraint: str = "true",
              projection: Sequence[str] = ()) -> list[dict[str, Any]]: ...

    def history(self, constraint: str = "true", projection: Sequence[str] = (),
                match: int = -1) -> list[dict[str, Any]]: ...

    def daemon_version(self) -> str:
        """The schedd's ``CondorVersion`` string."""
        ...

    def client_version(self) -> str:
        """The submitting client's version string."""
        ...


# ====================================================================== versions


def parse_condor_version(text: str) -> str:
    """``"$CondorVersion: 23.9.6 2024-07-31 ... $"`` (or a bare ``23.9.6``) -> ``"23.9.6"``."""
    match = re.search(r"(\d+\.\d+\.\d+)", text)
    if match is None:
        raise ValueError(f"no HTCondor version in {text!r}")
    return match.group(1)


def version_tuple(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in parse_condor_version(version).split("."))


# ====================================================================== the real schedd


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if type(value).__name__ == "Value":  # classad2.Value.Undefined / Error
        return None
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


class BindingsSchedd:
    """A thin wrapper over ``htcondor2.Schedd`` that speaks the :class:`Schedd` interface."""

    def __init__(self, htcondor2: Any, schedd_ad: Any, token_dir: Path | None = None) -> None:
        self._h = htcondor2
        self._ad = schedd_ad
        self._token_dir = token_dir
        self._schedd = htcondor2.Schedd(schedd_ad)

    @classmethod
    def connect(cls, collector: str, token_dir: Path, schedd_name: str | None = None,
                ) -> BindingsSchedd:
        """Configure the bindings for IDTOKENS against ``collector`` and locate the schedd."""
        settings = {
            "COLLECTOR_HOST": collector,
            "SEC_TOKEN_DIRECTORY": str(Path(token_dir).resolve()),
            "SEC_CLIENT_AUTHENTICATION_METHODS": "IDTOKENS",
        }
        # The bindings read the environment when first imported; param covers a later stack.
        for key, value in settings.items():
            os.environ[f"_CONDOR_{key}"] = value
        try:
            import htcondor2
        except ImportError as exc:
            raise BackendCallError(
                "the HTCondor driver needs the 'htcondor' package (module htcondor2): "
                "pip install 'pytest-stacks[htcondor]'") from exc
        for key, value in settings.items():
            htcondor2.param[key] = value
        try:
            ads = htcondor2.Collector(collector).locateAll(htcondor2.DaemonType.Schedd)
        except Exception as exc:
            raise BackendCallError(f"cannot reach the collector at {collector}: {exc}") from exc
        if schedd_name:
            ads = [a for a in ads if str(a.get("Name", "")) == schedd_name]
        if len(ads) != 1:
            names = [str(a.get("Name", "?")) for a in ads]
            raise BackendCallError(
                f"expected exactly one schedd at {collector}"
                f"{f' named {schedd_name!r}' if schedd_name else ''}, found {names or 'none'}")
        return cls(htcondor2, ads[0], Path(token_dir))

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if self._token_dir is not None:  # another stack in this process may have moved it
            wanted = str(self._token_dir.resolve())
            if self._h.param.get("SEC_TOKEN_DIRECTORY") != wanted:
                self._h.param["SEC_TOKEN_DIRECTORY"] = wanted
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # HTCondorException and friends
            raise ScheddError(f"{what}: {str(exc).strip()}") from exc

    def submit(self, description: Mapping[str, str], *, spool: bool = True,
               count: int = 1) -> Submitted:
        result = self._call("submit", self._schedd.submit, self._h.Submit(dict(description)),
                            spool=spool, count=count)
        return Submitted(int(result.cluster()), int(result.first_proc()),
                         int(result.num_procs()), result)

    def spool(self, submitted: Submitted) -> None:
        self._call("spool", self._schedd.spool, submitted.native)

    def retrieve(self, job_id: str) -> None:
        self._call("retrieve", self._schedd.retrieve, [job_id])

    def act(self, action: str, job_ids: Sequence[str], reason: str = "") -> dict[str, Any]:
        if action.lower() != "remove":
            raise ScheddError(f"unsupported action {action!r}")
        # A plain-string reason is dropped by the 25.14 bindings (only None or a
        # (text, code) tuple reach the schedd), so it travels as a tuple.
        result = self._call("remove", self._schedd.act, self._h.JobAction.Remove,
                            list(job_ids), reason=(reason, 0) if reason else None)
        return {k: _plain(v) for k, v in result.items()}

    def edit(self, job_ids: Sequence[str], attribute: str, value: str) -> int:
        return int(self._call("edit", self._schedd.edit, list(job_ids), attribute, value) or 0)

    def query(self, constraint: str = "true",
              projection: Sequence[str] = ()) -> list[dict[str, Any]]:
        ads = self._call("query", self._schedd.query, constraint, list(projection))
        return [{k: _plain(v) for k, v in ad.items()} for ad in ads]

    def history(self, constraint: str = "true", projection: Sequence[str] = (),
                match: int = -1) -> list[dict[str, Any]]:
        ads = self._call("history", self._schedd.history, constraint, list(projection),
                         match=match)
        return [{k: _plain(v) for k, v in ad.items()} for ad in ads]

    def daemon_version(self) -> str:
        return str(self._ad.get("CondorVersion", ""))

    def client_version(self) -> str:
        return str(self._h.version())


# ====================================================================== the driver


@dataclass
class _LocalJob:
    """What the client keeps per job: its local directories and what it declared."""

    job_id: str
    root: Path
    outputs: tuple[str, ...]
    output_retrieval: str
    retrievals: int = 0
    purged: bool = False

    @property
    def iwd(self) -> Path:
        return self.root / "iwd"


@dataclass
class _Shared:
    """State siblings made by :meth:`HTCondorClient.with_options` share."""

    jobs: dict[str, _LocalJob] = field(default_factory=dict)
    versions: dict[str, str] | None = None


class HTCondorClient:
    def __init__(self, schedd: Schedd, stack: Stack | str, run_dir: Path, *,
                 output_retrieval: str | None = None, _shared: _Shared | None = None) -> None:
        self._schedd = schedd
        self._stack_obj = None if isinstance(stack, str) else stack
        self._stack = stack if isinstance(stack, str) else stack.name
        options: Mapping[str, Any] = {} if isinstance(stack, str) else stack.options
        mode = output_retrieval or str(options.get("output_retrieval", "repeatable"))
        if mode not in OUTPUT_RETRIEVAL_MODES:
            raise ValueError(f"output_retrieval must be one of {OUTPUT_RETRIEVAL_MODES}, "
                             f"not {mode!r}")
        self.output_retrieval = mode
        self._run_dir = Path(run_dir)
        self._job_root = self._run_dir / "htcondor" / self._stack
        self._shared = _shared or _Shared()

    # -------------------------------------------------------------- construction

    @classmethod
    def for_fake(cls, schedd: FakeSchedd, stack: Stack, run_dir: Path) -> HTCondorClient:
        return cls(schedd, stack, run_dir)

    @classmethod
    def for_pool(cls, stack: Stack, collector: str, token_dir: Path,
                 run_dir: Path) -> HTCondorClient:
        name = stack.options.get("schedd_name")
        schedd = BindingsSchedd.connect(collector, Path(token_dir),
                                        str(name) if name else None)
        return cls(schedd, stack, run_dir)

    def with_options(self, *, output_retrieval: str) -> HTCondorClient:
        """A sibling client on the same schedd (and the same job records), other options."""
        stack: Stack | str = self._stack_obj if self._stack_obj is not None else self._stack
        return HTCondorClient(self._schedd, stack, self._run_dir,
                              output_retrieval=output_retrieval, _shared=self._shared)

    @property
    def schedd(self) -> Schedd:
        """The schedd interface this client drives (for backend-specific tests)."""
        return self._schedd

    # -------------------------------------------------------------- helpers

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except ScheddError as exc:
            raise BackendCallError(f"HTCondor {what} failed: {exc}") from exc

    def versions(self) -> dict[str, str]:
        if self._shared.versions is None:
            try:
                self._shared.versions = {
                    "daemon": parse_condor_version(self._schedd.daemon_version()),
                    "client": parse_condor_version(self._schedd.client_version()),
                }
            except ValueError as exc:
                raise BackendCallError(f"cannot read the HTCondor versions: {exc}") from exc
        return dict(self._shared.versions)

    @staticmethod
    def _constraint(job_ids: Sequence[str]) -> str:
        parts = []
        for job_id in job_ids:
            match = _JOB_ID.match(job_id)
            if match:
                parts.append(f"(ClusterId == {int(match[1])} && ProcId == {int(match[2])})")
        return " || ".join(parts) if parts else "false"

    def _queue(self, job_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        ids = [j for j in dict.fromkeys(job_ids) if _JOB_ID.match(j)]
        if not ids:
            return {}
        ads = self._call("query", self._schedd.query, self._constraint(ids), _STATUS_PROJECTION)
        return {_ad_id(ad): ad for ad in ads}

    def _history(self, job_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        ids = [j for j in dict.fromkeys(job_ids) if _JOB_ID.match(j)]
        if not ids:
            return {}
        ads = self._call("history", self._schedd.history, self._constraint(ids),
                         _STATUS_PROJECTION, match=len(ids))
        found: dict[str, dict[str, Any]] = {}
        for ad in ads:  # newest first
            found.setdefault(_ad_id(ad), ad)
        return found

    def _lookup(self, job_ids: Sequence[str],
                ) -> tuple[dict[str, dict[str, Any]], dict[str, dict[str, Any]]]:
        """(queue ads, history ads) for ``job_ids``; history only for those not queued."""
        queued = self._queue(job_ids)
        missing = [j for j in job_ids if j not in queued]
        return queued, self._history(missing) if missing else {}

    def in_queue(self, handles: Sequence[JobHandle]) -> list[bool]:
        """Whether each job is still in the schedd's queue (not only in its history)."""
        queued = self._queue([h.job_id for h in handles])
        return [h.job_id in queued for h in handles]

    # -------------------------------------------------------------- submit

    def submit(self, specs: Sequence[JobSpec]) -> list[SubmitResult]:
        results: list[SubmitResult] = []
        for spec in specs:
            root = self._job_root / uuid.uuid4().hex[:12]
            try:
                description = self._describe(spec, root)
            except ValueError as exc:
                shutil.rmtree(root, ignore_errors=True)
                results.append(SubmitResult(None, str(exc)))
                continue
            try:
                submitted = self._schedd.submit(description, spool=True, count=1)
            except ScheddError as exc:
                shutil.rmtree(root, ignore_errors=True)
                results.append(SubmitResult(None, f"submit refused: {exc}"))
                continue
            job_id = submitted.job_ids[0]
            try:
                self._schedd.spool(submitted)
            except ScheddError as exc:
                with contextlib.suppress(ScheddError):
                    self._schedd.act("remove", submitted.job_ids, "pytest-stacks: spool failed")
                shutil.rmtree(root, ignore_errors=True)
                results.append(SubmitResult(None, f"spooling the inputs of {job_id} failed: "
                                                  f"{exc}"))
                continue
            self._shared.jobs[job_id] = _LocalJob(job_id, root, tuple(spec.outputs),
                                                  self.output_retrieval)
            results.append(SubmitResult(JobHandle(self._stack, job_id)))
        return results

    def _describe(self, spec: JobSpec, root: Path) -> dict[str, str]:
        """Stage the job's files under ``root`` and return its submit description."""
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
        if spec.inputs:
            description["transfer_input_files"] = ",".join(
                str(inputs / name) for name in spec.inputs)
        if spec.outputs:
            description["transfer_output_files"] = ",".join(spec.outputs)
        if self.output_retrieval == "repeatable":
            description["leave_in_queue"] = OLD_LEAVE_IN_QUEUE
        return description

    # -------------------------------------------------------------- status

    def status(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        queued, history = self._lookup([h.job_id for h in handles])
        out = []
        for handle in handles:
            ad = queued.get(handle.job_id) or history.get(handle.job_id)
            if ad is None:
                out.append(JobStatus(handle, JobState.UNKNOWN, "", None,
                                     "not in the schedd's queue or history"))
                continue
            out.append(_job_status(handle, ad))
        return out

    # -------------------------------------------------------------- outputs

    def fetch_outputs(self, handles: Sequence[JobHandle], dest: Path) -> list[OutputResult]:
        queued, history = self._lookup([h.job_id for h in handles])
        results = []
        for handle in handles:
            local = self._shared.jobs.get(handle.job_id)
            ad = queued.get(handle.job_id)
            if local is None:
                known = ad or history.get(handle.job_id)
                results.append(OutputResult(handle, error=(
                    "unknown job: nothing to fetch" if known is None else
                    "job was not submitted through this client: its initialdir is unknown")))
                continue
            if local.purged:
                results.append(OutputResult(handle, error="outputs are gone: the job was purged"))
                continue
            if ad is None:
                results.append(OutputResult(handle, error=self._gone(local, history)))
                continue
            status = _job_status(handle, ad)
            if ad.get("JobStatus") != 4:
                detail = f": {status.reason}" if status.reason else ""
                results.append(OutputResult(handle, error=(
                    f"job is {status.state} ({status.native_state}), not completed; no outputs "
                    f"to fetch{detail}")))
                continue
            results.append(self._retrieve(handle, local, dest))
        return results

    def _gone(self, local: _LocalJob, history: Mapping[str, dict[str, Any]]) -> str:
        ad = history.get(local.job_id)
        if ad is None:
            return "job is neither in the queue nor in the history: nothing to fetch"
        if local.retrievals:
            return ONE_SHOT_GONE
        native = _native(ad)
        return (f"job left the queue before its outputs were retrieved (history: {native}); "
                f"the schedd no longer holds them")

    def _retrieve(self, handle: JobHandle, local: _LocalJob, dest: Path) -> OutputResult:
        iwd = local.iwd
        expected = [*local.outputs, STDOUT_FILE]
        # Clear what an earlier retrieval left, so that what is found below really arrived now.
        for name in [*local.outputs, STDOUT_FILE, STDERR_FILE]:
            (iwd / name).unlink(missing_ok=True)
        if not local.outputs:
            for stale in iwd.iterdir():
                if stale.is_file():
                    stale.unlink()
        try:
            self._schedd.retrieve(handle.job_id)
        except ScheddError as exc:
            return OutputResult(handle, error=f"retrieving the outputs failed: {exc}")
        missing = [n for n in expected if not (iwd / n).is_file()]
        if missing:
            still = self._queue([handle.job_id])
            if not still:
                error = ONE_SHOT_GONE if local.retrievals else (
                    "job left the queue during retrieval; nothing arrived")
            else:
                error = (f"retrieval raised no error but these files did not arrive: "
                         f"{', '.join(missing)}")
            return OutputResult(handle, error=error)
        local.retrievals += 1
        names = list(local.outputs) or sorted(
            p.name for p in iwd.iterdir() if p.is_file() and p.name not in (STDOUT_FILE,
                                                                            STDERR_FILE))
        target = dest / handle.job_id
        target.mkdir(parents=True, exist_ok=True)
        files = {}
        for name in names:
            shutil.copyfile(iwd / name, target / name)
            files[name] = target / name
        return OutputResult(handle, files=files)

    # -------------------------------------------------------------- kill and purge

    def kill(self, handles: Sequence[JobHandle]) -> list[ActionResult]:
        statuses = self.status(handles)
        to_remove = [s.handle.job_id for s in statuses
                     if s.state is not JobState.UNKNOWN and s.state not in TERMINAL]
        totals: dict[str, Any] = {}
        if to_remove:
            totals = self._call("remove", self._schedd.act, "remove", list(dict.fromkeys(
                to_remove)), "pytest-stacks: kill")
        after: dict[str, JobStatus] = {}
        if to_remove and int(totals.get("TotalSuccess", 0) or 0) < len(set(to_remove)):
            after = {s.handle.job_id: s for s in self.status(
                [s.handle for s in statuses if s.handle.job_id in to_remove])}
        results = []
        for status in statuses:
            handle = status.handle
            if status.state is JobState.UNKNOWN:
                results.append(ActionResult(handle, "unknown job: nothing to kill"))
            elif handle.job_id in after and after[handle.job_id].state is not JobState.CANCELLED:
                now = after[handle.job_id]
                results.append(ActionResult(handle, (
                    f"remove was refused (job is {now.state}, {now.native_state}; totals "
                    f"{_totals(totals)})")))
            else:
                results.append(ActionResult(handle))  # removed, or already finished
        return results

    def purge(self, handles: Sequence[JobHandle]) -> list[ActionResult]:
        queued, history = self._lookup([h.job_id for h in handles])
        results: list[ActionResult | None] = []
        to_release: list[str] = []
        for handle in handles:
            ad = queued.get(handle.job_id) or history.get(handle.job_id)
            local = self._shared.jobs.get(handle.job_id)
            if ad is None:
                if local is not None and local.purged:
                    results.append(ActionResult(handle))  # purging twice is harmless
                else:
                    results.append(ActionResult(handle, "unknown job: nothing to purge"))
                continue
            status = _job_status(handle, ad)
            if not status.state.is_terminal:
                results.append(ActionResult(handle, (
                    f"job is {status.state} ({status.native_state}); kill it first")))
                continue
            if handle.job_id in queued and ad.get("JobStatus") == 4:
                to_release.append(handle.job_id)
            results.append(None)
        refused: set[str] = set()
        if to_release:
            # Not Remove: on a completed job it rewrites the final state as Removed (seen on
            # 23.9.6). A false LeaveJobInQueue lets the schedd drop the job and its spool at
            # its next periodic evaluation, as Completed.
            edited = self._call("edit", self._schedd.edit, to_release, "LeaveJobInQueue",
                                "false")
            if edited < len(to_release):
                still = self._call("query", self._schedd.query, self._constraint(to_release),
                                   ["ClusterId", "ProcId", "LeaveJobInQueue"])
                refused = {_ad_id(a) for a in still
                           if str(a.get("LeaveJobInQueue")).lower() != "false"}
        final: list[ActionResult] = []
        for handle, result in zip(handles, results, strict=True):
            if result is not None:
                final.append(result)
                continue
            if handle.job_id in refused:
                final.append(ActionResult(handle, "the schedd refused to release the job "
                                                  "(edit LeaveJobInQueue = false)"))
                continue
            local = self._shared.jobs.get(handle.job_id)
            if local is not None:
                shutil.rmtree(local.root, ignore_errors=True)
                local.purged = True
            final.append(ActionResult(handle))
        return final

    # -------------------------------------------------------------- diagnostics

    def describe_jobs(self, handles: Sequence[JobHandle]) -> str:
        parts = []
        for handle in handles:
            constraint = self._constraint([handle.job_id])
            try:
                ads = self._schedd.query(constraint, [])
                where = "queue"
                if not ads:
                    ads = self._schedd.history(constraint, [], match=1)
                    where = "history"
            except ScheddError as exc:
                parts.append(f"--- job {handle.job_id}: cannot read its ad: {exc}")
                continue
            if not ads:
                parts.append(f"--- job {handle.job_id}: not in the queue or history")
            else:
                lines = [f"{k} = {v!r}" for k, v in sorted(ads[0].items())]
                parts.append(f"--- job {handle.job_id} ({where} ad)\n" + "\n".join(lines))
            local = self._shared.jobs.get(handle.job_id)
            if local is not None and not local.purged:
                for name in (STDOUT_FILE, STDERR_FILE):
                    path = local.iwd / name
                    if path.is_file():
                        text = path.read_bytes().decode("utf-8", "replace")[-4000:]
                        parts.append(f"--- {handle.job_id} {name}\n{text}")
        return "\n".join(parts)

    def close(self) -> None:
        """Nothing to release: the schedd connection is per call; the fake has its owner."""


# ====================================================================== helpers


def _ad_id(ad: Mapping[str, Any]) -> str:
    return f"{int(ad['ClusterId'])}.{int(ad['ProcId'])}"


def _native(ad: Mapping[str, Any]) -> str:
    code = ad.get("JobStatus")
    return f"{code} ({STATUS_NAMES.get(code, 'Unknown')})" if isinstance(code, int) else "?"


def _job_status(handle: JobHandle, ad: Mapping[str, Any]) -> JobStatus:
    code = ad.get("JobStatus")
    native = _native(ad)
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


def _totals(totals: Mapping[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(totals.items()) if str(k).startswith("Total"))


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
    carry (values with ``$`` or newlines) exported or set here instead."""
    lines = ["#!/bin/bash"]
    lines += [f"export {k}={shlex.quote(v)}" for k, v in env.items()]
    if args is not None:
        lines.append("set -- " + " ".join(shlex.quote(a) for a in args))
    return "\n".join(lines) + "\n" + spec.body + "\n"
