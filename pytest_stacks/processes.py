"""Which process is which: a pid plus its kernel start time, and whether it still lives.

Every reaper (containers, kind clusters, run directories, the doubles' scratch folders) judges
an owner by this one rule, so none of them can disagree about a dead run.
"""

from __future__ import annotations

import os
from pathlib import Path


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
