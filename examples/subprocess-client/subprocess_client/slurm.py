"""Slurm through its command line.

The state of a job is asked where Slurm keeps it: ``squeue`` while the job is queued or
running, ``scontrol show job`` while slurmctld still remembers the finished job (MinJobAge),
then ``sacct`` (accounting storage). A site without accounting storage (the single-node
stacks of pytest-stacks, today) answers ``sacct`` with an error; the client says UNKNOWN then
instead of guessing.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass
from pathlib import Path

from subprocess_client.errors import Commands, SchedulerError

FINAL = frozenset({"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY",
                   "PREEMPTED", "BOOT_FAIL", "DEADLINE"})


@dataclass(frozen=True)
class SlurmJob:
    job_id: str
    state: str  # Slurm's own word: PENDING, RUNNING, COMPLETED, FAILED, CANCELLED, UNKNOWN
    exit_code: int | None = None

    @property
    def finished(self) -> bool:
        return self.state in FINAL


class SlurmJobs(Commands):
    def submit(self, script: str | Path, *options: str) -> str:
        """``sbatch --parsable OPTIONS SCRIPT`` (a path, relative to the working folder); the
        job id."""
        done = self.run(["sbatch", "--parsable", *options, str(script)])
        return done.stdout.strip().split(";")[0]

    def submit_command(self, command: str, *options: str) -> str:
        """``sbatch --parsable --wrap=COMMAND``."""
        done = self.run(["sbatch", "--parsable", *options, f"--wrap={command}"])
        return done.stdout.strip().split(";")[0]

    def job(self, job_id: str) -> SlurmJob:
        queued = self.run(["squeue", "-h", "-o", "%T", "-j", job_id], check=False)
        state = queued.stdout.strip().split("\n")[0].strip() if queued.returncode == 0 else ""
        if state and state not in FINAL:
            return SlurmJob(job_id, state)
        shown = self.run(["scontrol", "-o", "show", "job", job_id], check=False)
        if shown.returncode == 0 and "JobState=" in shown.stdout:
            fields = dict(re.findall(r"(\w+)=(\S*)", shown.stdout))
            code = fields.get("ExitCode", "")
            return SlurmJob(job_id, fields["JobState"],
                            int(code.split(":")[0]) if code[:1].isdigit() else None)
        accounted = self.run(["sacct", "-j", job_id, "-X", "-n", "-P", "-o", "State,ExitCode"],
                             check=False)
        line = accounted.stdout.strip().split("\n")[0] if accounted.returncode == 0 else ""
        if "|" in line:
            word, code = line.split("|", 1)
            return SlurmJob(job_id, word.split()[0],
                            int(code.split(":")[0]) if code[:1].isdigit() else None)
        return SlurmJob(job_id, "UNKNOWN")

    def wait(self, job_id: str, timeout: float = 120.0) -> SlurmJob:
        deadline = time.monotonic() + timeout
        while True:
            found = self.job(job_id)
            if found.finished or time.monotonic() > deadline:
                return found
            time.sleep(0.5)

    def cancel(self, job_id: str) -> None:
        self.run(["scancel", job_id])

    def wait_for_state(self, job_id: str, states: set[str], timeout: float = 60.0) -> SlurmJob:
        deadline = time.monotonic() + timeout
        while True:
            found = self.job(job_id)
            if found.state in states or found.finished or time.monotonic() > deadline:
                return found
            time.sleep(0.3)


__all__ = ["FINAL", "SchedulerError", "SlurmJob", "SlurmJobs"]
