"""Per-run SSH credentials: a client key pair made for one run, and the stack's host keys pinned
in a ``known_hosts`` of that run, read over the trusted local channel (never trust on first
use). Both files are 0600 under the run's ``tokens/`` folder, which CI artifacts exclude, and
go with the run directory."""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey


def _write_private(path: Path, data: bytes) -> None:
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    path.chmod(0o600)


def client_key_pair(folder: Path, comment: str) -> tuple[Path, str]:
    """A fresh Ed25519 key: (private key file, public key line for ``authorized_keys``)."""
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode()
    path = folder / "id_ed25519"
    _write_private(path, private)
    return path, f"{public} {comment}"


def write_known_hosts(path: Path, entries: Iterable[tuple[str, str]]) -> None:
    """``entries``: (name as ``ssh`` looks it up, e.g. ``[127.0.0.1]:2222`` or ``login``,
    the host's public key line ``ssh-ed25519 AAAA... [comment]``)."""
    lines = []
    for name, key_line in entries:
        kind, blob = key_line.split()[:2]
        lines.append(f"{name} {kind} {blob}\n")
    _write_private(path, "".join(lines).encode())
