"""The reference HTCondor driver: the job contract over a small schedd interface.

The driver talks to a :class:`Schedd` (:mod:`.api`, owned by neither side): a handful of
calls the real ``htcondor2.Schedd`` answers through :class:`BindingsSchedd` and the in-process
double answers directly, so the fake lane exercises this very code.

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

Output retrieval (the ``output_retrieval`` option, repeatable by default) and why a fetch never
trusts the absence of an exception: :mod:`.leave_in_queue`.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_stacks.backends.htcondor import containers, staging
from pytest_stacks.backends.htcondor.api import (
    Schedd,
    ScheddError,
    parse_condor_version,
    version_tuple,
)
from pytest_stacks.backends.htcondor.bindings import BindingsSchedd
from pytest_stacks.backends.htcondor.diagnostics import describe_jobs
from pytest_stacks.backends.htcondor.housekeeping import await_periodic_evaluation
from pytest_stacks.backends.htcondor.leave_in_queue import (
    NEW_LEAVE_IN_QUEUE,
    OLD_LEAVE_IN_QUEUE,
    ONE_SHOT_GONE,
    ONE_SHOT_SINCE,
    OUTPUT_RETRIEVAL_MODES,
)
from pytest_stacks.backends.htcondor.local import LocalJob, Shared
from pytest_stacks.backends.htcondor.translate import (
    ad_id,
    describe_job,
    job_constraint,
    job_ids_of,
    job_status,
    native_state,
    totals_text,
)
from pytest_stacks.contract import (
    TERMINAL,
    ActionResult,
    ChannelTap,
    JobHandle,
    JobSpec,
    JobState,
    JobStatus,
    OutputResult,
    SubmitResult,
)
from pytest_stacks.errors import BackendCallError

if TYPE_CHECKING:
    from pytest_stacks.manifest import Stack

__all__ = ["NEW_LEAVE_IN_QUEUE", "OLD_LEAVE_IN_QUEUE", "ONE_SHOT_SINCE", "HTCondorClient"]

_STATUS_PROJECTION = ["ClusterId", "ProcId", "JobStatus", "ExitCode", "ExitBySignal",
                      "ExitSignal", "HoldReason", "HoldReasonCode", "RemoveReason"]


class HTCondorClient:
    def __init__(self, schedd: Schedd, stack: Stack | str, run_dir: Path, *,
                 output_retrieval: str | None = None, _shared: Shared | None = None) -> None:
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
        self._shared = _shared or Shared()
        self._owned: BindingsSchedd | None = None
        self._sandboxes = ({} if isinstance(stack, str)
                           else containers.stack_sandboxes(stack))

    # -------------------------------------------------------------- construction

    @classmethod
    def for_fake(cls, schedd: Schedd, stack: Stack, run_dir: Path) -> HTCondorClient:
        return cls(schedd, stack, run_dir)

    @classmethod
    def for_pool(cls, stack: Stack, collector: str, token_dir: Path,
                 run_dir: Path) -> HTCondorClient:
        name = stack.options.get("schedd_name")
        schedd = BindingsSchedd.connect(collector, Path(token_dir),
                                        str(name) if name else None)
        client = cls(schedd, stack, run_dir)
        client._owned = schedd  # its bindings worker ends with this client, not a sibling
        return client

    def with_options(self, *, output_retrieval: str) -> HTCondorClient:
        """A sibling client on the same schedd (and the same job records), other options."""
        stack: Stack | str = self._stack_obj if self._stack_obj is not None else self._stack
        return HTCondorClient(self._schedd, stack, self._run_dir,
                              output_retrieval=output_retrieval, _shared=self._shared)

    def tapped(self, tap: ChannelTap) -> HTCondorClient:
        """The same client over ``tap(schedd)``, with job records of its own."""
        stack: Stack | str = self._stack_obj if self._stack_obj is not None else self._stack
        return HTCondorClient(tap(self._schedd), stack, self._run_dir,
                              output_retrieval=self.output_retrieval)

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

    def _queue(self, job_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        ids = job_ids_of(job_ids)
        if not ids:
            return {}
        ads = self._call("query", self._schedd.query, job_constraint(ids), _STATUS_PROJECTION)
        return {ad_id(ad): ad for ad in ads}

    def _history(self, job_ids: Sequence[str]) -> dict[str, dict[str, Any]]:
        ids = job_ids_of(job_ids)
        if not ids:
            return {}
        ads = self._call("history", self._schedd.history, job_constraint(ids),
                         _STATUS_PROJECTION, match=len(ids))
        found: dict[str, dict[str, Any]] = {}
        for ad in ads:  # newest first
            found.setdefault(ad_id(ad), ad)
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
            self._shared.jobs[job_id] = LocalJob(job_id, root, tuple(spec.outputs),
                                                 self.output_retrieval)
            results.append(SubmitResult(JobHandle(self._stack, job_id)))
        return results

    def _describe(self, spec: JobSpec, root: Path) -> dict[str, str]:
        """Only repeatable retrieval overrides the client's own ``LeaveJobInQueue``. A
        container job is refused unless a slot advertises a runtime (:mod:`.containers`)."""
        if spec.container and (refused := containers.refusal(spec.container, self._schedd)):
            raise ValueError(refused)
        if spec.remote_outputs and (refused := staging.output_refusal(
                spec, version_tuple(self.versions()["daemon"]))):
            raise ValueError(refused)
        leave = OLD_LEAVE_IN_QUEUE if self.output_retrieval == "repeatable" else None
        return describe_job(spec, root, leave, self._sandboxes)

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
            out.append(job_status(handle, ad))
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
            status = job_status(handle, ad)
            if ad.get("JobStatus") != 4:
                detail = f": {status.reason}" if status.reason else ""
                results.append(OutputResult(handle, error=(
                    f"job is {status.state} ({status.native_state}), not completed; no outputs "
                    f"to fetch{detail}")))
                continue
            results.append(self._retrieve(handle, local, dest))
        return results

    def _gone(self, local: LocalJob, history: Mapping[str, dict[str, Any]]) -> str:
        ad = history.get(local.job_id)
        if ad is None:
            return "job is neither in the queue nor in the history: nothing to fetch"
        if local.retrievals:
            return ONE_SHOT_GONE
        native = native_state(ad)
        return (f"job left the queue before its outputs were retrieved (history: {native}); "
                f"the schedd no longer holds them")

    def _retrieve(self, handle: JobHandle, local: LocalJob, dest: Path) -> OutputResult:
        local.clear_retrieved()
        try:
            self._schedd.retrieve(handle.job_id)
        except ScheddError as exc:
            return OutputResult(handle, error=f"retrieving the outputs failed: {exc}")
        missing = local.missing()
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
        return OutputResult(handle, files=local.copy_outputs(dest / handle.job_id))

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
                    f"{totals_text(totals)})")))
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
            status = job_status(handle, ad)
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
                still = self._call("query", self._schedd.query, job_constraint(to_release),
                                   ["ClusterId", "ProcId", "LeaveJobInQueue"])
                refused = {ad_id(a) for a in still
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
                local.forget()
            final.append(ActionResult(handle))
        return final

    # -------------------------------------------------------------- housekeeping

    def await_housekeeping(self, timeout: float) -> None:
        """Return once the schedd has run a periodic evaluation that began after this call
        (:func:`~pytest_stacks.backends.htcondor.housekeeping.await_periodic_evaluation`)."""
        try:
            await_periodic_evaluation(self._schedd, self._job_root, timeout)
        except ScheddError as exc:
            raise BackendCallError(f"HTCondor periodic-evaluation witness failed: {exc}") from exc

    # -------------------------------------------------------------- diagnostics

    def describe_jobs(self, handles: Sequence[JobHandle]) -> str:
        return describe_jobs(self._schedd, self._shared.jobs, [h.job_id for h in handles])

    def close(self) -> None:
        """The bindings' worker process of a client made by :meth:`for_pool` ends (siblings
        from :meth:`with_options` share it and release nothing); the fake has its owner."""
        if self._owned is not None:
            self._owned.close()
