"""The small schedd interface the HTCondor driver talks to, and the values that cross it.

This module is neutral ground: the driver, the bindings wrapper and the in-process double all
import it, and it imports none of them. Anything that says how HTCondor *behaves* (default
expressions, version thresholds) stays out, so the double keeps its own copy of each fact and
cannot agree with the driver merely by importing what the driver believes.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pytest_stacks.versions import release

#: Job status codes as schedd ads carry them in ``JobStatus``.
STATUS_NAMES = {1: "Idle", 2: "Running", 3: "Removed", 4: "Completed", 5: "Held",
                6: "Transferring Output", 7: "Suspended"}


class ScheddError(Exception):
    """A schedd call failed (raised by both the bindings wrapper and the fake)."""


@dataclass(frozen=True)
class Submitted:
    """What a spooled submit returns: the cluster, its procs, and what ``spool`` needs."""

    cluster: int
    first_proc: int
    num_procs: int
    native: Any = None

    @property
    def job_ids(self) -> list[str]:
        return [f"{self.cluster}.{p}"
                for p in range(self.first_proc, self.first_proc + self.num_procs)]


class Schedd(Protocol):
    """The part of a schedd the driver uses; ads are plain dicts of Python values."""

    def submit(self, description: Mapping[str, str], *, spool: bool = True,
               count: int = 1) -> Submitted:
        """Queue ``count`` procs. Spooled (the default), they are held until :meth:`spool`
        uploads their files; not spooled, they are idle at once and their files are read
        where the description names them (a job that never runs, such as the housekeeping
        witness, needs none)."""
        ...

    def spool(self, submitted: Submitted) -> None: ...

    def retrieve(self, job_id: str) -> None:
        """Write the job's outputs to its submit-time ``initialdir``."""
        ...

    def act(self, action: str, job_ids: Sequence[str], reason: str = "") -> dict[str, Any]:
        """``action`` is ``"remove"``; returns the totals ad (TotalSuccess, TotalNotFound...)."""
        ...

    def edit(self, job_ids: Sequence[str], attribute: str, value: str) -> int:
        """Set ``attribute`` to the ClassAd expression ``value``; returns the jobs matched."""
        ...

    def query(self, constraint: str = "true",
              projection: Sequence[str] = ()) -> list[dict[str, Any]]: ...

    def history(self, constraint: str = "true", projection: Sequence[str] = (),
                match: int = -1) -> list[dict[str, Any]]: ...

    def slot_ads(self, constraint: str = "true",
                 projection: Sequence[str] = ()) -> list[dict[str, Any]]:
        """The slot (startd) ads the pool's collector holds that match ``constraint``."""
        ...

    def daemon_version(self) -> str:
        """The schedd's ``CondorVersion`` string."""
        ...

    def client_version(self) -> str:
        """The submitting client's version string."""
        ...


# ====================================================================== versions


def parse_condor_version(text: str) -> str:
    """``"$CondorVersion: 23.9.6 2024-07-31 ... $"`` (or a bare ``23.9.6``) -> ``"23.9.6"``."""
    match = re.search(r"(\d+\.\d+\.\d+)", text)
    if match is None:
        raise ValueError(f"no HTCondor version in {text!r}")
    return match.group(1)


def version_tuple(version: str) -> tuple[int, ...]:
    """The release of a version as HTCondor prints it (``$CondorVersion: ...`` or bare)."""
    return release(parse_condor_version(version))
