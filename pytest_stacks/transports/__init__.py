"""How a driver reaches a scheduler: run a command there, move files in and out."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class CommandResult:
    argv: tuple[str, ...]
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


class Transport(Protocol):
    """Commands and files on the scheduler host, as a given user."""

    def run(self, argv: Sequence[str], *, user: str | None = None,
            timeout: float = 60.0) -> CommandResult: ...

    def put_files(self, directory: str, files: Mapping[str, bytes], *, user: str,
                  mode: int = 0o644) -> None:
        """Create ``directory`` (owned by ``user``) holding ``files``."""
        ...

    def get_files(self, directory: str, names: Sequence[str]) -> dict[str, bytes]:
        """Read ``names`` from ``directory``; a missing file is absent from the result."""
        ...
