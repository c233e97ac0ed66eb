"""Teardown under signals.deferred() is not cut short by a signal, whichever thread the kernel
hands it to."""

from __future__ import annotations

import os
import signal
import threading
import time

from pytest_stacks import signals


def test_a_signal_taken_by_another_thread_does_not_interrupt_a_deferred_teardown() -> None:
    previous = signals.sigterm_as_interrupt()
    go = threading.Event()
    # Started before teardown, as the background teardown threads are: it does not block the
    # signal, so the kernel gives it the SIGTERM it sends, and CPython then runs the Python
    # handler in the main thread.
    sender = threading.Thread(target=lambda: go.wait() and os.kill(os.getpid(), signal.SIGTERM))
    sender.start()
    try:
        with signals.deferred():
            go.set()
            sender.join()
            deadline = time.monotonic() + 0.3
            while time.monotonic() < deadline:
                time.sleep(0.01)  # bytecode boundaries at which a handler would run
        assert signal.getsignal(signal.SIGTERM) is signals._raise_interrupt  # put back
    finally:
        go.set()
        signals.restore(previous)
