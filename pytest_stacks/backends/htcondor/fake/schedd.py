"""The fake schedd: the queue, the job states, the schedd's periodic evaluation and history.

What it models, and the evidence for it, is listed in :mod:`pytest_stacks.backends.htcondor.fake`.
"""

from __future__ import annotations

import itertools
import os
import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_stacks import places
from pytest_stacks.backends.htcondor.api import ScheddError, Submitted, parse_condor_version
from pytest_stacks.backends.htcondor.fake import startd
from pytest_stacks.backends.htcondor.fake.classad import ERROR, UNDEFINED, ClassAdSyntaxError, Expr
from pytest_stacks.backends.htcondor.fake.commands import FakeCondorCommands
from pytest_stacks.backends.htcondor.fake.job import Job
from pytest_stacks.backends.htcondor.fake.projection import constraint_of, projected
from pytest_stacks.backends.htcondor.fake.starter import (
    EXECUTABLE_NAME,
    STDERR_NAME,
    STDOUT_NAME,
    ExecFailed,
)
from pytest_stacks.backends.htcondor.fake.submit import Submitter, is_one_shot_client, parse_job

# Kept apart from the driver's own table on purpose: a fake that imports what the driver
# believes would agree with the driver forever.
STATUS_NAMES = {1: "Idle", 2: "Running", 3: "Removed", 4: "Completed", 5: "Held",
                6: "Transferring Output", 7: "Suspended"}
REMOVED_LINGER = 0.25  # seconds a removed job stays in the queue (0.26-0.28 s seen on 23.9.6)
#: Attributes a job's owner may not edit.
IMMUTABLE = frozenset(a.lower() for a in (
    "ClusterId", "ProcId", "Owner", "User", "JobStatus", "MyType", "TargetType", "GlobalJobId",
    "QDate", "CompletionDate", "EnteredCurrentStatus", "StageOutFinish", "StageInFinish"))


