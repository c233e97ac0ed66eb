"""Bringing the run's stacks up ahead of their first test, several at once.

Registered on the run's owner only (the single pytest process, or the xdist controller). At
session start, the stacks named on the command line begin to come up in background threads, at
most ``--stack-parallel`` at once, while pytest collects (and xdist starts its workers). Tests
attach as their stack is proven, so a run over a whole window waits for its slowest stack rather
than for the sum, and a single stack's bring-up overlaps collection.

Only stacks selected with ``--stack`` start early: each of them must run a test anyway (a
selected stack on which nothing ran fails the run), so none is started in vain, whereas the
default selection (the fakes) has nothing to start.

Long bring-up steps (Go builds, image builds, a cluster's creation, the probe) are said on the
terminal as they start, every minute while they run, and when they end
(:mod:`pytest_stacks.progress`): whole lines, one at a time, never under ``-q``.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from pytest_stacks import progress
from pytest_stacks.plugin.state import State, setting

DEFAULT_PARALLEL = 4


def parallel_setting(config: pytest.Config) -> int:
    """``--stack-parallel``, else the ``stacks_parallel`` ini value, else the default."""
    raw = setting(config, "stack_parallel", "stacks_parallel", str(DEFAULT_PARALLEL))
    try:
        value = int(str(raw))
    except ValueError:
        value = 0
    if value < 1:
        raise pytest.UsageError(
            f"pytest-stacks: stacks_parallel / --stack-parallel must be a whole number >= 1 "
            f"(got {raw!r}); 1 brings stacks up one after another")
    return value


def only_looking(config: pytest.Config) -> bool:
    """Runs that collect but never run a test must not start anything."""
    return bool(config.getoption("collectonly") or config.getoption("showfixtures", False)
                or config.getoption("show_fixtures_per_test", False))


def _terminal_lines(config: pytest.Config) -> Callable[[str], None] | None:
    """A listener writing progress as whole terminal lines (bring-ups run in background
    threads: one lock, one line at a time); None under ``-q`` or without a terminal."""
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is None or config.get_verbosity() < 0:
        return None
    lock = threading.Lock()

    def write(line: str) -> None:
        with lock:
            reporter.write_line(f"[pytest-stacks {time.strftime('%H:%M:%S')}] {line}")
    return write


class BringUp:
    def __init__(self, state: State, parallel: int) -> None:
        self._state = state
        self._parallel = parallel
        self._stop_listening: Callable[[], None] | None = None

    @pytest.hookimpl(trylast=True)
    def pytest_sessionstart(self, session: pytest.Session) -> None:
        pool = self._state.pool
        if pool is None or only_looking(session.config):
            return
        writer = _terminal_lines(session.config)
        if writer is not None and any(not s.is_fake for s in self._state.selected):
            self._stop_listening = progress.listen(writer)
        if not self._state.explicit:
            return
        pool.prefetch([s for s in self._state.selected if not s.is_fake], self._parallel)

    def pytest_unconfigure(self, config: pytest.Config) -> None:
        if self._stop_listening is not None:
            self._stop_listening()
            self._stop_listening = None
