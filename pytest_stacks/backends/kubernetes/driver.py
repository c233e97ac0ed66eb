"""The Kubernetes driver: the job contract over :class:`~api.KubeApi`.

Each job is ONE object in the run's namespace: a Pod, or an MPIJob (kubeflow.org/v2beta1) that
the MPI Operator turns into a Service, a ConfigMap, a Secret, worker Pods and a launcher Job
whose Pod the Job controller makes. The handle's ``job_id`` is the object's name, unique per
run and never reused; the kind and ``metadata.uid`` are recorded at creation, so a same-named
object recreated behind the driver's back is never taken for the job.

On kwok pods do not execute: a job ends as its annotations say (:mod:`.objects`). With a real
node (``runtime.real``) the script runs in the pod (remote files: :mod:`.staging`) and its
exit code and logs are the outcome. An MPIJob the operator finds invalid gets a Warning event
and no condition at all; the driver fails it after ``invalid_after`` seconds.
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from pytest_stacks.backends.kubernetes import objects, staging
from pytest_stacks.backends.kubernetes.api import (
    JOB_NAME_LABEL,
    ApiError,
    KubeApi,
    Obj,
    meta,
)
from pytest_stacks.backends.kubernetes.cleanup import delete_namespace
from pytest_stacks.backends.kubernetes.diagnostics import describe
from pytest_stacks.backends.kubernetes.identities import (
    Identity,
    identity_of,
    observe,
)
from pytest_stacks.backends.kubernetes.namespaces import dns_suffix, ensure_namespace
from pytest_stacks.backends.kubernetes.objects import conditions, terminated
from pytest_stacks.backends.kubernetes.pod_log import pod_log
from pytest_stacks.contract import (
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

LOG_LIMIT = 64 * 1024


@dataclass
class _Record:
    name: str
    kind: str
    uid: str
    submitted: float
    killed: bool = False
    purged: bool = False
    final: JobStatus | None = None


class KubernetesClient:
    def __init__(self, api: KubeApi, stack: str, *, namespace: str, run_id: str, image: str,
                 shape: str = "pod", workers: int = 2, operator_version: str = "",
                 invalid_after: float = 30.0, runtime: objects.Runtime = objects.SIMULATED
                 ) -> None:
        self._api = api
        self.runtime = runtime
        self._stack = stack
        self.namespace = namespace
        self.run_id = run_id
        self._image = image
        self._shape = shape
        self._workers = workers
        self._operator_version = operator_version
        self.invalid_after = invalid_after
        self._records: dict[str, _Record] = {}
        self._seen: dict[tuple[str, str, str], Identity] = {}
        self._prefix = f"pst-{dns_suffix(run_id)}-{secrets.token_hex(2)}"
        self._counter = 0
        self._namespace_ready = False

    @property
    def api(self) -> KubeApi:
        return self._api

    @contextmanager
    def _whole_call(self, what: str) -> Iterator[None]:
        """An ApiError where none is expected (403, 401, ...) fails the whole call."""
        try:
            yield
        except ApiError as exc:
            raise BackendCallError(f"{what}: {exc}") from exc

    def _record(self, handle: JobHandle) -> _Record | None:
        return self._records.get(handle.job_id) if handle.stack == self._stack else None

    def _next_name(self) -> str:
        self._counter += 1
        return f"{self._prefix}-{self._counter}"

    def ensure_namespace(self) -> None:
        """Create the run's namespace (labelled with the run id) unless it exists."""
        if self._namespace_ready:
            return
        with self._whole_call(f"namespace {self.namespace}"):
            ensure_namespace(self._api, self.namespace, self.run_id)
        self._namespace_ready = True

    def versions(self) -> dict[str, str]:
        with self._whole_call("GET /version"):
            git = str(self._api.version().get("gitVersion", ""))
        return {"daemon": self._operator_version or "", "kubernetes": git.lstrip("v")}

    # ------------------------------------------------------------ submit

    def _manifest(self, spec: JobSpec) -> Obj:
        opts = objects.options_of(spec, shape=self._shape, workers=self._workers,
                                  image=self._image, runtime=self.runtime)
        if refused := objects.refusal(spec, opts, lambda: self._api.list("Node")):
            raise ValueError(refused)
        build = objects.pod if opts.shape == "pod" else objects.mpijob
        return build(spec, opts, name=self._next_name(), namespace=self.namespace,
                     run_id=self.run_id)

    def submit(self, specs: Sequence[JobSpec]) -> list[SubmitResult]:
        self.ensure_namespace()
        results: list[SubmitResult] = []
        for spec in specs:
            try:
                stored = self._api.create(self._manifest(spec))
            except (ValueError, ApiError) as exc:
                results.append(SubmitResult(None, str(exc)))
                continue
            ident = identity_of(stored, job=meta(stored)["name"])
            self._records[ident.name] = _Record(ident.name, ident.kind, ident.uid,
                                                time.monotonic())
            self._seen.setdefault(ident.key, ident)
            results.append(SubmitResult(JobHandle(self._stack, ident.name)))
        return results

    # ------------------------------------------------------------ status

    def status(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        with self._whole_call("status"):
            return [self._status(handle) for handle in handles]

    def _status(self, handle: JobHandle) -> JobStatus:
        rec = self._record(handle)
        if rec is None:
            return self._stranger(handle)
        obj = self._api.get(rec.kind, self.namespace, rec.name)
        if obj is None or meta(obj).get("uid") != rec.uid:
            return self._gone(handle, rec, obj)
        if rec.killed and meta(obj).get("deletionTimestamp"):
            # The API server holds it for deletion (ours): its containers are being stopped.
            return JobStatus(handle, JobState.CANCELLED, "Terminating", None,
                             f"deletion requested by kill at {meta(obj)['deletionTimestamp']}")
        if rec.kind == "Pod":
            st = self._pod_status(handle, obj)
        else:
            st = self._mpijob_status(handle, rec, obj)
        if st.state.is_terminal:
            rec.final = st
        return st

    def _stranger(self, handle: JobHandle) -> JobStatus:
        """A handle this client did not submit: asked of the API server all the same (a Pod
        or an MPIJob of that name in the run's namespace), never answered from memory."""
        if handle.stack != self._stack:
            return JobStatus(handle, JobState.UNKNOWN, "", None,
                             f"a handle of stack {handle.stack}, not {self._stack}")
        for kind in ("Pod", "MPIJob"):
            obj = self._api.get(kind, self.namespace, handle.job_id)
            if obj is None:
                continue
            if kind == "Pod":
                return self._pod_status(handle, obj)
            stranger = _Record(handle.job_id, kind, str(meta(obj).get("uid")),
                               time.monotonic() - self.invalid_after)
            return self._mpijob_status(handle, stranger, obj)
        return JobStatus(handle, JobState.UNKNOWN, "", None,
                         f"the API server has no Pod or MPIJob {handle.job_id} in namespace "
                         f"{self.namespace}")

    @staticmethod
    def _gone(handle: JobHandle, rec: _Record, obj: Obj | None) -> JobStatus:
        if obj is not None:
            return JobStatus(handle, JobState.UNKNOWN, "", None,
                             f"{rec.kind} {rec.name} was recreated: uid "
                             f"{meta(obj).get('uid')} is not the submitted {rec.uid}")
        if rec.killed:
            return JobStatus(handle, JobState.CANCELLED, "Deleted", None, "deleted by kill")
        if rec.final is not None:
            return JobStatus(handle, rec.final.state, f"Deleted ({rec.final.native_state})",
                             rec.final.exit_code, "finished, then purged")
        return JobStatus(handle, JobState.UNKNOWN, "Deleted", None,
                         f"{rec.kind} {rec.name} is gone and was never seen finished")

    @staticmethod
    def _pod_status(handle: JobHandle, pod: Obj) -> JobStatus:
        state, native, exit_code, reason = objects.pod_state(pod)
        return JobStatus(handle, JobState(state), native, exit_code, reason)

    def launcher_pod(self, name: str) -> Obj | None:
        """The newest pod of an MPIJob's launcher Job (by the Job controller's label)."""
        pods = self._api.list("Pod", self.namespace, {JOB_NAME_LABEL: f"{name}-launcher"})
        pods.sort(key=lambda p: str(meta(p).get("creationTimestamp", "")))
        finished = [p for p in pods if terminated(p)]
        return (finished or pods)[-1] if pods else None

    def _mpijob_status(self, handle: JobHandle, rec: _Record, job: Obj) -> JobStatus:
        conds = conditions(job)
        for ctype, state in (("Succeeded", JobState.COMPLETED), ("Failed", JobState.FAILED)):
            if ctype in conds:
                code = terminated(self.launcher_pod(rec.name)).get("exitCode")
                if code is None and state is JobState.COMPLETED:
                    code = 0
                return JobStatus(handle, state, ctype, None if code is None else int(code),
                                 str(conds[ctype].get("message", "")))
        for ctype, state in (("Suspended", JobState.HELD), ("Running", JobState.RUNNING),
                             ("Created", JobState.PENDING)):
            if ctype in conds:
                return JobStatus(handle, state, ctype, None, str(conds[ctype].get("message", "")))
        if time.monotonic() - rec.submitted >= self.invalid_after:
            warnings = [e for e in self._api.events(self.namespace, rec.name)
                        if e.get("type") == "Warning"]
            if warnings:
                message = str(warnings[-1].get("message", ""))
                return JobStatus(handle, JobState.FAILED, f"Invalid: {message}", None,
                                 f"no condition after {self.invalid_after:g}s and the operator "
                                 f"warned {warnings[-1].get('reason', '')}")
        return JobStatus(handle, JobState.PENDING, "", None, "no condition yet")

    def completion_times(self, handles: Sequence[JobHandle]) -> list[str | None]:
        """When each job succeeded (pod: its last container's finishedAt; MPIJob:
        status.completionTime),
        or None when it did not (yet) or cannot be seen."""
        times: list[str | None] = []
        with self._whole_call("completion times"):
            for handle in handles:
                rec = self._record(handle)
                obj = self._api.get(rec.kind, self.namespace, rec.name) if rec else None
                if rec is None or obj is None or meta(obj).get("uid") != rec.uid:
                    times.append(None)
                elif rec.kind == "Pod":
                    phase = (obj.get("status") or {}).get("phase")
                    times.append(objects.finished_at(obj) if phase == "Succeeded" else None)
                else:
                    times.append((obj.get("status") or {}).get("completionTime"))
        return times

    # ------------------------------------------------------------ outputs

    def _result_pod(self, rec: _Record) -> Obj | None:
        if rec.kind == "Pod":
            return self._api.get("Pod", self.namespace, rec.name)
        return self.launcher_pod(rec.name)

    def fetch_outputs(self, handles: Sequence[JobHandle], dest: Path) -> list[OutputResult]:
        statuses = self.status(handles)
        with self._whole_call("fetch outputs"):
            return [self._fetch(st, dest) for st in statuses]

    def _fetch(self, st: JobStatus, dest: Path) -> OutputResult:
        rec = self._record(st.handle)
        if rec is None or st.state is JobState.UNKNOWN:
            return OutputResult(st.handle, error=f"unknown job: nothing to fetch ({st.reason})")
        if not st.state.is_terminal:
            return OutputResult(st.handle, error=f"job is {st.state}, not finished")
        pod = self._result_pod(rec)
        if pod is None:
            return OutputResult(st.handle, error="outputs are gone: no pod (purged?)")
        logs = pod_log(self._api, self.namespace, meta(pod)["name"], LOG_LIMIT,
                       container=staging.JOB, real=self.runtime.real)
        contents = {"termination-message": str(terminated(pod).get("message") or ""),
                    "logs.txt": logs}
        contents = {k: v for k, v in contents.items() if v}
        if not contents:
            return OutputResult(st.handle, error=f"pod {meta(pod)['name']} has neither a "
                                                 "termination message nor logs")
        target = dest / st.handle.job_id
        target.mkdir(parents=True, exist_ok=True)
        files = {}
        for fname, text in contents.items():
            (target / fname).write_bytes(text.encode()[:LOG_LIMIT])
            files[fname] = target / fname
        return OutputResult(st.handle, files=files)

    # ------------------------------------------------------------ kill and purge

    def _delete(self, rec: _Record) -> str:
        try:
            gone = not self._api.delete(rec.kind, self.namespace, rec.name,
                                        propagation="Foreground", uid=rec.uid)
        except ApiError as exc:
            return f"delete {rec.kind} {rec.name} refused: {exc}"
        return f"{rec.kind} {rec.name} was already gone" if gone else ""

    def kill(self, handles: Sequence[JobHandle]) -> list[ActionResult]:
        return self._act(handles, self._kill_one)

    def purge(self, handles: Sequence[JobHandle]) -> list[ActionResult]:
        return self._act(handles, self._purge_one)

    def _kill_one(self, rec: _Record, st: JobStatus) -> str:
        if rec.killed:
            return ""
        if st.state.is_terminal or st.state is JobState.UNKNOWN:
            return f"job is {st.state} ({st.native_state}); nothing to kill"
        error = self._delete(rec)
        if not error:
            rec.killed = True
        return error

    def _purge_one(self, rec: _Record, st: JobStatus) -> str:
        if not st.state.is_terminal:
            return f"job is {st.state}; kill it first"
        error = "" if rec.purged else self._delete(rec)
        if error.endswith("already gone"):
            error = ""  # a killed job's object finishing its deletion: the goal is reached
        rec.purged = rec.purged or not error
        return error

    def _act(self, handles: Sequence[JobHandle],
             one: Callable[[_Record, JobStatus], str]) -> list[ActionResult]:
        statuses = self.status(handles)
        results = []
        with self._whole_call("delete"):
            for st in statuses:
                rec = self._record(st.handle)
                error = "unknown job: not submitted by this client" if rec is None else one(rec, st)
                results.append(ActionResult(st.handle, error))
        return results

    # ------------------------------------------------------------ identities

    def identities(self, handles: Sequence[JobHandle] | None = None) -> list[Identity]:
        """Every object of these jobs (all jobs when None) as it is now: what the driver
        created and what the operator and the Job controller created for it."""
        recs = (list(self._records.values()) if handles is None
                else [r for r in map(self._record, handles) if r is not None])
        found: list[Identity] = []
        with self._whole_call("identities"):
            for rec in recs:
                found += observe(self._api, self.namespace, rec.kind, rec.name)
        for ident in found:
            self._seen.setdefault(ident.key, ident)
        return found

    def recorded_identities(self) -> list[Identity]:
        """The first observation of every object: created ones at submit, others when seen."""
        return list(self._seen.values())

    # ------------------------------------------------------------ diagnostics

    def describe_jobs(self, handles: Sequence[JobHandle]) -> str:
        """What the API server holds about these jobs (objects, launcher pod, events)."""
        try:
            return "\n".join(describe(self._api, self.namespace, self._record(handle), handle,
                                       self.launcher_pod) for handle in handles)
        except (ApiError, BackendCallError) as exc:
            return f"(the API server did not answer: {exc})"

    # ------------------------------------------------------------ the end of a run

    def end_run(self, timeout: float = 120.0) -> list[str]:
        """Delete the run's namespace (foreground: the namespace controller deletes everything
        in it first) and prove it gone, with every object this client recorded; what is left,
        one line each, or []. Called once per run by its owner at teardown, also on a control
        plane that stays up (kept by ``pytest-stacks up``, or a site's own cluster)."""
        with self._whole_call(f"delete namespace {self.namespace}"):
            return delete_namespace(self._api, self.namespace, self.run_id,
                                    self.recorded_identities(), timeout=timeout)

    def close(self) -> None:
        self._api.close()

    def tapped(self, tap: ChannelTap) -> KubernetesClient:
        """The same client over ``tap(api)``, in the run's namespace, made first (a fresh
        double has none yet; a real stack's run has): the setup is not the server's answer."""
        self.ensure_namespace()
        client = KubernetesClient(
            tap(self._api), self._stack, namespace=self.namespace, run_id=self.run_id,
            image=self._image, shape=self._shape, workers=self._workers,
            operator_version=self._operator_version, invalid_after=self.invalid_after,
            runtime=self.runtime)
        client._namespace_ready = True
        return client

    def parity_names(self) -> dict[str, str]:  # the names made up for the run, as recorded
        return {self.namespace: "<namespace>", self._prefix: "<job-prefix>", self.run_id: "<run>"}
