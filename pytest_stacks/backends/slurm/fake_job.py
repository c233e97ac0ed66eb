"""One job as the fake slurmctld keeps it (shared by the host and its query tools)."""

from __future__ import annotations

import subprocess
import time
from dataclasses import dataclass, field


@dataclass
class Job:
    job_id: int
    name: str
    workdir: str
    argv: list[str]
    stdout_path: str
    stderr_path: str
    user: str
    submit_dir: str = "/"
    partition: str = "debug"
    state: str = "PENDING"
    reason: str = "None"
    exit_code: int = 0
    signal: int = 0
    process: subprocess.Popen[bytes] | None = None
    submitted: float = field(default_factory=time.monotonic)
    started: float | None = None
    ended: float | None = None
    end_stamp: str = "Unknown"  # the wall-clock end, as the completion log writes it
    command: str = ""  # the script as squeue's %o shows it (its path, or the operand)
