"""The fake pool's slot ads, as its collector would hold them.

One machine of static slots, with what a real startd in our stacks
advertises about containers: nothing. A startd that found no container runtime (no Docker,
no Apptainer or Singularity) leaves ``HasContainer``, ``HasDocker`` and ``HasSingularity``
out of its ads, so a constraint on any of them is undefined, hence false.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pytest_stacks.backends.htcondor.fake.classad import Expr

MACHINE = "fake"


def slot_ads(count: int, version: str) -> list[dict[str, Any]]:
    return [{"MyType": "Machine", "Name": f"slot{i}@{MACHINE}", "Machine": MACHINE,
             "SlotID": i, "State": "Unclaimed", "Activity": "Idle", "Cpus": 1,
             "CondorVersion": f"$CondorVersion: {version} $", "OpSys": "LINUX"}
            for i in range(1, count + 1)]


def matching(count: int, version: str, constraint: Expr,
             projection: Sequence[str]) -> list[dict[str, Any]]:
    """The slot ads ``constraint`` is true of, cut to ``projection`` (all attributes if empty)."""
    wanted = {p.lower() for p in projection}
    return [{k: v for k, v in ad.items() if not wanted or k.lower() in wanted}
            for ad in slot_ads(count, version) if constraint.is_true(ad)]
