"""How a run reacts to SIGTERM and Ctrl-C, for the plugin and the CLI alike.

SIGTERM (a CI runner cancelling a job, `kill`) must unwind like Ctrl-C so that teardown runs and
nothing leaks; and while stacks come down a second Ctrl-C must not cut `docker compose down` in
half. Nothing here knows about pytest.
"""

from __future__ import annotations

import contextlib
import signal
from collections.abc import Generator
from typing import Any

_NOT_INSTALLED = object()


def _raise_interrupt(signum: int, frame: object) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def sigterm_as_interrupt() -> Any:
    """Make SIGTERM raise KeyboardInterrupt; returns the previous handler for :func:`restore`.

    Outside the main thread signals cannot be set: then nothing changes and a sentinel is
    returned that :func:`restore` ignores.
    """
    try:
        return signal.signal(signal.SIGTERM, _raise_interrupt)
    except ValueError:
        return _NOT_INSTALLED


def restore(previous: Any) -> None:
    """Put back the handler :func:`sigterm_as_interrupt` replaced (nested pytest sessions)."""
    if previous is _NOT_INSTALLED or previous is None:
        return
    with contextlib.suppress(ValueError):
        signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def deferred() -> Generator[None, None, None]:
    """Hold SIGINT and SIGTERM for the duration: teardown is not interrupted.

    Both are blocked in this thread, and their Python handlers are replaced by one that only
    notes them: the kernel may hand a signal to any thread that does not block it (a
    background teardown or bring-up thread), and CPython would then raise KeyboardInterrupt
    in the main thread all the same. A signal that arrived meanwhile has been answered by
    finishing teardown: it is consumed rather than delivered, so it cannot interrupt the
    clean-up that follows.
    """
    mask = {signal.SIGINT, signal.SIGTERM}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, mask)
    except (ValueError, OSError):
        yield
        return
    handlers = {}
    for signum in mask:
        with contextlib.suppress(ValueError, OSError):  # not the main thread: mask only
            handlers[signum] = signal.signal(signum, _noted)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError, OSError):
            for signum in signal.sigpending() & mask:
                signal.sigtimedwait([signum], 0)
        for signum, handler in handlers.items():
            with contextlib.suppress(ValueError, OSError):
                signal.signal(signum, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _noted(signum: int, frame: object) -> None:
    """During teardown: the signal is answered by finishing it."""
