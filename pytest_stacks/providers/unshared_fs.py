"""A compose stack without a shared file system between its submit side and its nodes
(``options.shared_fs: false``): every service that mounts the stack's job area (``/work``,
one volume shared by the login node and the compute nodes in ``stacks/slurm-cluster``) gets a
volume of its own there instead, so a file a job writes on node1 is on node1's disk only, and
one the client writes on the login node never reaches a node, as on a site whose nodes have
only local scratch.

Done in the run's compose override (compose merges a service's mounts by their target), so the
stack's folder and its image are the shared-fs stack's own, unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_stacks.backends import shared_fs
from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import Stack

#: The job area's mount point (the Slurm driver's job root, /work/jobs, is in it).
AREA = "/work"
shared = shared_fs.shared


def _target(mount: Any) -> str:
    if isinstance(mount, Mapping):
        return str(mount.get("target", ""))
    parts = str(mount).split(":")
    return parts[1] if len(parts) > 1 else parts[0]


def private_services(source: Mapping[str, Any]) -> list[str]:
    """The services of the compose file that mount something at the job area."""
    return [name for name, service in (source.get("services") or {}).items()
            if any(_target(m) == AREA for m in (service or {}).get("volumes", []))]


def volume(service: str) -> str:
    return f"{service}-work"


def override(stack: Stack, source: Mapping[str, Any],
             labels: Mapping[str, str]) -> dict[str, Any]:
    """The compose override's part: ``<service>-work`` at the job area of each such service
    (compose replaces the shared mount of the same target). {} where the area is shared."""
    if shared(stack):
        return {}
    services = private_services(source)
    if not services:
        raise StacksError(f"manifest: stack {stack.name}: options.{shared_fs.OPTION}: false, "
                          f"but no service of its compose file mounts anything at {AREA}, so there "
                          f"is no shared job area to split. Drop the option, or mount the "
                          f"job area at {AREA}.")
    return {
        "services": {name: {"volumes": [{"type": "volume", "source": volume(name),
                                         "target": AREA}]} for name in services},
        "volumes": {volume(name): {"labels": dict(labels)} for name in services},
    }
