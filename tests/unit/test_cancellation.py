"""Cancelling bring-ups in background threads: child processes die, waits end, a timeout is
exit 124 as coreutils' `timeout` says it."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from filelock import FileLock, Timeout

from pytest_stacks import cancellation
from pytest_stacks.polling import poll_until


@pytest.fixture(autouse=True)
def _reset() -> Iterator[None]:
    cancellation.reset()
    yield
    cancellation.reset()


def test_a_child_runs_and_its_output_comes_back() -> None:
    done = cancellation.run(["sh", "-c", "echo out; echo err >&2; exit 3"], timeout=10)
    assert (done.returncode, done.stdout, done.stderr) == (3, "out\n", "err\n")


def test_input_reaches_the_child() -> None:
    assert cancellation.run(["cat"], timeout=10, input_text="hello").stdout == "hello"


def _running(marker: str) -> list[str]:
    listed = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True, check=True)
    return [line for line in listed.stdout.splitlines() if marker in line and "ps -eo" not in line]


def test_a_timeout_is_exit_124_and_kills_the_child() -> None:
    done = cancellation.run(["sh", "-c", "sleep 30.0417"], timeout=0.5)
    assert done.returncode == 124 and "timed out after" in done.stderr
    assert _running("sleep 30.0417") == []  # killed, not left to run out


def test_cancel_kills_a_running_child_and_its_children_at_once() -> None:
    outcome: list[BaseException] = []

    def bring_up() -> None:
        try:
            # A grandchild too: the whole process group must go.
            cancellation.run(["sh", "-c", "sleep 60.0417 & sleep 60.0417; wait"],
                             timeout=120)
        except BaseException as exc:
            outcome.append(exc)

    thread = threading.Thread(target=bring_up)
    thread.start()
    time.sleep(0.3)
    cancellation.cancel()
    thread.join(timeout=30)  # the child sleeps 60 s: only the cancel ends it before
    assert not thread.is_alive()
    assert _running("sleep 60.0417") == []  # the grandchild went with the group
    assert len(outcome) == 1 and isinstance(outcome[0], cancellation.Cancelled)


def test_nothing_new_starts_once_cancelled() -> None:
    cancellation.cancel()
    with pytest.raises(cancellation.Cancelled):
        cancellation.run(["true"], timeout=5)


def test_polling_loops_stop_on_cancel() -> None:
    timer = threading.Timer(0.3, cancellation.cancel)
    timer.start()
    with pytest.raises(cancellation.Cancelled):  # not TimeoutError: the 60 s never ran out
        poll_until(lambda: False, bool, timeout=60, interval=5)



def test_a_wait_for_a_lock_another_holder_keeps_ends_on_cancel(tmp_path: Path) -> None:
    path = str(tmp_path / "build.lock")
    holder = FileLock(path)
    holder.acquire()  # another session's long build
    outcome: list[str] = []

    def wait_for_it() -> None:
        try:
            with cancellation.file_lock(path):
                outcome.append("acquired")
        except cancellation.Cancelled as exc:
            outcome.append(str(exc))

    waiter = threading.Thread(target=wait_for_it)
    waiter.start()
    time.sleep(0.5)
    assert not outcome, "the lock is held: the waiter must still be waiting"
    cancellation.cancel()
    waiter.join(timeout=5)
    holder.release()
    assert not waiter.is_alive() and outcome == [f"cancelled: the run was interrupted "
                                                 f"(waiting for {path})"]


def test_a_free_lock_is_taken_and_given_back(tmp_path: Path) -> None:
    path = str(tmp_path / "build.lock")
    with cancellation.file_lock(path), pytest.raises(Timeout):  # held: no other handle gets it
        FileLock(path).acquire(timeout=0.1)
    FileLock(path).acquire(timeout=0.1)
