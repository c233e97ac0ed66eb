"""The reaper's question, "is this run's owner alive?", for an owner that exited unwaited."""

from __future__ import annotations

import subprocess

from pytest_stacks.polling import poll_until
from pytest_stacks.providers.labels import owner_alive, process_start_time


def test_a_zombie_owner_counts_as_dead() -> None:
    """A run whose owner exited but was never waited for (its parent timed out on it) must be
    reaped: a zombie keeps its pid and start time, not its life."""
    child = subprocess.Popen(["sleep", "30"])
    start = process_start_time(child.pid)
    assert start and owner_alive(child.pid, start)
    child.kill()
    poll_until(lambda: process_start_time(child.pid), lambda s: s == "", timeout=10,
               interval=0.05)
    assert not owner_alive(child.pid, start)
    child.wait()
