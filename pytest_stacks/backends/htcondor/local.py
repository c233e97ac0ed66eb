"""What the HTCondor client keeps on its own side, per job.

The pool shares no filesystem with the client, so a job's local ``initialdir`` is the only
place its outputs ever land here, and what is found there after a retrieval is the only proof
that the retrieval worked (a retrieval of a job that left the queue raises nothing). The file
handling lives here so the driver reads as schedd calls and their failure modes.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from pytest_stacks.backends.htcondor.translate import STDERR_FILE, STDOUT_FILE


@dataclass
class LocalJob:
    """A submitted job's local directories and what it declared."""

    job_id: str
    root: Path
    outputs: tuple[str, ...]
    output_retrieval: str
    retrievals: int = 0
    purged: bool = False

    @property
    def iwd(self) -> Path:
        return self.root / "iwd"

    def clear_retrieved(self) -> None:
        """Clear what an earlier retrieval left, so that what is found later really arrived."""
        iwd = self.iwd
        for name in [*self.outputs, STDOUT_FILE, STDERR_FILE]:
            (iwd / name).unlink(missing_ok=True)
        if not self.outputs:
            for stale in iwd.iterdir():
                if stale.is_file():
                    stale.unlink()

    def missing(self) -> list[str]:
        """The declared outputs (and the job's stdout file) that are not in ``initialdir``."""
        return [n for n in [*self.outputs, STDOUT_FILE] if not (self.iwd / n).is_file()]

    def copy_outputs(self, target: Path) -> dict[str, Path]:
        """Copy the retrieved outputs (every file but the job's own stdout and stderr when
        none were declared) into ``target``."""
        iwd = self.iwd
        names = list(self.outputs) or sorted(
            p.name for p in iwd.iterdir() if p.is_file() and p.name not in (STDOUT_FILE,
                                                                            STDERR_FILE))
        target.mkdir(parents=True, exist_ok=True)
        files = {}
        for name in names:
            shutil.copyfile(iwd / name, target / name)
            files[name] = target / name
        return files

    def log_tails(self) -> list[tuple[str, str]]:
        """(file name, last 4000 characters) of the job's stdout and stderr, where present."""
        if self.purged:
            return []
        tails = []
        for name in (STDOUT_FILE, STDERR_FILE):
            path = self.iwd / name
            if path.is_file():
                tails.append((name, path.read_bytes().decode("utf-8", "replace")[-4000:]))
        return tails

    def forget(self) -> None:
        """Delete the local copies, so a later fetch is a per-job error at once."""
        shutil.rmtree(self.root, ignore_errors=True)
        self.purged = True


@dataclass
class Shared:
    """State siblings made by :meth:`HTCondorClient.with_options` share."""

    jobs: dict[str, LocalJob] = field(default_factory=dict)
    versions: dict[str, str] | None = None
