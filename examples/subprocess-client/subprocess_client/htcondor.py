"""HTCondor through its command line: ``condor_submit`` a submit file (optionally spooled, as
a client on another machine than the execute nodes does), ``condor_q`` while the job is in the
queue, ``condor_history`` once it left, ``condor_transfer_data`` to fetch a spooled job's
outputs, ``condor_rm`` to remove it."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path

from subprocess_client.errors import Commands

#: HTCondor's JobStatus numbers.
STATES = {1: "IDLE", 2: "RUNNING", 3: "REMOVED", 4: "COMPLETED", 5: "HELD",
          6: "TRANSFERRING_OUTPUT", 7: "SUSPENDED"}
FINAL = frozenset({"REMOVED", "COMPLETED"})


@dataclass(frozen=True)
class CondorJob:
    job_id: str  # cluster.proc
    state: str
    exit_code: int | None = None
    hold_reason: str = ""

    @property
    def finished(self) -> bool:
        return self.state in FINAL


def _parse(job_id: str, line: str) -> CondorJob | None:
    parts = line.split(None, 2)
    if not parts or not parts[0].isdigit():
        return None
    code = int(parts[1]) if len(parts) > 1 and parts[1].lstrip("-").isdigit() else None
    reason = parts[2] if len(parts) > 2 and parts[2] != "undefined" else ""
    return CondorJob(job_id, STATES.get(int(parts[0]), f"STATUS_{parts[0]}"), code, reason)


class CondorJobs(Commands):
    def submit(self, submit_file: str | Path, *, spool: bool = False) -> str:
        """``condor_submit [-spool] -terse FILE``: the first job's id (cluster.proc)."""
        done = self.run(["condor_submit", *(["-spool"] if spool else []), "-terse",
                         str(submit_file)])
        return done.stdout.split()[0]

    def job(self, job_id: str) -> CondorJob:
        attributes = ["JobStatus", "ExitCode", "HoldReason"]
        queued = self.run(["condor_q", job_id, "-af", *attributes], check=False)
        found = _parse(job_id, queued.stdout.strip()) if queued.returncode == 0 else None
        if found is not None:
            return found
        past = self.run(["condor_history", job_id, "-limit", "1", "-af", *attributes],
                        check=False)
        found = _parse(job_id, past.stdout.strip()) if past.returncode == 0 else None
        return found or CondorJob(job_id, "UNKNOWN")

    def wait(self, job_id: str, timeout: float = 180.0, until: frozenset[str] = FINAL
             ) -> CondorJob:
        deadline = time.monotonic() + timeout
        while True:
            found = self.job(job_id)
            if found.state in until or found.finished or time.monotonic() > deadline:
                return found
            time.sleep(0.5)

    def transfer(self, job_id: str) -> None:
        """``condor_transfer_data``: a spooled job's outputs into its initial folder."""
        self.run(["condor_transfer_data", job_id])

    def remove(self, job_id: str) -> None:
        self.run(["condor_rm", job_id])
