"""Ending each stack as soon as the run is done with it, not when the whole run ends.

Registered on the run's owner. It knows every test the run will run (its own collection, or
under xdist the node ids the first worker collected) and which stack each runs on; once every
test of a stack has reported its teardown, and every process that held the stack has finalized
its fixtures on it (a worker does so when it moves on to its next stack), the pool ends the
stack in the background. A window of many stacks then costs the machine only what still runs.
A stack kept on failure (``--stack-keep=on-failure``) is never ended early.
"""

from __future__ import annotations

from typing import Any

import pytest

from pytest_stacks.plugin.state import State, choice_setting, item_stack
from pytest_stacks.plugin.xdist import stack_scope

RELEASE_POLICIES = ("early", "at-end")


def release_policy(config: pytest.Config) -> str:
    return choice_setting(config, "stack_release", "stacks_release", RELEASE_POLICIES)


class EarlyRelease:
    def __init__(self, state: State, keeps_failing: bool) -> None:
        self._state = state
        self._keeps_failing = keeps_failing
        self._stack_of: dict[str, str] | None = None  # node id -> stack name, tests to come
        self._waiting: set[str] = set()  # stacks whose tests are all over, not yet ended

    def _expect(self, stack_of: dict[str, str]) -> None:
        if self._stack_of is None:
            self._stack_of = stack_of

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        found = {item.nodeid: item_stack(item) for item in session.items}
        self._expect({nodeid: s.name for nodeid, s in found.items() if s is not None})

    @pytest.hookimpl(optionalhook=True)  # an xdist hook: pytest-xdist may not be installed
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        names = [s.name for s in self._state.selected]
        scopes = {nodeid: stack_scope(nodeid, names) for nodeid in ids}
        self._expect({nodeid: scope.removeprefix("stack:") for nodeid, scope in scopes.items()
                      if scope.startswith("stack:")})

    @pytest.hookimpl(trylast=True)  # after the Tracker has counted the report
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        if self._stack_of is None:
            return
        if report.when == "teardown":
            name = self._stack_of.pop(report.nodeid, None)
            if name is not None and name not in self._stack_of.values():
                self._waiting.add(name)
        self._end_what_is_over()

    def _end_what_is_over(self) -> None:
        pool = self._state.pool
        if pool is None:
            return
        stacks = {s.name: s for s in self._state.selected}
        for name in sorted(self._waiting):
            stack = stacks.get(name)
            if stack is None or (self._keeps_failing and self._failing(name)):
                self._waiting.discard(name)  # not the run's, or kept for a person at its end
            elif pool.end_early(stack):
                self._waiting.discard(name)

    def _failing(self, name: str) -> bool:
        if name in self._state.infra:
            return True
        outcomes = self._state.outcomes
        cases = outcomes.cases.get(name, {}) if outcomes is not None else {}
        return any(c.final() in ("failed", "infra") for c in cases.values())