class FakeSchedd:
    """A schedd (plus collector, negotiator and a 4-slot startd) in this process."""

    def __init__(self, version: str, *, client_version: str = "25.14.1",
                 periodic_expr_interval: float = 0.2, slots: int = 4,
                 removed_linger: float = REMOVED_LINGER,
                 owner: str = "submitter", uid_domain: str = "pytest-stacks.test") -> None:
        self.version = parse_condor_version(version)
        self.client = parse_condor_version(client_version)
        self.periodic_expr_interval = float(periodic_expr_interval)
        self.removed_linger = float(removed_linger)
        self.slots = slots
        self.owner = owner
        self.uid_domain = uid_domain
        self.root = places.scratch_folder("fake-htcondor")
        (self.root / "spool").mkdir()
        (self.root / "execute").mkdir()
        self._clusters = itertools.count(1)
        self._scratch_ids = itertools.count(1)
        self._queue: dict[str, Job] = {}
        self._history: list[dict[str, Any]] = []  # oldest first
        self._lock = threading.RLock()
        self._next_eval = time.monotonic() + self.periodic_expr_interval
        self._log: list[str] = []
        self._closed = False
        #: The HTCondor tools' command line in front of this schedd (a login node's view).
        self.commands = FakeCondorCommands(self)
        self._log_line(f"** condor_schedd (fake) {self.version} starting, client "
                       f"{self.client}, PERIODIC_EXPR_INTERVAL={self.periodic_expr_interval}")

    def daemon_version(self) -> str:
        return f"$CondorVersion: {self.version} (pytest-stacks fake) $"

    def client_version(self) -> str:
        return f"$CondorVersion: {self.client} (pytest-stacks fake client) $"

    @property
    def one_shot_client(self) -> bool:
        return is_one_shot_client(self.client)

    # -------------------------------------------------------------- submit and spool

    def submit(self, description: Mapping[str, str], *, spool: bool = True,
               count: int = 1, client: str | None = None) -> Submitted:
        with self._lock:
            self._check_open()
            self._tick()
            cluster = next(self._clusters)
            jobs = [self._make_job(description, cluster, proc, client)
                    for proc in range(max(1, count))]
            for job in jobs:
                self._queue[job.job_id] = job
                self._log_line(f"Submitting new job {job.job_id}"
                               + (" (held: spooling input)" if spool else ""))
                if not spool:  # idle at once, its files read where the client has them
                    job.ad["_Spooled"] = False
                    job.stage_in()
            return Submitted(cluster=cluster, first_proc=0, num_procs=len(jobs),
                             native=[j.job_id for j in jobs])

    def _make_job(self, description: Mapping[str, str], cluster: int, proc: int,
                  client: str | None = None) -> Job:
        """``client``: who submits, as it prints its version (None: the bindings)."""
        spool = self.root / "spool" / str(cluster % 10000) / str(proc) / (
            f"cluster{cluster}.proc{proc}.subproc0")
        who = Submitter(self.owner, self.uid_domain, client or self.client_version())
        parsed = parse_job(description, cluster, proc, spool, who)
        return Job(cluster, proc, parsed.ad, spool, parsed.client_files,
                   input_names=parsed.input_names)

    def spool(self, submitted: Submitted) -> None:
        with self._lock:
            self._check_open()
            for job_id in submitted.native or []:
                job = self._queue.get(job_id)
                if job is None:
                    raise ScheddError(f"spool: job {job_id} is not in the queue")
                missing = [str(p) for p in job.client_files.values() if not p.is_file()]
                if missing:  # the job stays held (spooling) in the queue, as for real
                    raise ScheddError(
                        f"DCSchedd::spoolJobFiles:7002:File transfer failed for target job "
                        f"{job_id}: TOOL at 127.0.0.1 failed to send file(s) to <127.0.0.1:9618>:"
                        f" |Error: 1 total failures: first failure: reading from file "
                        f"{missing[0]}: (errno 2) No such file or directory")
                now = int(time.time())
                job.ad["StageInStart"] = now
                job.stage_in()
                job.ad["StageInFinish"] = now
                # Seen on 23.9.6 (tests/parity): the release leaves the hold's reason and
                # code in the ad as undefined, which a query returns (None here).
                job.ad.update({"HoldReason": None, "HoldReasonCode": None})
                job.ad.pop("HoldReasonSubCode", None)
                self._log_line(f"Job {job_id} spooled, released")
            self._tick()

    # -------------------------------------------------------------- retrieval

    def retrieve(self, job_id: str) -> None:
        with self._lock:
            self._check_open()
            self._tick()
            job = self._queue.get(job_id)
            if job is None:
                # The real bindings raise nothing and write nothing here.
                self._log_line(f"Transfer data request for {job_id}: no such job in the queue")
                return
            if job.status != 4:
                raise ScheddError(f"Failed to retrieve job {job_id}: job is "
                                  f"{STATUS_NAMES.get(job.status)}, output not available")
            now = int(time.time())
            job.ad["StageOutStart"] = now
            self._write_back(job)
            job.ad["StageOutFinish"] = int(time.time())
            self._log_line(f"Transferred output of job {job_id} to the client")

    def _write_back(self, job: Job) -> None:
        """The job's outputs, stdout and stderr into its ``initialdir`` (a retrieval; or the
        shadow at exit, for a job that was not spooled)."""
        iwd = Path(job.ad["SUBMIT_Iwd"])
        if not iwd.is_dir():
            raise ScheddError(f"Failed to retrieve job {job.job_id}: cannot write to {iwd}")
        for name in self._returned_outputs(job):
            shutil.copy2(job.spool / name, iwd / name)
        for attr, sandbox_name in (("Out", STDOUT_NAME), ("Err", STDERR_NAME)):
            target = str(job.ad.get(attr, "/dev/null"))
            if target != "/dev/null" and (job.spool / sandbox_name).is_file():
                dest = Path(target) if os.path.isabs(target) else iwd / target
                shutil.copy2(job.spool / sandbox_name, dest)

    def _returned_outputs(self, job: Job) -> list[str]:
        return list(job.ad.get("_ReturnedOutputs", []))

    # -------------------------------------------------------------- actions

    def act(self, action: str, job_ids: Sequence[str], reason: str = "") -> dict[str, Any]:
        with self._lock:
            self._check_open()
            self._tick()
            if action.lower() != "remove":
                raise ScheddError(f"action {action!r} is not modelled by the fake")
            totals = {"TotalSuccess": 0, "TotalNotFound": 0, "TotalAlreadyDone": 0,
                      "TotalBadStatus": 0, "TotalPermissionDenied": 0, "TotalError": 0,
                      "TotalJobAds": len(job_ids), "TotalChangedAds": 0}
            for job_id in job_ids:
                job = self._queue.get(job_id)
                if job is None:
                    totals["TotalNotFound"] += 1
                    continue
                if job.status == 3:
                    totals["TotalAlreadyDone"] += 1
                    continue
                self._remove(job, f"{reason or 'Python-initiated action'} "
                                  f"(by user {self.owner})")
                totals["TotalSuccess"] += 1
                totals["TotalChangedAds"] += 1
            return totals

    def _remove(self, job: Job, reason: str) -> None:
        # Seen on 23.9.6 (tests/parity): a job removed while running keeps ExitBySignal false
        # and gets no ExitSignal or ExitCode; the starter's SIGTERM is not in the ad. A kept
        # completed job keeps its ExitCode.
        if job.status == 2:
            job.ad.pop("ExitCode", None)
        job.stop()
        job.ad["RemoveReason"] = reason
        job.set_status(3)
        job.removed_at = time.monotonic()
        self._log_line(f"Job {job.job_id} marked for removal")

    def edit(self, job_ids: Sequence[str], attribute: str, value: str) -> int:
        with self._lock:
            self._check_open()
            self._tick()
            if attribute.lower() in IMMUTABLE or attribute.startswith("_"):
                raise ScheddError(f"edit: Unable to edit attribute {attribute}: permission "
                                  f"denied")
            try:
                expr = Expr(value)
            except ClassAdSyntaxError as exc:
                raise ScheddError(f"edit: Unable to parse {value!r}: {exc}") from exc
            parsed = expr.eval({})
            matched = 0
            for job_id in job_ids:
                job = self._queue.get(job_id)
                if job is None:
                    continue
                known = {k.lower(): k for k in job.ad}
                key = known.get(attribute.lower(), attribute)
                # A literal is stored as its value (the bindings then show False, not
                # "false"); anything else stays an expression.
                job.ad[key] = expr if parsed is UNDEFINED or parsed is ERROR else parsed
                matched += 1
                self._log_line(f"Job {job_id}: {key} = {value}")
            return matched

    # -------------------------------------------------------------- queries

    def query(self, constraint: str = "true",
              projection: Sequence[str] = ()) -> list[dict[str, Any]]:
        with self._lock:
            self._check_open()
            self._tick()
            expr = constraint_of(constraint)
            now = int(time.time())
            # Seen on 23.9.6: the schedd adds its clock to every ad a query returns.
            return [{**projected(job.ad, projection), "ServerTime": now}
                    for job in self._queue.values() if expr.is_true(job.ad, now)]

    def history(self, constraint: str = "true", projection: Sequence[str] = (),
                match: int = -1) -> list[dict[str, Any]]:
        with self._lock:
            self._check_open()
            self._tick()
            expr = constraint_of(constraint)
            now = int(time.time())
            out: list[dict[str, Any]] = []
            for ad in reversed(self._history):
                if match >= 0 and len(out) >= match:
                    break
                if expr.is_true(ad, now):
                    out.append(projected(ad, projection))
            return out

    def slot_ads(self, constraint: str = "true",
                 projection: Sequence[str] = ()) -> list[dict[str, Any]]:
        return startd.matching(self.slots, self.version, constraint_of(constraint),
                               projection)

    # -------------------------------------------------------------- the schedd's clock

    def run_periodic(self) -> None:
        """Run the periodic policy evaluation now (what PERIODIC_EXPR_INTERVAL schedules)."""
        with self._lock:
            self._poll_jobs()
            self._evaluate_periodic()

    def _tick(self) -> None:
        self._poll_jobs()
        self._reap_removed()
        mono = time.monotonic()
        if mono >= self._next_eval:
            self._evaluate_periodic()
            interval = max(self.periodic_expr_interval, 1e-3)
            missed = int((mono - self._next_eval) // interval) + 1
            self._next_eval += missed * interval
        self._start_idle()

    def _poll_jobs(self) -> None:
        for job in list(self._queue.values()):
            if job.status != 2 or job.process is None:
                continue
            code = job.process.poll()
            if code is None:
                if job.deadline is not None and time.monotonic() > job.deadline:
                    job.stop()
                    limit = job.ad.get("AllowedExecuteDuration")
                    self._hold(job, 47, f"The job exceeded allowed execute duration of "
                                        f"{limit}s")
                continue
            self._finish(job, code)

    def _start_idle(self) -> None:
        running = sum(1 for j in self._queue.values() if j.status == 2)
        for job in list(self._queue.values()):
            if running >= self.slots:
                break
            if job.status == 1 and job.matches_a_slot():
                self._start(job)
                running += 1

    def _start(self, job: Job) -> None:
        scratch = self.root / "execute" / f"dir_{next(self._scratch_ids)}"
        try:
            job.start(scratch)
        except ExecFailed as exc:
            self._hold(job, 6, f"Error from slot1@fake: Failed to execute "
                               f"'{scratch / EXECUTABLE_NAME}': {exc.strerror}")
            return
        self._log_line(f"Started job {job.job_id} in {scratch.name}")

    def _finish(self, job: Job, code: int) -> None:
        assert job.scratch is not None
        now = int(time.time())
        missing = job.record_exit(code)
        if missing:
            self._hold(job, 12, (
                f"Transfer output files failure at execution point slot1_1@fake while "
                f"sending files to access point fake. Details: reading from file "
                f"{job.scratch / missing[0]}: (errno 2) No such file or directory"),
                subcode=2)
            return
        job.complete(now)
        if job.ad.get("_Spooled") is False:
            try:  # the shadow writes a job's outputs back where its files came from
                self._write_back(job)
            except (OSError, ScheddError) as exc:
                self._log_line(f"Job {job.job_id}: writing its outputs back failed: {exc}")
        self._log_line(f"Job {job.job_id} terminated: "
                       + (f"signal {-code}" if code < 0 else f"exited normally with status {code}"))
        # The shadow's exit path evaluates LeaveJobInQueue right away.
        if not job.leave_in_queue(now):
            self._leave_queue(job)

    def _hold(self, job: Job, code: int, reason: str, subcode: int = 0) -> None:
        job.hold(code, reason, subcode)
        self._log_line(f"Job {job.job_id} put on hold: {reason}")

    def _evaluate_periodic(self) -> None:
        now = int(time.time())
        for job in list(self._queue.values()):
            if job.status == 4 and not job.leave_in_queue(now):
                self._leave_queue(job)
            elif job.status in (1, 2, 5) and job.periodic_remove(now):
                expression = job.ad["PeriodicRemove"]
                self._remove(job, f"The job attribute PeriodicRemove expression "
                                  f"'{expression}' evaluated to TRUE")

    def _reap_removed(self) -> None:
        # A removed job leaves once its shadow is gone: about 0.3 s on 23.9.6, not tied to
        # the periodic evaluation.
        mono = time.monotonic()
        for job in list(self._queue.values()):
            if job.status == 3 and job.removed_at is not None and \
                    mono - job.removed_at >= self.removed_linger:
                self._leave_queue(job)

    def _leave_queue(self, job: Job) -> None:
        self._queue.pop(job.job_id, None)
        shutil.rmtree(job.spool.parent, ignore_errors=True)  # the job's spool goes with it
        final = {k: v for k, v in job.ad.items() if not k.startswith("_")}
        final["EnteredHistoryTime"] = int(time.time())
        self._history.append(final)
        self._log_line(f"Job {job.job_id} left the queue (JobStatus "
                       f"{job.status}), moved to history")

    # -------------------------------------------------------------- lifecycle

    def _check_open(self) -> None:
        if self._closed:
            raise ScheddError("Failed to connect to the schedd: the fake schedd is closed")

    def _log_line(self, text: str) -> None:
        stamp = time.strftime("%m/%d/%y %H:%M:%S")
        self._log.append(f"{stamp} {text}")

    def daemon_log(self) -> str:
        with self._lock:
            return "\n".join(["# SchedLog (fake)", *self._log[-300:]])

    def close(self) -> None:
        with self._lock:
            for job in self._queue.values():
                job.stop()
            self._closed = True
        shutil.rmtree(self.root, ignore_errors=True)
