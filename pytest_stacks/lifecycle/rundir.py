"""The run directory: the one place that knows its files.

Every process of a run (the owner and its xdist workers) meets here. Per stack it holds a lock
(one bring-up), a record (how to attach, which versions were proven) or an error (so later
tests fail fast with the same infrastructure error), and per run the owner's identity, which is
how a later run tells a dead run's directory from a live one. Credentials (tokens) live below
it, so the directories are private to this user.
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_stacks import places, progress
from pytest_stacks.errors import InfrastructureError, StacksError
from pytest_stacks.evidence import write_whole
from pytest_stacks.places import runs_root, up_root
from pytest_stacks.providers.base import RunContext, StackInfo
from pytest_stacks.providers.labels import owner_alive

OWNER_FILE = "owner.json"
_RECORD_SUFFIX = ".json"
_ERROR_SUFFIX = ".error.json"


def new_run_id() -> str:
    return f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}"


def reap_dead_run_dirs() -> tuple[list[Path], list[str]]:
    """Remove run directories (and the tokens in them) left by runs whose owner is dead, and the
    files of doubles whose process is dead. Returns what was removed, and a problem per owner
    record that cannot be read (its folder is left alone: nobody can tell whether its run is
    alive, and one bad file must not keep other runs from starting or being reaped)."""
    removed = places.reap_dead_scratch()
    problems: list[str] = []
    kept = places.kept_runs()
    for folder in runs_root().iterdir():
        # Folders of runs from before owner.json existed, or whose start was cut short.
        if (folder.is_dir() and folder.name not in places.NOT_RUNS
                and folder.name not in kept and not (folder / OWNER_FILE).exists()
                and not (folder / OWNER_FILE).is_symlink()
                and time.time() - folder.stat().st_mtime > 86400):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    for owner_file in [*runs_root().glob(f"*/{OWNER_FILE}"),
                       *up_root().glob(f"*/{OWNER_FILE}")]:
        if owner_file.parent.name in kept:
            continue  # kept (`pytest-stacks up`, --stack-keep): only `down` ends it
        try:
            pid, start = read_owner(owner_file)
        except ValueError as exc:
            problems.append(f"{owner_file}: {exc}; its run directory is left alone. If no "
                            f"run uses {owner_file.parent} any more, remove that folder "
                            f"(or the file, and the next run reaps the folder after a day)")
            continue
        if not owner_alive(pid, start):
            shutil.rmtree(owner_file.parent, ignore_errors=True)
            removed.append(owner_file.parent)
    return removed, problems


def unreadable_owners() -> list[str]:
    """A problem per run directory owner record that cannot be read (what
    :func:`reap_dead_run_dirs` would name), nothing removed: ``reap --dry-run`` says them
    too, so a malformed record is never passed over as "nothing to reap"."""
    problems = []
    kept = places.kept_runs()
    for owner_file in [*runs_root().glob(f"*/{OWNER_FILE}"), *up_root().glob(f"*/{OWNER_FILE}")]:
        if owner_file.parent.name in kept:
            continue
        try:
            read_owner(owner_file)
        except ValueError as exc:
            problems.append(f"{owner_file}: {exc}; its run directory is left alone. If no run "
                            f"uses {owner_file.parent} any more, remove that folder")
    return problems


def read_owner(path: Path) -> tuple[int, str]:
    """(pid, start) of a run directory's owner record, or ValueError saying what is wrong with
    it: checked before it is opened (:func:`~pytest_stacks.places.read_record`) and before it
    is trusted (a wrong type is not a dead owner, nor a live one)."""
    data = places.read_record(path)
    pid, start = data.get("pid"), data.get("start")
    if type(pid) is not int or pid <= 0:
        raise ValueError(f"field 'pid' is {pid!r}, not a process id (a whole number > 0)")
    if not isinstance(start, str):
        raise ValueError(f"field 'start' is {start!r}, not a process start time (a string)")
    return pid, start


@dataclass
class StackRecord:
    """What the run directory says about one stack that came up."""

    stack: str
    info: StackInfo
    observed_version: str = ""
    client_version: str = ""
    startup_s: float = 0.0
    started_at: float = 0.0  # wall clock (epoch seconds) when its bring-up began
    #: Which bring-up of the stack in this run this is: 1, then one more per infra retry
    #: (a broken stack brought up fresh); how a process tells that the stack it holds was
    #: replaced under it.
    attempt: int = 1

    def to_json(self) -> dict[str, Any]:
        return {"stack": self.stack, "info": self.info.to_json(),
                "observed_version": self.observed_version,
                "client_version": self.client_version, "startup_s": round(self.startup_s, 2),
                "started_at": round(self.started_at, 3), "attempt": self.attempt}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> StackRecord:
        return cls(str(data["stack"]), StackInfo.from_json(data["info"]),
                   str(data.get("observed_version", "")), str(data.get("client_version", "")),
                   float(data.get("startup_s", 0.0)), float(data.get("started_at", 0.0)),
                   int(data.get("attempt", 1)))


class RunDirectory:
    """The files of one run directory; created on first use, so a run that never needs a stack
    leaves nothing behind."""

    def __init__(self, ctx: RunContext) -> None:
        self.path = ctx.run_dir
        self._ctx = ctx

    def ensure(self) -> None:
        if self.path.is_dir():
            return
        try:
            _, problems = reap_dead_run_dirs()
        except (StacksError, OSError) as exc:
            problems = [f"cannot reap dead runs' directories: {exc}"]
        for problem in problems:  # said, not raised: another run's file must not stop this one
            progress.say(f"pytest-stacks: {problem}")
        self.path.mkdir(mode=0o700, parents=True, exist_ok=True)
        owner = self.path / OWNER_FILE
        if not owner.exists():  # whole, or EvidenceError naming it: unowned, it is reaped
            write_whole(owner, json.dumps({"pid": self._ctx.owner_pid,
                                           "start": self._ctx.owner_start}),
                        what="run owner record", mode=0o600)

    def stack(self, name: str) -> StackFiles:
        return StackFiles(self.path, name)

    def records(self) -> list[StackRecord]:
        if not self.path.is_dir():
            return []
        out = []
        for path in sorted(self.path.glob(f"*{_RECORD_SUFFIX}")):
            if path.name.endswith(_ERROR_SUFFIX) or path.name == OWNER_FILE:
                continue
            try:
                text = path.read_text()
            except FileNotFoundError:
                continue  # forgotten meanwhile: that stack's teardown just ended
            out.append(StackRecord.from_json(json.loads(text)))
        return out

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)


class StackFiles:
    """One stack's files in the run directory: its lock, its record, its error; and the
    records of the same stack kept by ``pytest-stacks up``."""

    def __init__(self, folder: Path, stack: str) -> None:
        self.stack = stack
        self._record_path = folder / f"{stack}{_RECORD_SUFFIX}"
        self._error_path = folder / f"{stack}{_ERROR_SUFFIX}"
        self._lock_path = folder / f"{stack}.lock"
        self._holders = folder / f"{stack}.holders"

    def lock(self) -> FileLock:
        return FileLock(str(self._lock_path))

    def record(self) -> StackRecord | None:
        if not self._record_path.exists():
            return None
        return StackRecord.from_json(json.loads(self._record_path.read_text()))

    def write(self, record: StackRecord) -> None:
        tmp = self._record_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(record.to_json()))
        tmp.replace(self._record_path)

    def forget(self) -> None:
        self._record_path.unlink(missing_ok=True)

    def error(self) -> InfrastructureError | None:
        if not self._error_path.exists():
            return None
        saved = json.loads(self._error_path.read_text())
        return InfrastructureError(self.stack, saved["message"], saved.get("logs", ""),
                                   started=saved.get("started", True),
                                   during_run=bool(saved.get("during_run", False)))

    def write_error(self, error: InfrastructureError) -> None:
        """Whole or not at all (a temporary file renamed): every process reads it without
        the lock, and half a file would read as a crash, not as the stack's error."""
        tmp = self._error_path.with_suffix(".tmp")
        tmp.write_text(json.dumps({"message": error.message, "logs": error.logs,
                                   "started": error.started, "during_run": error.during_run}))
        tmp.replace(self._error_path)

    def clear_error(self) -> None:
        """The broken stack the error was about is gone (an infra retry brings a fresh one)."""
        self._error_path.unlink(missing_ok=True)

    def made_nothing(self) -> bool:
        """No process of the run made anything of this stack: none tried to bring it up (its
        lock was never taken), or the bring-up refused in its preflight; and it has no
        record (up, or ended early: the pool remembers those)."""
        if self.record() is not None:
            return False
        if not self._lock_path.exists():
            return True
        error = self.error()
        return error is not None and not error.started

    def hold(self, pid: int) -> None:
        """This process uses the stack (its tests' fixtures hold it)."""
        self._holders.mkdir(exist_ok=True)
        (self._holders / f"{pid}.released").unlink(missing_ok=True)
        (self._holders / f"{pid}.held").touch()

    def let_go(self, pid: int) -> None:
        """This process's fixtures on the stack are finalized: it will not touch it again
        unless a later test asks for it (then :meth:`hold` says so again)."""
        if (self._holders / f"{pid}.held").exists():
            (self._holders / f"{pid}.released").touch()

    def all_let_go(self) -> bool:
        """Whether some process held the stack and every one that did has let go of it."""
        if not self._holders.is_dir():
            return False
        held = {p.stem for p in self._holders.glob("*.held")}
        return bool(held) and held <= {p.stem for p in self._holders.glob("*.released")}

    def kept(self) -> list[StackRecord]:
        """Records of this stack kept by ``pytest-stacks up`` (to be borrowed), oldest run
        first. Stacks kept because a test failed on them are for a person to look at, never
        borrowed."""
        found = []
        for path in sorted(up_root().glob(f"*/{self._record_path.name}")):
            try:
                record = StackRecord.from_json(json.loads(path.read_text()))
            except (OSError, ValueError, KeyError, TypeError):
                continue
            record.info = dataclasses.replace(record.info, kept_run=path.parent.name)
            found.append(record)
        return found
