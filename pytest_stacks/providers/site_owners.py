"""Who made what on a deployment we do not own: the owner record each run leaves beside its
objects there, and the rule that says whether its run is dead.

A run on an existing deployment writes its record (run id, stack, host, pid and the process's
start time, when) into its own place on the site: its working folder's
``.pytest-stacks-owner.json`` on a Slurm or HTCondor login node, its namespace's annotations
on Kubernetes. The next run, or ``pytest-stacks reap NAME``, removes the objects of runs whose
owner process is gone from *this* host; a record of another host, or one that cannot be read,
is never judged dead (a site is shared: reaping a colleague's live run is worse than leaving a
dead one for its own host to clean).
"""

from __future__ import annotations

import json
import os
from collections.abc import Collection, Mapping
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from pytest_stacks.providers.base import RunContext
from pytest_stacks.providers.labels import owner_alive

RECORD_FILE = ".pytest-stacks-owner.json"


@dataclass(frozen=True)
class RunOwner:
    run_id: str
    stack: str
    host: str
    pid: int
    start: str
    created: str = ""

    @classmethod
    def of_run(cls, ctx: RunContext, stack: str) -> RunOwner:
        """The run's owner process (the one that tears down), never an xdist worker: a worker
        that dies under a live run must not make its objects look abandoned."""
        return cls(ctx.run_id, stack, os.uname().nodename, ctx.owner_pid, ctx.owner_start,
                   datetime.now(UTC).isoformat(timespec="seconds"))

    def to_json(self) -> str:
        return json.dumps(asdict(self), sort_keys=True)

    @classmethod
    def from_mapping(cls, data: Mapping[str, Any]) -> RunOwner:
        """Raises ValueError naming the field for a record that is not one of ours: each
        field of its type (a pid given as text is not a process id, nor a dead one)."""
        for name in ("run_id", "stack", "host"):
            if not isinstance(data.get(name), str) or not data[name]:
                raise ValueError(f"not an owner record (field {name!r} is "
                                 f"{data.get(name)!r:.60}, not a non-empty string)")
        pid, start, created = data.get("pid"), data.get("start"), data.get("created", "")
        if not isinstance(start, str):
            raise ValueError(f"not an owner record (field 'start' is {start!r:.60}, not a "
                             f"process start time)")
        if type(pid) is not int or pid <= 0:
            raise ValueError(f"not an owner record (field 'pid' is {pid!r:.60}, not a process "
                             f"id: a whole number > 0)")
        if not isinstance(created, str):
            raise ValueError(f"not an owner record (field 'created' is {created!r:.60}, not a "
                             f"date and time)")
        return cls(data["run_id"], data["stack"], data["host"], pid, start, created)

    @classmethod
    def from_json(cls, text: str) -> RunOwner:
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise ValueError(f"not an owner record ({exc})") from None
        if not isinstance(data, dict):
            raise ValueError("not an owner record (not a JSON object)")
        return cls.from_mapping(data)


def is_dead(owner: RunOwner, *, current_run: str, kept: Collection[str] = ()) -> bool:
    """Whether ``owner``'s run is over without having cleaned up: this host's, not the
    current run, not kept by ``pytest-stacks up``, and its owner process is gone."""
    if owner.run_id == current_run or owner.run_id in kept:
        return False
    if owner.host != os.uname().nodename:
        return False
    return not owner_alive(owner.pid, owner.start)
