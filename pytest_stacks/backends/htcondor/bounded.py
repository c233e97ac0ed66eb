"""Every ``htcondor2`` call with a deadline: the calls run in a worker process
(:mod:`.bindings_worker`) and one that does not answer in time ends with the worker killed.

A schedd that went away mid-run (killed, paused, cut off its network) must cost the test that
meets it seconds, not the bindings' own patience (20 s to forever, and the GIL held all
along, see the worker's docstring). After a call ran out of time the worker is gone and every
later call fails at once with the same words, so the rest of the stack's tests end at once
too (the health check then names the fault).
"""

from __future__ import annotations

import contextlib
import json
import os
import select
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

#: Each call's deadline: a call in flight to a schedd that went away ends within 15 s.
CALL_DEADLINE_S = 12.0
#: Starting the worker (a Python importing the bindings, on a busy CI runner).
START_DEADLINE_S = 30.0
#: The words of a call that ran out of time (classified "schedd unreachable" by .outages).
NO_ANSWER = "did not answer within"

WORKER = (sys.executable, "-m", "pytest_stacks.backends.htcondor.bindings_worker")


class WorkerError(Exception):
    """A call the worker answered with an exception, or could not answer; ``broken`` when the
    worker is gone (a deadline ran out or it died), so no later call can be made."""

    def __init__(self, message: str, *, broken: bool = False) -> None:
        super().__init__(message)
        self.broken = broken


class BoundedCalls:
    """One worker process and the deadline of each call made through it; thread-safe (one
    call at a time)."""

    def __init__(self, *, env: Mapping[str, str] | None = None,
                 deadline: float = CALL_DEADLINE_S, argv: Sequence[str] = WORKER) -> None:
        self.deadline = deadline
        self._lock = threading.Lock()
        self._broken = ""
        self._buffer = b""
        self._proc: subprocess.Popen[bytes] | None = subprocess.Popen(
            list(argv), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL, env={**os.environ, **(env or {})})

    @property
    def broken(self) -> str:
        return self._broken

    def call(self, op: str, deadline: float | None = None, **args: Any) -> Any:
        """The worker's answer to ``op(**args)``, within ``deadline`` seconds (the default
        per call), else :class:`WorkerError` (broken) and the worker killed."""
        limit = self.deadline if deadline is None else deadline
        with self._lock:
            if self._broken or self._proc is None:
                raise WorkerError(self._broken or "the bindings worker was closed", broken=True)
            proc = self._proc
            assert proc.stdin is not None and proc.stdout is not None
            try:
                proc.stdin.write((json.dumps({"op": op, "args": args}) + "\n").encode())
                proc.stdin.flush()
            except OSError as exc:
                self._end(f"the bindings worker is gone ({exc})")
                raise WorkerError(self._broken, broken=True) from exc
            line = self._line(proc.stdout.fileno(), time.monotonic() + limit)
            if line is None:
                self._end(f"the schedd {NO_ANSWER} {limit:.0f} s (the bindings call was "
                          f"abandoned, its worker killed; no further call is made)")
                raise WorkerError(self._broken, broken=True)
            if not line:
                try:  # its end closed: it is exiting; its status says how
                    code: int | None = proc.wait(timeout=2)
                except subprocess.TimeoutExpired:
                    code = None
                self._end(f"the bindings worker exited (status {code}) during the call")
                raise WorkerError(self._broken, broken=True)
        reply = json.loads(line)
        if "error" in reply:
            raise WorkerError(str(reply["error"]))
        return reply.get("ok")

    def _line(self, fd: int, until: float) -> bytes | None:
        """One answer line; b"" when the worker closed its end; None when time ran out."""
        while b"\n" not in self._buffer:
            remaining = until - time.monotonic()
            if remaining <= 0:
                return None
            ready, _, _ = select.select([fd], [], [], remaining)
            if not ready:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b""
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _end(self, why: str) -> None:
        self._broken = why
        self._stop()

    def _stop(self) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        for stream in (proc.stdin, proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        if proc.poll() is None:
            proc.kill()
        # A kill that did not land within 5 s: nothing more to do.
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=5)

    def close(self) -> None:
        """End the worker (it also ends by itself when this process goes: its stdin closes)."""
        with self._lock:
            self._stop()
