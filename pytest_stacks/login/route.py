"""Where a stack's commands go, as a small JSON record the shims read at each call.

Kept apart from the code that builds it (:mod:`.commands`) and free of heavy imports: every
``sbatch`` a client runs starts a Python process that loads only this and :mod:`.forward`.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Literal

from pytest_stacks.errors import StacksError


class NoCommands(StacksError):
    """The stack has no commands of this kind to offer (no login host, no API server here):
    a test asking for them is skipped, saying so, not failed."""


Kind = Literal["docker", "ssh", "relay", "local"]


@dataclass(frozen=True)
class LoginRoute:
    """``kind``: docker (``target`` is the login container's id), ssh (``target`` is the ssh
    config file naming every hop, the last one ``login``), relay (``target`` is the Unix socket
    of the in-process fake's relay), local (no login host: the program runs here, kubectl
    against the stack's API server). ``shared``: the folder that is the same path on this machine
    and on the login host ("" where none is: an existing site; "/" for a fake's kubectl, which
    reads the caller's files where they are, as kubectl does)."""

    stack: str
    kind: Kind
    target: str
    user: str
    shared: str
    commands: tuple[str, ...]
    docker: str = ""  # the docker CLI's path (kind docker)

    def write(self, path: Path) -> None:
        path.write_text(json.dumps(asdict(self), indent=1))

    @classmethod
    def read(cls, path: Path) -> LoginRoute:
        data = json.loads(path.read_text())
        data["commands"] = tuple(data.get("commands", ()))
        return cls(**data)

    def reaches(self, path: Path) -> bool:
        """Whether ``path`` (absolute, on this machine) is where the login host sees it."""
        return bool(self.shared) and path.is_relative_to(self.shared)
