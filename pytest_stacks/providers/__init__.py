"""Providers: how a stack comes up and goes down (compose, kind, fake)."""

from __future__ import annotations

from typing import Any, NoReturn

from pytest_stacks import __version__
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.manifest import Stack
from pytest_stacks.providers.base import Attached, Provider, RunContext


def provider_for(stack: Stack) -> Provider:
    if stack.provider == "fake":
        from pytest_stacks.providers.fake import FakeProvider
        return FakeProvider()
    if stack.provider == "compose":
        from pytest_stacks.providers.compose import ComposeProvider
        return ComposeProvider()
    return _Unavailable(stack.provider)


class _Unavailable:
    """A provider the manifest format knows but this release does not implement (kind).

    Its stacks fail as infrastructure errors that say so, never as a crash or a skip.
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def _refuse(self, stack: Stack) -> NoReturn:
        raise InfrastructureError(
            stack.name, f"the {self._name!r} provider is not implemented in pytest-stacks "
            f"{__version__}; this stack cannot be brought up. Select another stack.")

    def up(self, stack: Stack, ctx: RunContext) -> dict[str, Any]:
        self._refuse(stack)

    def attach(self, stack: Stack, info: dict[str, Any], ctx: RunContext) -> Attached:
        self._refuse(stack)

    def down(self, stack: Stack, info: dict[str, Any], ctx: RunContext) -> None:
        """Nothing was created."""
