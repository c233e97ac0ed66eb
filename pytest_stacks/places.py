"""Where runs live on this machine, and which of them are kept.

Run directories hold per-run credentials (tokens, ssh keys, kubeconfigs), so they sit in one
private folder of this user. A run is *kept* when its stacks must outlive it: brought up by
``pytest-stacks up`` for a development loop, or left running by ``--stack-keep=on-failure`` for
a person to look at. Kept-ness is a record of its own (``kept-runs/<run id>.json``: the run
directory, its stacks, why), not a value smuggled into an owner's start time: every reaper
(containers and networks, kind clusters, run directories) leaves a kept run alone, and only
``pytest-stacks down`` ends it. Run directories follow ``TMPDIR``; the records do not (this
user's state folder, ``$XDG_STATE_HOME/pytest-stacks``): a reaper works from Docker's labels,
which are machine-wide, so a run with another ``TMPDIR`` (another shell, a CI job beside this
one) must see the same records or it reaps what was kept. Nothing here knows about stacks
beyond their names.
"""

from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

from pytest_stacks.errors import StacksError

UP_FOLDER = "kept"  # run directories of `pytest-stacks up`
MARKS_FOLDER = "kept-runs"  # one record per kept run, whatever kept it


def runs_root() -> Path:
    """This user's private folder of run directories (0700, owned by us, not a symlink).

    Run directories hold per-run credentials (IDTOKENs), so a shared /tmp must not let another
    user pre-create or read the folder.
    """
    root = Path(tempfile.gettempdir()) / f"pytest-stacks-{os.getuid()}"
    root.mkdir(mode=0o700, exist_ok=True)
    info = os.lstat(root)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise StacksError(f"{root} is not a directory owned by this user; remove it and rerun")
    if stat.S_IMODE(info.st_mode) != 0o700:
        root.chmod(0o700)
    return root


def up_root() -> Path:
    """Where ``pytest-stacks up`` makes the run directories of the stacks it keeps (later runs
    of the same pin may borrow them)."""
    return runs_root() / UP_FOLDER


def state_root() -> Path:
    """This user's state folder for pytest-stacks, whatever ``TMPDIR`` says."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    root = Path(base) / "pytest-stacks"
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return root


def _marks() -> Path:
    return state_root() / MARKS_FOLDER


def _legacy_marks() -> Path:
    """Where records were kept before they left ``TMPDIR``: still read, so an upgrade never
    turns a kept run into a dead one."""
    return runs_root() / MARKS_FOLDER


def mark_kept(run_id: str, run_dir: Path, stacks: list[str], why: str) -> None:
    """Record that run ``run_id`` keeps ``stacks`` (its run directory stays with them)."""
    folder = _marks()
    folder.mkdir(mode=0o700, exist_ok=True)
    text = json.dumps({"run": run_id, "run_dir": str(run_dir), "stacks": sorted(stacks),
                       "why": why})
    tmp = folder / f".{run_id}.tmp"
    tmp.write_text(text)
    tmp.replace(folder / f"{run_id}.json")


def unmark_kept(run_id: str) -> None:
    for folder in (_marks(), _legacy_marks()):
        (folder / f"{run_id}.json").unlink(missing_ok=True)


def kept_runs() -> dict[str, dict[str, Any]]:
    """Every kept run by id: its run directory, its stacks, why. An unreadable record still
    keeps its run (named by the file): reaping what someone kept is worse than leaving it."""
    found: dict[str, dict[str, Any]] = {}
    paths = [path for folder in (_legacy_marks(), _marks()) if folder.is_dir()
             for path in sorted(folder.glob("*.json"))]
    for path in paths:
        try:
            data = json.loads(path.read_text())
            found[path.stem] = {"run_dir": str(data["run_dir"]), "stacks": list(data["stacks"]),
                                "why": str(data.get("why", ""))}
        except (OSError, ValueError, KeyError, TypeError):
            found[path.stem] = {"run_dir": "", "stacks": [], "why": f"unreadable: {path}"}
    return found
