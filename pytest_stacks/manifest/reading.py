"""Reading a manifest file safely: what it must be before any YAML parser sees it.

Limits (documented in README, "Manifest limits"): a regular file (not a directory, a FIFO or
a dangling or looping symlink), at most :data:`MAX_BYTES`, UTF-8 text. A FIFO would block
the run forever and a megabyte-scale file is a mistake, not a manifest, so both are refused
before reading.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from pytest_stacks.errors import ManifestError

MAX_BYTES = 1024 * 1024


def read_manifest(path: Path) -> str:
    """The text of ``path``, or ManifestError saying what it is instead and what to do."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ManifestError([f"{path}: {_why_unreadable(path, exc)}"]) from None
    if stat.S_ISDIR(info.st_mode):
        raise ManifestError([f"{path}: is a directory, not a manifest. Point --stack-manifest "
                             f"(or the 'stacks_manifest' ini option) at the file, e.g. "
                             f"{path / 'manifest.yaml'}."])
    if not stat.S_ISREG(info.st_mode):
        raise ManifestError([f"{path}: is not a regular file (a FIFO, socket or device). "
                             f"Point it at the manifest file itself."])
    if info.st_size > MAX_BYTES:
        raise ManifestError([f"{path}: is {info.st_size:,} bytes; a manifest may be at most "
                             f"{MAX_BYTES:,} bytes (real ones are a few KiB). Is this the right "
                             f"file?"])
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ManifestError([f"{path}: cannot be read: {exc.strerror or exc}"]) from None
    if len(raw) > MAX_BYTES:
        raise ManifestError([f"{path}: is larger than {MAX_BYTES:,} bytes; a manifest is a few "
                             f"KiB. Is this the right file?"])
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise ManifestError([f"{path}:{line}: is not UTF-8 text (byte 0x{raw[exc.start]:02x} at "
                             f"offset {exc.start}). Save the manifest as UTF-8."]) from None


def _why_unreadable(path: Path, exc: OSError) -> str:
    if exc.errno == errno.ELOOP:
        return "is a symlink loop. Point it at the manifest file itself."
    if exc.errno == errno.ENOENT and path.is_symlink():
        return (f"is a symlink to {os.readlink(path)!r}, which does not exist. Fix the link or "
                f"point at the manifest file itself.")
    if exc.errno == errno.ENOENT:
        return ("no such manifest. Create it, or point --stack-manifest / the 'stacks_manifest' "
                "ini option at an existing file.")
    return f"cannot be read: {exc.strerror or exc}"
