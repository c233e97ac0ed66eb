"""The daemon version a stack must report before its tests run: the pin (or an existing site's
range) in the pinned lane; in the canary lane, the floating reference's, which may move forward
from the pin but never back past its series. The canary used to skip the check altogether."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_stacks.errors import InfrastructureError
from pytest_stacks.lifecycle import stack_run
from pytest_stacks.lifecycle.stack_run import StackRun
from pytest_stacks.manifest import loads
from pytest_stacks.providers.base import RunContext
from pytest_stacks.versions import not_older_series
from tests.manifests import COMPOSE_SLURM

MANIFEST = COMPOSE_SLURM


def _run(tmp_path: Path, lane: str) -> StackRun:
    (tmp_path / "stacks" / "slurm").mkdir(parents=True)
    (tmp_path / "stacks" / "slurm" / "compose.yaml").write_text("services: {}\n")
    stack = loads(MANIFEST, tmp_path / "manifest.yaml").stacks[0]
    ctx = RunContext.for_this_process("20260101000000-abcdef12", tmp_path / "run", lane)
    return StackRun(stack, provider=None, files=None, ctx=ctx)  # type: ignore[arg-type]


def _attached(daemon: str) -> Any:
    return SimpleNamespace(client=SimpleNamespace(versions=lambda: {"daemon": daemon,
                                                                    "client": "24.11.5"}))


@pytest.fixture(autouse=True)
def _no_probe(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(stack_run, "functional_probe", lambda stack, attached: None)


@pytest.mark.parametrize(("lane", "daemon", "accepted"), [
    ("pinned", "24.11.5", True), ("pinned", "24.11.6", False),
    ("canary", "24.11.5", True), ("canary", "24.11.9", True), ("canary", "25.05.1", True),
    ("canary", "23.02.7", False), ("canary", "", False),
])
def test_the_daemon_version_is_checked_in_every_lane(tmp_path: Path, lane: str, daemon: str,
                                                     accepted: bool) -> None:
    run = _run(tmp_path, lane)
    if accepted:
        assert run._prove(_attached(daemon)) == (daemon, "24.11.5")
        return
    with pytest.raises(InfrastructureError) as caught:
        run._prove(_attached(daemon))
    if lane == "canary":
        assert "older than the pin's series (24.11)" in str(caught.value) or not daemon
        assert "a canary floats forward from its pin, never back" in str(caught.value)


def test_not_older_series() -> None:
    assert not_older_series("24.11.9", "24.11.5") and not_older_series("25.0.1", "24.11.5")
    assert not not_older_series("24.05.9", "24.11.5") and not not_older_series("", "24.11.5")
    assert not not_older_series("garbage", "24.11.5")
