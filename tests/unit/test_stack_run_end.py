"""The end of one stack (lifecycle/stack_run.py ``end``): the run's objects removed through
the driver, then the stack down. A stack of ours that broke (its API server unreachable) takes
the objects with its proven teardown; a site's stack, or a teardown that was not proven, does
not, and the run fails closed."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_stacks.errors import InfrastructureError
from pytest_stacks.lifecycle.stack_run import StackRun
from pytest_stacks.manifest import loads
from pytest_stacks.providers.base import RunContext, StackInfo
from tests.manifests import COMPOSE_SLURM

MANIFEST = COMPOSE_SLURM


class Provider:
    def __init__(self, down_fails: bool) -> None:
        self.down_fails, self.downs = down_fails, 0

    def attach(self, stack: Any, info: StackInfo, ctx: RunContext) -> Any:
        def end_run() -> list[str]:
            raise ConnectionError("the API server is unreachable: Connection refused")
        return SimpleNamespace(client=SimpleNamespace(end_run=end_run), close=lambda: None)

    def down(self, stack: Any, info: StackInfo, ctx: RunContext) -> list[str]:
        self.downs += 1
        if self.down_fails:
            raise InfrastructureError(stack.name, "a container is still there")
        return []


def _end(tmp_path: Path, provider_name: str, down_fails: bool) -> tuple[list[Any], Provider]:
    (tmp_path / "stacks" / "slurm").mkdir(parents=True)
    (tmp_path / "stacks" / "slurm" / "compose.yaml").write_text("services: {}\n")
    stack = loads(MANIFEST, tmp_path / "manifest.yaml").stacks[0]
    ctx = RunContext.for_this_process("20260101000000-abcdef12", tmp_path / "run", "pinned")
    provider = Provider(down_fails)
    files = SimpleNamespace(forget=lambda: None)
    run = StackRun(stack, provider=provider, files=files, ctx=ctx)  # type: ignore[arg-type]
    record = SimpleNamespace(info=StackInfo(provider=provider_name))
    return run.end(record), provider  # type: ignore[arg-type]


def test_a_broken_stack_of_ours_takes_its_objects_with_its_proven_teardown(
        tmp_path: Path) -> None:
    problems, provider = _end(tmp_path, "compose", down_fails=False)
    assert provider.downs == 1
    [problem] = problems
    assert not problem.failing
    assert "Connection refused" in problem.text and "stack's own teardown" in problem.text


@pytest.mark.parametrize(("provider_name", "down_fails"),
                         [("existing", False), ("compose", True)])
def test_objects_not_removed_fail_closed_on_a_site_or_without_a_proven_teardown(
        tmp_path: Path, provider_name: str, down_fails: bool) -> None:
    problems, _ = _end(tmp_path, provider_name, down_fails)
    assert problems and all(p.failing for p in problems)
    assert any("the run's objects were not proven gone" in p.text for p in problems)
