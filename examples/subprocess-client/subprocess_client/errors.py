"""The one error the client raises: a scheduler command that failed, with its own words."""

from __future__ import annotations

import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path


class SchedulerError(RuntimeError):
    def __init__(self, argv: Sequence[str], code: int, stderr: str) -> None:
        self.argv = list(argv)
        self.code = code
        self.stderr = stderr
        super().__init__(f"{' '.join(argv)} exited {code}: {stderr.strip()}")


class Commands:
    """Runs the scheduler's commands in ``cwd`` with ``env`` (None: this process's)."""

    def __init__(self, *, env: Mapping[str, str] | None = None, cwd: Path | None = None,
                 timeout: float = 120.0) -> None:
        self.env = dict(env) if env is not None else None
        self.cwd = cwd
        self.timeout = timeout

    def run(self, argv: Sequence[str], *, check: bool = True,
            stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(list(argv), env=self.env, cwd=self.cwd, input=stdin,
                              capture_output=True, text=True, timeout=self.timeout,
                              check=False)
        if check and done.returncode != 0:
            raise SchedulerError(argv, done.returncode, done.stderr)
        return done
