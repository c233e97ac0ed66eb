"""One job in the fake queue: its ad and the transitions that only touch the job itself.

The schedd decides *when* a job moves (and logs it); how its ad changes on a start, an exit, a
hold or a status change is here, so both read as HTCondor's own steps.
"""

from __future__ import annotations

import shutil
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_stacks.backends.htcondor.fake.classad import Expr, truthy
from pytest_stacks.backends.htcondor.fake.starter import (
    EXECUTABLE_NAME,
    ExecFailed,
    job_environment,
    kill,
    launch,
    make_sandbox,
    missing_outputs,
    transfer_outputs,
)


@dataclass
class Job:
    cluster: int
    proc: int
    ad: dict[str, Any]
    spool: Path
    client_files: dict[str, Path]  # what spool() uploads: name in sandbox -> client path
    process: subprocess.Popen[bytes] | None = None
    scratch: Path | None = None
    started: float = 0.0
    deadline: float | None = None
    input_names: list[str] = field(default_factory=list)
    removed_at: float | None = None

    @property
    def job_id(self) -> str:
        return f"{self.cluster}.{self.proc}"

    @property
    def status(self) -> int:
        return int(self.ad["JobStatus"])

    def set_status(self, status: int) -> None:
        if self.ad.get("JobStatus") != status:
            self.ad["LastJobStatus"] = self.ad.get("JobStatus", 0)
            self.ad["JobStatus"] = status
            self.ad["EnteredCurrentStatus"] = int(time.time())

    def stage_in(self) -> None:
        """The job's files into its sandbox; the job is idle from here."""
        self.spool.mkdir(parents=True, exist_ok=True)
        for name, path in self.client_files.items():
            if path.is_file():  # a job that never runs (the witness) may name none
                shutil.copy2(path, self.spool / name)
        self.set_status(1)

    def leave_in_queue(self, now: int) -> bool:
        return self._policy("LeaveJobInQueue", now)

    def periodic_remove(self, now: int) -> bool:
        return self._policy("PeriodicRemove", now)

    def matches_a_slot(self) -> bool:
        """The fake's slots have no attributes of their own: only ``Requirements`` that are
        false whatever the machine (``requirements = false``) keep a job idle; anything
        that depends on the machine (undefined here) is taken as met."""
        requirements = self.ad.get("Requirements")
        if not isinstance(requirements, Expr):
            return True
        return requirements.eval(self.ad) is not False

    def _policy(self, attribute: str, now: int) -> bool:
        policy = self.ad.get(attribute, False)
        if isinstance(policy, Expr):
            return policy.is_true(self.ad, now)
        return truthy(policy)

    def start(self, scratch: Path) -> None:
        """Run the job in ``scratch``; raises ExecFailed (the job is then Running, with no
        process, for the caller to hold)."""
        make_sandbox(self.spool, scratch)
        self.scratch = scratch
        env = job_environment(self.ad["_Env"], scratch, self.proc, self.ad["RequestCpus"])
        argv = [str(scratch / EXECUTABLE_NAME), *self.ad["_Argv"]]
        now = int(time.time())
        self.ad["NumJobStarts"] = int(self.ad.get("NumJobStarts", 0)) + 1
        self.ad["JobCurrentStartDate"] = now
        self.ad["JobStartDate"] = self.ad.get("JobStartDate", now)
        self.set_status(2)
        try:
            self.process = launch(argv, scratch, env)
        except ExecFailed:
            self.process = None
            raise
        self.started = time.monotonic()
        limit = self.ad.get("AllowedExecuteDuration")
        self.deadline = (self.started + float(limit)
                         if isinstance(limit, int) and limit > 0 else None)

    def record_exit(self, code: int) -> list[str]:
        """Record how the process ended; returns the declared outputs it did not write."""
        assert self.scratch is not None
        self.process = None
        if code < 0:
            self.ad.update({"ExitBySignal": True, "ExitSignal": -code})
            self.ad.pop("ExitCode", None)
        else:
            self.ad.update({"ExitBySignal": False, "ExitCode": code})
        return missing_outputs(self.ad, self.scratch)

    def complete(self, now: int) -> None:
        """Send the outputs back to the spool and mark the job Completed."""
        assert self.scratch is not None
        names = transfer_outputs(self.ad, self.scratch, self.spool, self.input_names)
        self.ad["_ReturnedOutputs"] = [Path(n).name for n in names]
        self.ad["SpooledOutputFiles"] = ",".join(self.ad["_ReturnedOutputs"])
        shutil.rmtree(self.scratch, ignore_errors=True)
        self.scratch = None
        self.ad["CompletionDate"] = now
        self.ad["RemoteWallClockTime"] = float(round(time.monotonic() - self.started, 3))
        self.set_status(4)

    def hold(self, code: int, reason: str, subcode: int = 0) -> None:
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
        self.ad.update({"HoldReason": reason, "HoldReasonCode": code,
                        "HoldReasonSubCode": subcode})
        self.set_status(5)

    def stop(self) -> None:
        kill(self.process)
        self.process = None
        if self.scratch is not None:
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.scratch = None
