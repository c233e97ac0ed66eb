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
one) must see the same records or it reaps what was kept. The in-process doubles' files have
folders of their own (``scratch_folder``), owned by the process that made them. Nothing here
knows about stacks beyond their names.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
import tempfile
from pathlib import Path
from typing import Any

from pytest_stacks.errors import StacksError
from pytest_stacks.processes import owner_alive, process_start_time

UP_FOLDER = "kept"  # run directories of `pytest-stacks up`
MARKS_FOLDER = "kept-runs"  # one record per kept run, whatever kept it


def runs_root() -> Path:
    """This user's private folder of run directories (0700, owned by us, not a symlink).

    Run directories hold per-run credentials (IDTOKENs), so a shared /tmp must not let another
    user pre-create or read the folder.
    """
    return _private(Path(tempfile.gettempdir()) / f"pytest-stacks-{os.getuid()}")


def _private(root: Path) -> Path:
    """``root``, made if missing: a 0700 directory of this user's and not a symlink."""
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


def scratch_folder(prefix: str) -> Path:
    """A new private folder for one in-process double's files (its hosts' job directories and
    spools), named after this process: a double removes its folder when it closes, and a later
    run removes those of processes killed first (``reap_dead_scratch``)."""
    pid = os.getpid()
    return Path(tempfile.mkdtemp(prefix=f"{pid}.{process_start_time(pid)}.{prefix}.",
                                 dir=_private(_scratch_root())))


def _scratch_root() -> Path:
    return Path(tempfile.gettempdir()) / f"pytest-stacks-{os.getuid()}-scratch"


def reap_dead_scratch() -> list[Path]:
    """Remove the scratch folders of processes that are gone; other names are left alone."""
    root = _scratch_root()
    if not root.exists():
        return []
    removed = []
    for folder in _private(root).iterdir():
        pid, _, rest = folder.name.partition(".")
        if pid.isdigit() and not owner_alive(int(pid), rest.partition(".")[0]):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    return removed
