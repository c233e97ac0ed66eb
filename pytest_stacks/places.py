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
from pytest_stacks.evidence import EvidenceError, describe, write_whole
from pytest_stacks.processes import owner_alive, process_start_time

UP_FOLDER = "kept"  # run directories of `pytest-stacks up`
MARKS_FOLDER = "kept-runs"  # one record per kept run, whatever kept it
#: Folders of the runs root that hold no run (kind's owner records among them): never a run
#: directory to remove, however old.
NOT_RUNS = (UP_FOLDER, MARKS_FOLDER, "kind-clusters")


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


def state_root_path() -> Path:
    """Where :func:`state_root` is (nothing made)."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "pytest-stacks"


def state_root() -> Path:
    """This user's state folder for pytest-stacks, whatever ``TMPDIR`` says."""
    root = state_root_path()
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    return root


def _marks() -> Path:
    return state_root() / MARKS_FOLDER


def _legacy_marks() -> Path:
    """Where records were kept before they left ``TMPDIR``: still read, so an upgrade never
    turns a kept run into a dead one."""
    return runs_root() / MARKS_FOLDER


RECORD_MAX_BYTES = 64 * 1024


def read_record(path: Path) -> dict[str, Any]:
    """The JSON object a small record file of ours holds (an owner record, a kept-run record),
    or ValueError saying what it is instead. Its kind is checked before it is opened (reading a
    FIFO would block every later run) and its size before it is read."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        raise ValueError(f"cannot be read ({exc.strerror or exc})") from None
    if not stat.S_ISREG(info.st_mode):
        raise ValueError("is not a regular file (a symlink, a FIFO, a folder)")
    if info.st_size > RECORD_MAX_BYTES:
        raise ValueError(f"is {info.st_size} bytes, too large for a record")
    try:
        data = json.loads(path.read_bytes())
    except OSError as exc:
        raise ValueError(f"cannot be read ({exc.strerror or exc})") from None
    except ValueError as exc:  # JSONDecodeError and UnicodeDecodeError alike
        raise ValueError(f"is not valid JSON ({exc})") from None
    if not isinstance(data, dict):
        raise ValueError(f"is not a JSON object (it holds a {type(data).__name__})")
    return data


def mark_kept(run_id: str, run_dir: Path, stacks: list[str], why: str) -> None:
    """Record that run ``run_id`` keeps ``stacks`` (its run directory stays with them)."""
    try:
        folder = _marks()
        folder.mkdir(mode=0o700, exist_ok=True)
    except OSError as exc:
        raise EvidenceError(f"cannot write the kept-run record of run {run_id} in "
                            f"{state_root_path() / MARKS_FOLDER}: {describe(exc)}") from None
    text = json.dumps({"run": run_id, "run_dir": str(run_dir), "stacks": sorted(stacks),
                       "why": why})
    write_whole(folder / f"{run_id}.json", text, what="kept-run record", mode=0o600)


def unmark_kept(run_id: str) -> None:
    for folder in (_marks(), _legacy_marks()):
        (folder / f"{run_id}.json").unlink(missing_ok=True)


def kept_runs() -> dict[str, dict[str, Any]]:
    """Every kept run by id: its run directory, its stacks, why, and the record's file. A
    malformed record still keeps its run (named by the file: reaping what someone kept is
    worse than leaving it), and says what is wrong with it under ``problem`` (the file, the
    field, the fix), so nobody reads it as "nothing kept"."""
    found: dict[str, dict[str, Any]] = {}
    paths = [path for folder in (_legacy_marks(), _marks()) if folder.is_dir()
             for path in sorted(folder.glob("*.json"))]
    for path in paths:
        try:
            found[path.stem] = {**kept_record(read_record(path)), "record": str(path)}
        except ValueError as exc:
            found[path.stem] = {"run_dir": "", "stacks": [], "why": f"unreadable: {path}",
                                "record": str(path),
                                "problem": f"kept-run record {path}: {exc}; fix it as "
                                           f"`pytest-stacks up` writes it ({{\"run\", "
                                           f"\"run_dir\", \"stacks\": [NAME, ...], \"why\"}}), or "
                                           f"remove the file if its run is over"}
    return found


def kept_record(data: dict[str, Any]) -> dict[str, Any]:
    """A kept-run record's fields, each of its type: ValueError naming the field otherwise."""
    stacks, run_dir, why = data.get("stacks"), data.get("run_dir"), data.get("why", "")
    if not isinstance(stacks, list) or not all(isinstance(s, str) and s for s in stacks):
        raise ValueError(f"field 'stacks' is {_shown(stacks)}, not a list of stack names")
    if not isinstance(run_dir, str):
        raise ValueError(f"field 'run_dir' is {_shown(run_dir)}, not a path")
    if not isinstance(why, str):
        raise ValueError(f"field 'why' is {_shown(why)}, not a text")
    return {"run_dir": run_dir, "stacks": stacks, "why": why}


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:60]}... ({len(text)} chars)"


def kept_run_dir(kept: dict[str, Any]) -> Path | None:
    """The run directory a kept-run record names, proven to be one of this runs root's
    (``<runs>/<run>`` or ``<runs>/kept/<run>``, symlinks resolved), so ``down`` may remove it;
    None when the record names none, or one under another ``TMPDIR``'s runs root (ended from
    there). Anything else is refused (StacksError naming the record file and its field):
    a record is a file on disk, and ``down`` must never remove a folder it does not own, nor the
    runs root that holds every run's."""
    given = str(kept.get("run_dir") or "")
    if not given:
        return None
    root = runs_root().resolve()
    path = Path(given)
    real = path.resolve() if path.is_absolute() and ".." not in path.parts else None
    if real is not None and real.parent in (root, root / UP_FOLDER) \
            and real.name not in NOT_RUNS \
            and not path.is_symlink():
        return real
    if real is not None and not _textually_under(path, root) and _another_runs_root(real):
        return None  # kept under another TMPDIR: protected here, ended from there
    raise StacksError(
        f"{kept.get('record', 'a kept-run record')}: field 'run_dir' is {given!r}, which is not "
        f"a run directory inside {root} (one folder below it, or below its {UP_FOLDER}/; "
        f"symlinks resolved). Nothing of it was removed. If that run is over, remove the "
        f"record file; else correct its run_dir.")


def _textually_under(path: Path, root: Path) -> bool:
    """Whether ``path`` names itself as under ``root`` before anything is resolved (its
    ``..``, a symlink: the record says "ours", so it is judged as ours)."""
    return path.is_relative_to(root) or path.is_relative_to(runs_root())


def _another_runs_root(real: Path) -> bool:
    """Whether ``real`` is where another ``TMPDIR`` keeps this user's runs
    (``.../pytest-stacks-<uid>/<run>`` or ``.../pytest-stacks-<uid>/kept/<run>``)."""
    ours = f"pytest-stacks-{os.getuid()}"
    parent = real.parent.parent if real.parent.name == UP_FOLDER else real.parent
    return parent.name == ours and real.name not in NOT_RUNS


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
