"""Under pytest-xdist the controller owns the run; workers attach to its stacks.

The controller hands its run (id, directory, owner identity, lane) to every worker through
``workerinput``; a worker then never brings anything down, it only lets go.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, TypedDict

import pytest

from pytest_stacks.plugin.state import State
from pytest_stacks.providers.base import RunContext

WORKERINPUT_KEY = "pytest_stacks_run"


class SharedRun(TypedDict):
    run_id: str
    run_dir: str
    owner_pid: int
    owner_start: str
    lane: str


def controller_run(config: pytest.Config) -> RunContext | None:
    """The controller's run, when this process is an xdist worker; else None."""
    workerinput = getattr(config, "workerinput", None)
    if workerinput is None or WORKERINPUT_KEY not in workerinput:
        return None
    shared: SharedRun = workerinput[WORKERINPUT_KEY]
    return RunContext(shared["run_id"], Path(shared["run_dir"]), shared["owner_pid"],
                      shared["owner_start"], shared["lane"])


class XdistBridge:
    """Registered on the controller: hands its run to every worker it starts."""

    def __init__(self, state: State) -> None:
        self._state = state

    def pytest_configure_node(self, node: Any) -> None:
        pool = self._state.pool
        if pool is None:
            return
        ctx = pool.ctx
        shared: SharedRun = {"run_id": ctx.run_id, "run_dir": str(ctx.run_dir),
                             "owner_pid": ctx.owner_pid, "owner_start": ctx.owner_start,
                             "lane": ctx.lane}
        node.workerinput[WORKERINPUT_KEY] = shared
