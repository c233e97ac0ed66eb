"""An infra retry of one stack (lifecycle/stack_run.py ``replace``, ``health``): only a stack
that broke under the run is brought down and up fresh, at most the allowed number of times,
counted by its record's attempt; a process that comes late attaches to the fresh stack for
free and never marks it broken; what is not this run's, or whose teardown was not proven, is
never replaced."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_stacks.errors import InfrastructureError
from pytest_stacks.lifecycle.rundir import StackFiles, StackRecord
from pytest_stacks.lifecycle.stack_run import StackRun
from pytest_stacks.manifest import loads
from pytest_stacks.providers.base import RunContext, StackInfo
from tests.manifests import COMPOSE_SLURM


class Provider:
    """Comes up as project p1, p2, ...; ``broken``: the health check's answer."""

    def __init__(self) -> None:
        self.ups = self.downs = 0
        self.broken = ""
        self.down_fails = False

    def up(self, stack: Any, ctx: RunContext) -> StackInfo:
        self.ups += 1
        return StackInfo(provider="compose", project=f"p{self.ups}")

    def attach(self, stack: Any, info: StackInfo, ctx: RunContext) -> Any:
        client = SimpleNamespace(versions=lambda: {"daemon": stack.version, "client": ""})
        return SimpleNamespace(client=client, close=lambda: None, logs=lambda: "")

    def down(self, stack: Any, info: StackInfo, ctx: RunContext) -> list[str]:
        if self.down_fails:
            raise InfrastructureError(stack.name, "a container is still there")
        self.downs += 1
        return []

    def health(self, stack: Any, info: StackInfo) -> tuple[str, str]:
        return self.broken, ""


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> StackRun:
    (tmp_path / "stacks" / "slurm").mkdir(parents=True)
    (tmp_path / "stacks" / "slurm" / "compose.yaml").write_text("services: {}\n")
    stack = loads(COMPOSE_SLURM, tmp_path / "manifest.yaml").stacks[0]
    ctx = RunContext.for_this_process("20260101000000-abcdef12", tmp_path / "run", "pinned")
    (tmp_path / "run").mkdir()
    monkeypatch.setattr("pytest_stacks.lifecycle.stack_run.functional_probe",
                        lambda stack, attached: None)
    return StackRun(stack, Provider(), StackFiles(tmp_path / "run", stack.name),  # type: ignore[arg-type]
                    ctx)


def _broken(run: StackRun) -> InfrastructureError:
    provider: Provider = run.provider  # type: ignore[assignment]
    provider.broken = "the stack's container p1-slurm-1 (service slurm) is paused"
    error = run.health("sbatch: error: Socket timed out", held=1)
    assert error is not None and error.during_run
    provider.broken = ""  # the fresh stack is healthy
    return error


def test_a_stack_that_broke_under_the_run_is_brought_down_and_up_fresh(run: StackRun) -> None:
    run.ensure_up()
    _broken(run)
    done = run.replace(seen=1, retries=1)
    provider: Provider = run.provider  # type: ignore[assignment]
    assert done.replaced and done.broken == 1 and done.record is not None
    assert (done.record.attempt, done.record.info.project) == (2, "p2")
    assert (provider.ups, provider.downs) == (2, 1)
    recorded = run.files.record()
    assert run.files.error() is None and recorded is not None
    assert (recorded.attempt, recorded.info.project) == (2, "p2")


def test_the_retries_are_counted_by_the_record_and_then_refused_saying_so(
        run: StackRun) -> None:
    run.ensure_up()
    _broken(run)
    run.replace(seen=1, retries=1)
    provider: Provider = run.provider  # type: ignore[assignment]
    provider.broken = "the stack's container p2-slurm-1 (service slurm) is paused"
    assert run.health("", held=2) is not None
    again = run.replace(seen=2, retries=1)
    assert again.record is None and again.broken == 2
    assert again.why_not == ("not brought up again: the 1 allowed retry is spent "
                             "(--stack-infra-retry=1)")
    assert provider.ups == 2, "nothing brought up past the budget"


def test_a_process_that_comes_late_attaches_to_the_fresh_stack_for_free(
        run: StackRun) -> None:
    run.ensure_up()
    _broken(run)
    first = run.replace(seen=1, retries=1)
    late = run.replace(seen=1, retries=1)
    assert first.record is not None and late.record is not None
    assert late.record.info.project == first.record.info.project == "p2"
    assert not late.replaced and late.why_not == ""
    assert run.provider.ups == 2  # type: ignore[attr-defined]


def test_a_late_fault_on_the_old_stack_never_marks_the_fresh_one_broken(
        run: StackRun) -> None:
    run.ensure_up()
    _broken(run)
    run.replace(seen=1, retries=1)
    provider: Provider = run.provider  # type: ignore[assignment]
    provider.broken = "the stack's container p1-slurm-1 (service slurm) is gone"
    said = run.health("No such container", held=1)  # a process still on attempt 1
    assert said is not None and "brought up fresh (infra retry, attempt 2)" in said.message
    assert run.files.error() is None, "the fresh stack is not marked broken"


def test_a_failed_bring_up_is_not_replaced(run: StackRun) -> None:
    run.ensure_up()
    run.files.write_error(InfrastructureError("slurm-24.11", "bring-up failed: no image"))
    done = run.replace(seen=1, retries=3)
    assert done.record is None and done.why_not == ""
    assert run.provider.ups == 1  # type: ignore[attr-defined]


@pytest.mark.parametrize(("info", "said"), [
    (StackInfo(provider="compose", kept=True), "borrowed from `pytest-stacks up`"),
    (StackInfo(provider="existing"), "a site's deployment is not this run's to replace"),
])
def test_what_is_not_this_runs_is_never_replaced(run: StackRun, info: StackInfo,
                                                 said: str) -> None:
    run.files.write(StackRecord("slurm-24.11", info, "24.11.5"))
    run.files.write_error(InfrastructureError("slurm-24.11", "the stack died during the run: x",
                                              during_run=True))
    done = run.replace(seen=1, retries=3)
    assert done.record is None and said in done.why_not
    assert (run.provider.ups, run.provider.downs) == (0, 0)  # type: ignore[attr-defined]


def test_a_broken_stack_whose_teardown_is_not_proven_stays_for_the_run_to_fail_closed(
        run: StackRun) -> None:
    run.ensure_up()
    _broken(run)
    provider: Provider = run.provider  # type: ignore[assignment]
    provider.down_fails = True
    done = run.replace(seen=1, retries=1)
    assert done.record is None and "teardown was not proven" in done.why_not
    assert "a container is still there" in done.why_not
    assert run.files.record() is not None and provider.ups == 1, \
        "its record stays: the run's teardown tries again and fails closed"
