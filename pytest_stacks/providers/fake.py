"""The ``fake`` provider: in-process doubles, one per process, nothing outside it to clean.

Each backend's double is built by its own factory (named in the registry) and driven by the
real driver through the same seam as the real daemons. The double itself (the registry's
``fake_double`` attribute of that driver's client) rides along on the attachment, so a user's
own client can be pointed at it (the ``stack_fake`` fixture).
"""

from __future__ import annotations

from collections.abc import Collection

from pytest_stacks import registry
from pytest_stacks.gobuild import GoModuleBuild
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import fake_factory
from pytest_stacks.providers.base import Attached, RunContext, StackInfo


class FakeProvider:
    def preflight(self, stack: Stack, ctx: RunContext) -> None:
        fake_factory(stack)  # no fake for the backend: an infrastructure error now, not later

    def programs(self, stack: Stack) -> list[GoModuleBuild]:
        return []

    def build(self, stack: Stack, ctx: RunContext) -> None:
        self.preflight(stack, ctx)  # an in-process double has nothing to build

    def up(self, stack: Stack, ctx: RunContext) -> StackInfo:
        self.preflight(stack, ctx)
        return StackInfo(provider="fake")

    def attach(self, stack: Stack, info: StackInfo, ctx: RunContext) -> Attached:
        client, logs, close = fake_factory(stack)(stack, ctx.run_dir)
        way_in = registry.BACKENDS[stack.backend].fake_double
        return Attached(client, info, logs, close,
                        double=getattr(client, way_in) if way_in else None)

    def down(self, stack: Stack, info: StackInfo, ctx: RunContext) -> None:
        """Each process closes its own double when it lets go; nothing is shared."""

    def is_current(self, stack: Stack, info: StackInfo) -> bool:
        return False  # an in-process double is never borrowed from another run

    def health(self, stack: Stack, info: StackInfo) -> tuple[str, str]:
        return "", ""  # in-process, or nothing of ours outside the API server to watch

    def sweep_run(self, ctx: RunContext, keep: Collection[str] = ()) -> list[str]:
        return []

    def reach(self, stack: Stack, info: StackInfo) -> str:
        return "an in-process double ends with its process: nothing to reach"
