"""Disks that refuse writes, for the tests of every writer of evidence.

``full_disk``: ``os.write`` and ``os.fsync`` raise ENOSPC for every file under one folder,
as a full filesystem does (the OS boundary: the writers write through ``os.write``, so this is
where a real full disk answers them); every other file is written as usual, so pytest and
the rest of the run are untouched. ``under_a_file``: a folder path below a regular file, which
no process can create, root included (ENOTDIR). ``read_only``: a folder of mode 0500, which
stops every user but root (its tests skip as root, saying so; ``under_a_file`` fails as root
too).
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

AS_ROOT = os.geteuid() == 0


def _under(fd: int, folder: Path) -> bool:
    try:
        return Path(os.readlink(f"/proc/self/fd/{fd}")).is_relative_to(folder.resolve())
    except OSError:
        return False


def full_disk(monkeypatch: pytest.MonkeyPatch, folder: Path) -> Path:
    """Make ``folder`` (created) behave as a full filesystem; returns it."""
    folder.mkdir(parents=True, exist_ok=True)
    real_write, real_fsync = os.write, os.fsync

    def write(fd: int, data: bytes | memoryview) -> int:
        if _under(fd, folder):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return real_write(fd, data)

    def fsync(fd: int) -> None:
        if _under(fd, folder):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(os, "write", write)
    monkeypatch.setattr(os, "fsync", fsync)
    return folder


def under_a_file(tmp_path: Path) -> Path:
    """A folder that cannot exist: its parent is a regular file (ENOTDIR, root included)."""
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    return blocker / "folder"


def read_only(tmp_path: Path) -> Path:
    """A folder of mode 0500 (skips as root, where the mode stops nothing)."""
    if AS_ROOT:
        pytest.skip("running as root: a 0500 folder does not stop root's writes (the "
                    "under-a-file variant covers root)")
    folder = tmp_path / "read-only"
    folder.mkdir()
    folder.chmod(0o500)
    return folder


#: (name, maker of the refusing folder, what the OS error says)
REFUSALS = ("full", "under-a-file", "read-only")
SAID = {"full": "ENOSPC", "under-a-file": "ENOTDIR", "read-only": "EACCES"}


def refusing(kind: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder that refuses writes the ``kind`` way."""
    if kind == "full":
        return full_disk(monkeypatch, tmp_path / "full")
    if kind == "under-a-file":
        return under_a_file(tmp_path)
    return read_only(tmp_path)


def leftovers(folder: Path) -> list[Path]:
    """Files a refused write left behind in ``folder`` (none may be)."""
    return sorted(folder.rglob("*")) if folder.is_dir() else []
