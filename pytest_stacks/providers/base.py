"""What every provider offers, and the per-run context it works in."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from pytest_stacks.contract import JobClient
from pytest_stacks.manifest import Stack

LABEL_PREFIX = "io.pytest-stacks"
LABEL_RUN = f"{LABEL_PREFIX}.run"
LABEL_STACK = f"{LABEL_PREFIX}.stack"
LABEL_OWNER_PID = f"{LABEL_PREFIX}.owner-pid"
LABEL_OWNER_START = f"{LABEL_PREFIX}.owner-start"
LABEL_OWNER_HOST = f"{LABEL_PREFIX}.owner-host"


def process_start_time(pid: int) -> str:
    """The kernel's start time of ``pid`` (clock ticks since boot), or "" if it is gone.

    A pid alone can be reused; pid plus start time names one process for the life of the boot,
    which is what the reaper needs to tell a dead run from a live one.
    """
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as handle:
            text = handle.read()
    except OSError:
        return ""
    return text.rsplit(")", 1)[1].split()[19]


def owner_alive(pid: int, start: str) -> bool:
    """Whether the process that owns a run is still alive on this host.

    With /proc, pid plus start time identifies it exactly (a reused pid has another start
    time). Without /proc (macOS), only the pid can be checked, and a doubt counts as alive:
    reaping a live run's stack is worse than leaving a dead one for later.
    """
    if start == "keep":
        return True  # `pytest-stacks up`: kept until `pytest-stacks down`
    if pid <= 0:
        return False
    current = process_start_time(pid)
    if current:
        return not start or current == start
    if Path("/proc/self/stat").exists():
        return False  # /proc works here and has no such process
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


@dataclass(frozen=True)
class RunContext:
    run_id: str
    run_dir: Path
    owner_pid: int
    owner_start: str
    lane: str = "pinned"  # or "canary": float to the stack's canary references

    @classmethod
    def for_this_process(cls, run_id: str, run_dir: Path, lane: str = "pinned") -> RunContext:
        pid = os.getpid()
        return cls(run_id, run_dir, pid, process_start_time(pid), lane)

    def labels(self, stack: str) -> dict[str, str]:
        return {
            LABEL_RUN: self.run_id,
            LABEL_STACK: stack,
            LABEL_OWNER_PID: str(self.owner_pid),
            LABEL_OWNER_START: self.owner_start,
            LABEL_OWNER_HOST: os.uname().nodename,
        }


@dataclass
class Attached:
    """A stack as one process uses it: the client, and how to read logs and let go."""

    client: JobClient
    info: dict[str, Any]
    logs: Callable[[], str]
    close: Callable[[], None] = field(default=lambda: None)


class Provider(Protocol):
    def up(self, stack: Stack, ctx: RunContext) -> dict[str, Any]:
        """Bring the stack up and wait until its daemons serve. Returns JSON-able info that
        any process of the run can attach with. Raises InfrastructureError."""
        ...

    def attach(self, stack: Stack, info: dict[str, Any], ctx: RunContext) -> Attached: ...

    def down(self, stack: Stack, info: dict[str, Any], ctx: RunContext) -> None:
        """Remove everything ``up`` created; raise InfrastructureError if that cannot be proven."""
        ...
