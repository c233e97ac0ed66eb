"""A provider the manifest format knows but this release does not implement (kind).

Its stacks fail as infrastructure errors that say so, never as a crash or a skip.
"""

from __future__ import annotations

from typing import NoReturn

from pytest_stacks import __version__
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.manifest import Stack
from pytest_stacks.providers.base import Attached, RunContext, StackInfo


class Unavailable:
    def __init__(self, name: str) -> None:
        self._name = name

    def _refuse(self, stack: Stack) -> NoReturn:
        raise InfrastructureError(
            stack.name, f"the {self._name!r} provider is not implemented in pytest-stacks "
            f"{__version__}; this stack cannot be brought up. Select another stack.")

    def up(self, stack: Stack, ctx: RunContext) -> StackInfo:
        self._refuse(stack)

    def attach(self, stack: Stack, info: StackInfo, ctx: RunContext) -> Attached:
        self._refuse(stack)

    def down(self, stack: Stack, info: StackInfo, ctx: RunContext) -> None:
        """Nothing was created."""

    def is_current(self, stack: Stack, info: StackInfo) -> bool:
        return False

    def health(self, stack: Stack, info: StackInfo) -> tuple[str, str]:
        return "", ""  # in-process, or nothing of ours outside the API server to watch

    def sweep_run(self, ctx: RunContext) -> list[str]:
        return []
