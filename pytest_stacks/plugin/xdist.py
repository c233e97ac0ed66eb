"""Under pytest-xdist the controller owns the run; workers attach to its stacks.

The controller hands its run (id, directory, owner identity, lane) to every worker through
``workerinput``; a worker then never brings anything down, it only lets go. With
``--stack-group`` it also schedules by stack: each stack's tests go to one worker.
"""

from __future__ import annotations

import re
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


def stack_scope(nodeid: str, stacks: list[str]) -> str:
    """The scheduling scope of a test: its stack (from the parameter ids in the node id), or
    the test itself when it runs on no stack."""
    params = nodeid[nodeid.find("["):] if "[" in nodeid else ""
    # Longest names first, so 'slurm-24.11-mpi' is not taken for 'slurm-24.11'.
    for name in sorted(stacks, key=len, reverse=True):
        if re.search(rf"[\[-]{re.escape(name)}[\]-]", params):
            return f"stack:{name}"
    return nodeid


def stack_scheduling(config: pytest.Config, log: Any, stacks: list[str]) -> Any:
    """xdist's scope scheduling with the stack as the scope: a worker takes all of one
    stack's tests, so workers talk to different stacks at once instead of all queueing on
    the first. Tests on no stack are spread one by one, as ``--dist load`` does.

    xdist's own ``--dist loadgroup`` would do this through ``xdist_group`` marks, but it
    renames node ids in a way pytest 9.2 no longer honours (the groups are silently lost),
    so the grouping is done here. xdist is imported only when it schedules.
    """
    from xdist.scheduler import LoadScopeScheduling

    class StackScheduling(LoadScopeScheduling):  # type: ignore[misc]
        def _split_scope(self, nodeid: str) -> str:
            return stack_scope(nodeid, stacks)

    return StackScheduling(config, log)


class XdistBridge:
    """Registered on the controller: hands its run to every worker it starts."""

    def __init__(self, state: State) -> None:
        self._state = state

    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> Any:
        if not config.getoption("stack_group") or config.getvalue("dist") == "each":
            return None
        return stack_scheduling(config, log, [s.name for s in self._state.selected])

    def pytest_configure_node(self, node: Any) -> None:
        pool = self._state.pool
        if pool is None:
            return
        ctx = pool.ctx
        shared: SharedRun = {"run_id": ctx.run_id, "run_dir": str(ctx.run_dir),
                             "owner_pid": ctx.owner_pid, "owner_start": ctx.owner_start,
                             "lane": ctx.lane}
        node.workerinput[WORKERINPUT_KEY] = shared
