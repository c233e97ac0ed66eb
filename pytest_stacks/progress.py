"""Long steps said while they happen, and timed: where a bring-up's minutes go.

A first bring-up on a new machine builds Go programs and images for many minutes; a person
must be able to tell that from a hang, and a maintainer must be able to see which step to
make faster. Every slow step (a Go build, an image build, a seed, a cluster's creation, the
readiness wait, the probe) runs inside :func:`step`, which

- tells the registered listeners a line when it starts and when it ends (the pytest plugin
  writes them on the terminal, the CLI on stderr; nobody listening means nothing is said), and
- appends one JSON line per finished step to the file named by ``PYTEST_STACKS_TIMINGS``
  (``scripts/test.sh`` sets it and prints the sum per step at the end).

Which stack a step serves is carried in a context variable set by the bring-up, so the Go
build deep below it needs no stack argument. Nothing here knows about pytest.
"""

from __future__ import annotations

import contextvars
import json
import math
import os
import stat
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pytest_stacks.evidence import EvidenceError, append_line, describe

TIMINGS_ENV = "PYTEST_STACKS_TIMINGS"
STILL_EVERY = 60.0  # seconds between "still running" lines of a long step
Listener = Callable[[str], None]

_stack: contextvars.ContextVar[str] = contextvars.ContextVar("pytest_stacks_stack", default="")
_listeners: list[Listener] = []
_lock = threading.Lock()
_lost: list[str] = []


def listen(listener: Listener) -> Callable[[], None]:
    """Hear every step's start and end line; returns the call that stops listening."""
    with _lock:
        _listeners.append(listener)

    def stop() -> None:
        with _lock:
            if listener in _listeners:
                _listeners.remove(listener)
    return stop


def say(text: str) -> None:
    """One line to every listener (prefixed with the current stack, when there is one)."""
    name = _stack.get()
    line = f"{name}: {text}" if name else text
    with _lock:
        listeners = list(_listeners)
    for listener in listeners:
        try:
            listener(line)
        except Exception:  # a broken terminal must not break a bring-up
            continue


@contextmanager
def for_stack(name: str) -> Iterator[None]:
    """Steps inside are the bring-up of stack ``name``."""
    token = _stack.set(name)
    try:
        yield
    finally:
        _stack.reset(token)


@contextmanager
def step(what: str) -> Iterator[None]:
    """Say ``what`` is starting, every minute that it is still running (a build is not a
    hang), and how it ended; time it."""
    say(f"{what} ...")
    started = time.monotonic()
    outcome = "failed"
    done = threading.Event()
    context = contextvars.copy_context()  # the "still" lines name the same stack

    def still() -> None:
        while not done.wait(STILL_EVERY):
            say(f"{what}: still running after {_human(time.monotonic() - started)}")

    if _listeners:
        threading.Thread(target=context.run, args=(still,), daemon=True,
                         name="pytest-stacks-progress").start()
    try:
        yield
        outcome = "done"
    finally:
        done.set()
        seconds = time.monotonic() - started
        say(f"{what} {outcome} in {_human(seconds)}")
        _record(what, outcome, seconds)


def _human(seconds: float) -> str:
    return f"{seconds:.1f} s" if seconds < 90 else f"{int(seconds // 60)} min {seconds % 60:.0f} s"


def _record(what: str, outcome: str, seconds: float) -> None:
    path = os.environ.get(TIMINGS_ENV)
    if not path:
        return
    line = json.dumps({"stack": _stack.get(), "step": what, "outcome": outcome,
                       "seconds": round(seconds, 1), "pid": os.getpid(),
                       "at": time.strftime("%H:%M:%S")})
    try:
        with _lock:
            append_line(path, line, what=f"timings file ({TIMINGS_ENV})")
    except EvidenceError as exc:
        # Never a reason for the bring-up to fail (raised here it would hide the step's own
        # error): kept, and the run fails at its end naming it (:func:`lost_writes`).
        with _lock:
            if str(exc) not in _lost:
                _lost.append(str(exc))


def lost_writes() -> list[str]:
    """The timings lines this process could not write, one line per distinct failure (the
    plugin fails the run on them, the CLI exits non-zero): a timings file that silently
    misses steps would send a maintainer after the wrong step."""
    with _lock:
        return list(_lost)


@dataclass
class Timings:
    """What timings files say: each step's times and stacks, and what was not read (a file
    that is missing or cannot be read, lines that are not a step's), so a partial table is
    never shown as a whole one."""

    rows: dict[str, list[float]] = field(default_factory=dict)
    stacks: dict[str, set[str]] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)  # one line per file not read
    skipped: list[str] = field(default_factory=list)  # one line per file with lines skipped

    def table(self) -> str:
        out = [f"{'seconds':>8}  {'times':>5}  step (stacks)"]
        for what, values in sorted(self.rows.items(), key=lambda kv: -sum(kv[1])):
            who = ", ".join(sorted(self.stacks.get(what, ())))
            out.append(f"{sum(values):8.1f}  {len(values):5d}  {what}"
                       + (f" ({who})" if who else ""))
        return "\n".join(out)


def read_timings(paths: list[Path]) -> Timings:
    """Timings files read: a path that is not a regular file (a FIFO, a device, a folder) is
    never opened (reading a FIFO waits for a writer that may never come); a missing or
    unreadable file is named in ``missing``; a line that is not one step's JSON object (not
    UTF-8, not JSON, a JSON array, no step or seconds, seconds not finite) is counted per file
    in ``skipped``, with the first such line's number."""
    found = Timings()
    for path in paths:
        try:
            info = os.stat(path)
            if not stat.S_ISREG(info.st_mode):
                found.missing.append(f"{path}: not a regular file (a FIFO, a device or a "
                                     f"folder); not read")
                continue
            raw = path.read_bytes().splitlines()
        except OSError as exc:
            found.missing.append(f"{path}: cannot be read ({describe(exc)})")
            continue
        bad: list[int] = []
        for number, line in enumerate(raw, start=1):
            entry = _entry(line)
            if entry is None:
                if line.strip():
                    bad.append(number)
                continue
            step, seconds, stack = entry
            found.rows.setdefault(step, []).append(seconds)
            if stack:
                found.stacks.setdefault(step, set()).add(stack)
        if bad:
            found.skipped.append(f"{path}: skipped {len(bad)} line(s) that are not a timed "
                                 f"step's JSON object (the first: line {bad[0]})")
    return found


def _entry(line: bytes) -> tuple[str, float, str] | None:
    """(step, seconds, stack) of one timings line, or None when it is not one."""
    try:
        entry = json.loads(line.decode("utf-8"))
    except ValueError:  # UnicodeDecodeError and JSONDecodeError alike
        return None
    if not isinstance(entry, dict):
        return None
    step, seconds, stack = entry.get("step"), entry.get("seconds"), entry.get("stack", "")
    if not isinstance(step, str) or not step or isinstance(seconds, bool) \
            or not isinstance(seconds, int | float) or not math.isfinite(seconds) \
            or not isinstance(stack, str):
        return None
    return step, float(seconds), stack


def summary(paths: list[Path]) -> str:
    """Timings files as one table, slowest first: each step once with its total time (what
    was not read is left out; :func:`read_timings` says what)."""
    return read_timings(paths).table()
