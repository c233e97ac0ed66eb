"""When the run's owner may end a stack early: every test of it reported its teardown, and every
process that held it let go (its fixtures on it finalized)."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_stacks.lifecycle.rundir import StackFiles
from pytest_stacks.plugin.release import EarlyRelease


def test_a_stack_no_process_held_is_not_let_go(tmp_path: Path) -> None:
    assert not StackFiles(tmp_path, "s").all_let_go()


def test_every_holder_must_let_go_and_holding_again_takes_it_back(tmp_path: Path) -> None:
    files = StackFiles(tmp_path, "s")
    files.hold(1)
    files.hold(2)
    files.let_go(1)
    assert not files.all_let_go()
    files.let_go(2)
    assert files.all_let_go()
    files.hold(1)  # a later test on the stack in process 1
    assert not files.all_let_go()
    files.let_go(3)  # never held: says nothing
    files.let_go(1)
    assert files.all_let_go()


class _Pool:
    def __init__(self, ready: set[str]) -> None:
        self.ready = ready
        self.ended: list[str] = []

    def end_early(self, stack: Any) -> bool:
        if stack.name not in self.ready:
            return False
        self.ended.append(stack.name)
        return True


def _release(ready: set[str], keeps_failing: bool = False,
             infra: dict[str, str] | None = None) -> tuple[EarlyRelease, _Pool]:
    pool = _Pool(ready)
    state = SimpleNamespace(selected=[SimpleNamespace(name="a"), SimpleNamespace(name="b")],
                            pool=pool, infra=infra or {}, outcomes=None)
    release = EarlyRelease(state, keeps_failing)  # type: ignore[arg-type]
    release.pytest_xdist_node_collection_finished(None, ["t.py::x[a]", "t.py::y[a]",
                                                         "t.py::x[b]", "t.py::plain"])
    return release, pool


def _report(nodeid: str, when: str = "teardown") -> pytest.TestReport:
    return pytest.TestReport(nodeid, ("t.py", 0, nodeid), {}, "passed", None, when)


def test_a_stack_ends_after_its_last_teardown_once_let_go() -> None:
    release, pool = _release(ready=set())
    release.pytest_runtest_logreport(_report("t.py::x[a]"))
    release.pytest_runtest_logreport(_report("t.py::y[a]", when="call"))
    assert pool.ended == []
    release.pytest_runtest_logreport(_report("t.py::y[a]"))
    assert pool.ended == []  # its holder has not let go yet
    pool.ready.add("a")
    release.pytest_runtest_logreport(_report("t.py::x[b]", when="setup"))
    assert pool.ended == ["a"]
    release.pytest_runtest_logreport(_report("t.py::plain"))
    assert pool.ended == ["a"]  # b still has a test to come


def test_a_failing_stack_kept_on_failure_is_not_ended_early() -> None:
    release, pool = _release(ready={"a", "b"}, keeps_failing=True, infra={"a": "down"})
    for nodeid in ("t.py::x[a]", "t.py::y[a]", "t.py::x[b]"):
        release.pytest_runtest_logreport(_report(nodeid))
    assert pool.ended == ["b"]
