"""Cancelling bring-ups that run in background threads.

Stacks come up concurrently, in threads. A thread cannot be interrupted, but everything a
bring-up waits on is a child process (docker, compose, go, kind), a polling loop, or a file
lock another process holds (its build of the same program or image), so all of them check
one process-wide flag: when a run is interrupted (Ctrl-C, SIGTERM) the owner sets
it, the children are killed within a fraction of a second, every loop stops at its next tick,
and teardown then finds nothing still being created behind its back.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Mapping, Sequence

from filelock import FileLock, Timeout

_CANCELLED = threading.Event()
_TICK = 0.2


class Cancelled(Exception):
    """The run was interrupted while this bring-up step was waiting."""

    def __init__(self, what: str = "") -> None:
        super().__init__(f"cancelled: the run was interrupted{f' ({what})' if what else ''}")


def cancel() -> None:
    """Stop every cancellable wait and child process of this process, now and until reset."""
    _CANCELLED.set()


def reset() -> None:
    """Allow waits again (after the owner has joined the cancelled threads)."""
    _CANCELLED.clear()


def cancelled() -> bool:
    return _CANCELLED.is_set()


def check(what: str = "") -> None:
    """Raise :class:`Cancelled` if the run has been cancelled."""
    if _CANCELLED.is_set():
        raise Cancelled(what)


def sleep(seconds: float) -> None:
    """``time.sleep`` that ends early (raising :class:`Cancelled`) when the run is cancelled."""
    if _CANCELLED.wait(max(0.0, seconds)):
        raise Cancelled("while waiting")


def run(argv: Sequence[str], *, timeout: float, env: Mapping[str, str] | None = None,
        cwd: str | None = None, input_text: str | None = None
        ) -> subprocess.CompletedProcess[str]:
    """``subprocess.run(..., capture_output=True, text=True)`` that also stops on cancel.

    The child gets its own process group so that cancelling kills what it started too (compose
    starts buildkit helpers, go starts compilers). A timeout gives exit code 124 and a note on
    stderr, as coreutils' ``timeout`` does; a cancel raises :class:`Cancelled`.
    """
    check(argv[0] if argv else "")
    process = subprocess.Popen(
        list(argv), env=dict(env) if env is not None else None, cwd=cwd, encoding="utf-8",
        errors="replace",
        stdin=subprocess.PIPE if input_text is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    deadline = time.monotonic() + timeout
    pending_input = input_text
    try:
        while True:
            try:
                out, err = process.communicate(pending_input, timeout=_TICK)
                return subprocess.CompletedProcess(list(argv), process.returncode, out, err)
            except subprocess.TimeoutExpired:
                pending_input = None  # communicate() has already sent it
            if _CANCELLED.is_set():
                _kill(process)
                raise Cancelled(" ".join(argv[:3]))
            if time.monotonic() >= deadline:
                _kill(process)
                out, err = process.communicate()
                return subprocess.CompletedProcess(
                    list(argv), 124, out or "",
                    (err or "") + f"\n(timed out after {timeout:.0f}s)")
    except BaseException:
        _kill(process)
        raise


def _kill(process: subprocess.Popen[str]) -> None:
    """Kill the child's whole process group and reap it."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired, ValueError, OSError):
        process.communicate(timeout=10)


@contextlib.contextmanager
def file_lock(path: str) -> Iterator[None]:
    """Hold the file lock at ``path``; waiting for it ends when the run is cancelled. Another
    process may hold it for the whole of a long build: seen on a new machine, a SIGTERMed
    ``pytest-stacks build`` sat four minutes in such a wait, its owner already gone."""
    lock = FileLock(path)
    while True:
        check(f"waiting for {path}")
        try:
            lock.acquire(timeout=_TICK)
            break
        except Timeout:
            continue
    try:
        yield
    finally:
        lock.release()
