"""Writing evidence: a file lands whole, or the caller is told which path failed and why.

Evidence is what a run leaves for a person or a later run to trust: the results file, the
Allure files of ours, parity recordings, kept-run records, owner records, timings. A full
disk, a read-only folder or a path under a regular file must never leave half a file for a
reader to trip over, nor let a run report a file it did not write. So a whole file is written
to a temporary file in the same folder, flushed to the device (``fsync``) and renamed over the
target; a timings line is appended with one ``write`` of the whole line and flushed. Every
``OSError`` becomes an :class:`EvidenceError` naming the path and the OS error (its errno's
name too: ``ENOSPC``, ``EROFS``, ``ENOTDIR``), which the plugin turns into a failed run and
the CLI into a non-zero exit. The writes go through ``os.write``/``os.fsync`` directly (never
a buffered file object), so a failure surfaces where it happens and a test can make the OS
refuse them. Nothing here knows about pytest.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile
from pathlib import Path

from pytest_stacks.errors import StacksError


class EvidenceError(StacksError):
    """A file of evidence could not be written whole; the message names the path and why."""


def describe(exc: OSError) -> str:
    """``No space left on device (ENOSPC)``: what the OS said, and its errno's name."""
    name = errno.errorcode.get(exc.errno or 0, "")
    said = exc.strerror or str(exc)
    return f"{said} ({name})" if name else said


def _refused(what: str, path: Path | str, exc: OSError) -> EvidenceError:
    return EvidenceError(f"cannot write the {what} {path}: {describe(exc)}; nothing of it was "
                         f"kept. Free space or choose a writable path, and run again")


def _write_all(fd: int, data: bytes) -> None:
    """Every byte of ``data`` to ``fd`` (a short write is retried, never taken as done)."""
    view = memoryview(data)
    while view:
        done = os.write(fd, view)
        if done <= 0:
            raise OSError(errno.EIO, "the OS wrote nothing")
        view = view[done:]


def write_whole(path: Path | str, text: str | bytes, *, what: str, mode: int = 0o644) -> Path:
    """Write ``text`` to ``path`` whole (temporary file in its folder, fsync, rename), making
    the folder if needed; :class:`EvidenceError` otherwise, and no temporary file is left.
    A target that is not a regular file (``/dev/stdout``, a FIFO, ``/dev/full``) is written in
    place: renaming over it would replace the device, not feed it. A symlink keeps pointing
    where it pointed. Returns the path written."""
    data = text.encode("utf-8") if isinstance(text, str) else text
    path = Path(path)
    try:
        existing = os.stat(path)
    except OSError:
        existing = None
    try:
        if existing is not None and not stat.S_ISREG(existing.st_mode):
            fd = os.open(path, os.O_WRONLY)
            try:
                _write_all(fd, data)
            finally:
                os.close(fd)
            return path
        target = Path(os.path.realpath(path))
        if target.parent.exists() and not target.parent.is_dir():
            raise OSError(errno.ENOTDIR, os.strerror(errno.ENOTDIR))  # not "File exists"
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=f".{target.name}.", suffix=".tmp")
    except OSError as exc:
        raise _refused(what, path, exc) from None
    try:
        try:
            _write_all(fd, data)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.chmod(tmp, mode)
        os.replace(tmp, target)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        raise _refused(what, path, exc) from None
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return path


def append_line(path: Path | str, line: str, *, what: str) -> None:
    """Append ``line`` (a newline added) to ``path`` with one write of the whole line, and
    flush it to the device; :class:`EvidenceError` naming the path otherwise. Appends of
    several processes to one file never interleave inside a line (``O_APPEND``)."""
    data = (line.rstrip("\n") + "\n").encode("utf-8")
    try:
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            done = os.write(fd, data)
            if done != len(data):
                raise OSError(errno.ENOSPC, f"only {done} of {len(data)} bytes were written")
            if stat.S_ISREG(os.fstat(fd).st_mode):
                os.fsync(fd)
        finally:
            os.close(fd)
    except OSError as exc:
        raise _refused(what, path, exc) from None
