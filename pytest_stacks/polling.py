"""One polling loop for every "wait until" in the package.

Readiness queries, job states and engine start-up all poll with a deadline. Each caller says
what to ask and when the answer is good; the loop owns the clock, the back-off and the timeout
message, so no caller can forget the deadline and hang.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TypeVar

from pytest_stacks import cancellation

T = TypeVar("T")


def poll_until(
    ask: Callable[[], T],
    done: Callable[[T], bool],
    *,
    timeout: float,
    interval: float = 0.5,
    first_interval: float | None = None,
    on_timeout: Callable[[T], str] = lambda last: f"still {last!r}",
) -> T:
    """Call ``ask`` until ``done(answer)``; return that answer.

    Waits ``first_interval`` (default: ``interval``) after the first try and grows by half up
    to ``interval``: fast fakes are not slowed down, real daemons are not hammered. By half, not
    doubling: an answer that turns good just after a try is seen at most half that wait late
    (the contract suite on the fakes: 3.1 s -> 2.8 s process wall, bench/fake_lane.py). At the
    deadline raises TimeoutError with the message ``on_timeout(last answer)``; the last try
    happens at or after it, so a slow ``ask`` is never cut short by the clock alone.
    """
    deadline = time.monotonic() + timeout
    delay = interval if first_interval is None else min(first_interval, interval)
    while True:
        last = ask()
        if done(last):
            return last
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise TimeoutError(on_timeout(last))
        cancellation.sleep(min(delay, remaining))
        delay = min(delay * 1.5, interval)
