"""A real node's log is read until it stops growing; a simulated one once."""

from __future__ import annotations

from collections.abc import Callable

from pytest_stacks.backends.kubernetes import pod_log


def reads(*answers: str) -> tuple[Callable[[], str], list[str]]:
    """A log that answers in turn (the last answer for ever); the list counts the reads."""
    seen: list[str] = []

    def read() -> str:
        seen.append(answers[min(len(seen), len(answers) - 1)])
        return seen[-1]
    return read, seen


def test_a_line_written_after_the_exit_is_waited_for() -> None:
    read, seen = reads("out\n", "out\nerr\n")
    assert pod_log.settled_log(read, 0.01) == "out\nerr\n"
    assert seen == ["out\n", "out\nerr\n", "out\nerr\n"]


def test_a_log_that_does_not_change_costs_one_more_read() -> None:
    read, seen = reads("out\n")
    assert pod_log.settled_log(read, 0.01) == "out\n"
    assert len(seen) == 2


def test_a_simulated_node_is_read_once() -> None:
    read, seen = reads("out\n", "never\n")
    assert pod_log.settled_log(read, 0.0) == "out\n"
    assert seen == ["out\n"]


def test_a_log_that_keeps_growing_is_returned_as_it_stands() -> None:
    growing = iter(range(1000))
    text = pod_log.settled_log(lambda: f"line {next(growing)}\n", 0.001)
    assert text == f"line {pod_log.LOG_SETTLE_READS}\n"
