"""Who owns a resource: the labels every container, network and volume carries, and the
liveness rule the reaper judges them by (``processes``, re-exported here)."""

from __future__ import annotations

import os

from pytest_stacks.processes import owner_alive as owner_alive
from pytest_stacks.processes import process_start_time as process_start_time

LABEL_PREFIX = "io.pytest-stacks"
LABEL_RUN = f"{LABEL_PREFIX}.run"
LABEL_STACK = f"{LABEL_PREFIX}.stack"
LABEL_OWNER_PID = f"{LABEL_PREFIX}.owner-pid"
LABEL_OWNER_START = f"{LABEL_PREFIX}.owner-start"
LABEL_OWNER_HOST = f"{LABEL_PREFIX}.owner-host"


def owner_labels(run_id: str, stack: str, owner_pid: int, owner_start: str) -> dict[str, str]:
    return {
        LABEL_RUN: run_id,
        LABEL_STACK: stack,
        LABEL_OWNER_PID: str(owner_pid),
        LABEL_OWNER_START: owner_start,
        LABEL_OWNER_HOST: os.uname().nodename,
    }
