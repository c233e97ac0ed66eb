"""Who owns a resource: the labels every container, network and volume carries, and the
liveness rule the reaper judges them by."""

from __future__ import annotations

import os
from pathlib import Path

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
    fields = text.rsplit(")", 1)[1].split()
    if fields[0] in ("Z", "X"):
        return ""  # exited, only not yet waited for by its parent: as dead as it gets
    return fields[19]


def owner_alive(pid: int, start: str) -> bool:
    """Whether the process that owns a run is still alive on this host.

    With /proc, pid plus start time identifies it exactly (a reused pid has another start
    time). Without /proc (macOS), only the pid can be checked, and a doubt counts as alive:
    reaping a live run's stack is worse than leaving a dead one for later.
    """
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


def owner_labels(run_id: str, stack: str, owner_pid: int, owner_start: str) -> dict[str, str]:
    return {
        LABEL_RUN: run_id,
        LABEL_STACK: stack,
        LABEL_OWNER_PID: str(owner_pid),
        LABEL_OWNER_START: owner_start,
        LABEL_OWNER_HOST: os.uname().nodename,
    }
