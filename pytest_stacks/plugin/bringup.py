"""Bringing the run's stacks up ahead of their first test, several at once.

Registered on the run's owner only (the single pytest process, or the xdist controller). At
session start, the stacks named on the command line begin to come up in background threads, at
most ``--stack-parallel`` at once, while pytest collects (and xdist starts its workers). Tests
attach as their stack is proven, so a run over a whole window waits for its slowest stack rather
than for the sum, and a single stack's bring-up overlaps collection.

Only stacks selected with ``--stack`` start early: each of them must run a test anyway (a
selected stack on which nothing ran fails the run), so none is started in vain, whereas the
default selection (the fakes) has nothing to start.
"""

from __future__ import annotations

import pytest

from pytest_stacks.plugin.state import State

DEFAULT_PARALLEL = 4


def parallel_setting(config: pytest.Config) -> int:
    """``--stack-parallel``, else the ``stacks_parallel`` ini value, else the default."""
    given = config.getoption("stack_parallel")
    raw = given if given is not None else (config.getini("stacks_parallel") or DEFAULT_PARALLEL)
    try:
        value = int(str(raw))
    except ValueError:
        value = 0
    if value < 1:
        raise pytest.UsageError(
            f"pytest-stacks: stacks_parallel / --stack-parallel must be a whole number >= 1 "
            f"(got {raw!r}); 1 brings stacks up one after another")
    return value


def _only_looking(config: pytest.Config) -> bool:
    """Runs that collect but never run a test must not start anything."""
    return bool(config.getoption("collectonly") or config.getoption("showfixtures", False)
                or config.getoption("show_fixtures_per_test", False))


class BringUp:
    def __init__(self, state: State, parallel: int) -> None:
        self._state = state
        self._parallel = parallel

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        pool = self._state.pool
        if pool is None or not self._state.explicit or _only_looking(session.config):
            return
        pool.prefetch([s for s in self._state.selected if not s.is_fake], self._parallel)
