"""Find and remove what dead runs left: every resource carries its run and owner in labels.

A run is dead when its owner process is gone from this host (pid absent, or reused by a
process with another start time). Live runs are never touched, so two sessions on one machine
can clean up after crashed ones without hurting each other.

kind's node containers carry kind's labels, not ours; each of our clusters runs on a labelled
network of its own named like the cluster, so a node is its network's run's
(``io.x-k8s.kind.cluster`` = the network's name).
"""

from __future__ import annotations

import contextlib
import os
from collections import defaultdict
from collections.abc import Collection, Iterator
from dataclasses import dataclass, field
from typing import Any

from docker.errors import NotFound

from pytest_stacks import dockerutil, places
from pytest_stacks.providers import kind_owners
from pytest_stacks.providers.labels import (
    LABEL_OWNER_HOST,
    LABEL_OWNER_PID,
    LABEL_OWNER_START,
    LABEL_RUN,
    LABEL_STACK,
)
from pytest_stacks.providers.labels import owner_alive as process_alive

KIND_CLUSTER_LABEL = kind_owners.KIND_CLUSTER_LABEL


@dataclass
class RunResources:
    run_id: str
    labels: dict[str, str]
    containers: list[Any] = field(default_factory=list)
    networks: list[Any] = field(default_factory=list)
    volumes: list[Any] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.containers) + len(self.networks) + len(self.volumes)


def owner_alive(labels: dict[str, str], kept: Collection[str] = ()) -> bool:
    """Whether the run owning these resources is alive, or kept (``kept``: the kept runs' ids,
    :func:`pytest_stacks.places.kept_runs`), so they are not a dead run's to reap."""
    if labels.get(LABEL_RUN) in kept:
        return True  # `pytest-stacks up`, --stack-keep: kept until `pytest-stacks down`
    if labels.get(LABEL_OWNER_HOST, os.uname().nodename) != os.uname().nodename:
        return True  # another host's run (shared engine): not ours to judge
    try:
        pid = int(labels.get(LABEL_OWNER_PID, "0"))
    except ValueError:
        return False
    return process_alive(pid, labels.get(LABEL_OWNER_START, ""))


def inventory(run_id: str | None = None) -> dict[str, RunResources]:
    api = dockerutil.client()
    label = f"{LABEL_RUN}={run_id}" if run_id else LABEL_RUN
    runs: dict[str, RunResources] = {}

    def bucket(labels: dict[str, str]) -> RunResources:
        rid = labels[LABEL_RUN]
        if rid not in runs:
            runs[rid] = RunResources(rid, dict(labels))
        return runs[rid]

    # ignore_removed: a container removed between the engine's list and its inspection (another
    # stack of this run coming up or going down at that moment) is simply not there.
    for container in api.containers.list(all=True, filters={"label": label},
                                         ignore_removed=True):
        bucket(container.labels).containers.append(container)
    for network in api.networks.list(filters={"label": label}):
        resources = bucket(network.attrs.get("Labels") or {})
        resources.networks.append(network)
        resources.containers += api.containers.list(
            all=True, filters={"label": f"{KIND_CLUSTER_LABEL}={network.name}"},
            ignore_removed=True)
    for volume in api.volumes.list(filters={"label": label}):
        bucket(volume.attrs.get("Labels") or {}).volumes.append(volume)
    return runs


def remove(resources: RunResources) -> list[str]:
    """Remove containers, then networks, then volumes, and look again. Returns what could not
    be removed, or could not be proven removed."""
    left: list[str] = []
    for container in resources.containers:
        with _gone_is_fine(f"container {container.name}", left):
            container.remove(force=True, v=True)
    for network in resources.networks:
        with _gone_is_fine(f"network {network.name}", left):
            network.remove()
    for volume in resources.volumes:
        with _gone_is_fine(f"volume {volume.name}", left):
            volume.remove(force=True)
    return left + _still_there(resources)


def _still_there(resources: RunResources) -> list[str]:
    """What of ``resources`` the engine still lists (an engine that cannot answer is a
    problem too: it never reads as "all gone")."""
    try:
        now = inventory(resources.run_id).get(resources.run_id)
    except Exception as exc:
        return [f"run {resources.run_id}: cannot look again to prove its resources removed: "
                f"{exc}"]
    if now is None:
        return []
    wanted = {("container", c.id) for c in resources.containers} | \
        {("network", n.id) for n in resources.networks} | \
        {("volume", v.name) for v in resources.volumes}
    present = [f"container {c.name}" for c in now.containers if ("container", c.id) in wanted]
    present += [f"network {n.name}" for n in now.networks if ("network", n.id) in wanted]
    present += [f"volume {v.name}" for v in now.volumes if ("volume", v.name) in wanted]
    return [f"run {resources.run_id}: still present after removal: {', '.join(present)}"] \
        if present else []


@contextlib.contextmanager
def _gone_is_fine(what: str, left: list[str]) -> Iterator[None]:
    """Already gone is what removal wanted; any other refusal is recorded, not raised."""
    try:
        yield
    except NotFound:
        pass
    except Exception as exc:
        left.append(f"{what}: {exc}")


def reap_dead(*, dry_run: bool = False, keep_run: str | None = None
              ) -> tuple[dict[str, RunResources], list[str]]:
    """Remove every resource of runs whose owner is dead (never ``keep_run``, the caller's own).
    Returns what was (or would be) reaped, and what could not be removed."""
    reaped, problems = {}, []
    kept = places.kept_runs()
    for run_id, resources in inventory().items():
        if run_id == keep_run or owner_alive(resources.labels, kept):
            continue
        reaped[run_id] = resources
        if not dry_run:
            problems += remove(resources)
    return reaped, problems


def sweep_run(run_id: str, stack: str | None = None, *,
              exclude: Collection[str] = ()) -> list[str]:
    """Remove what one run (optionally one stack of it; never the stacks in ``exclude``, kept
    for a person to look at) still holds, and prove it gone; the teardown's safety net.
    Returns what could not be removed or proven removed."""
    try:
        found = inventory(run_id).values()
    except Exception as exc:
        return [f"run {run_id}: cannot list its resources to remove them: {exc}"]

    def wanted(labels: dict[str, str] | None) -> bool:
        name = (labels or {}).get(LABEL_STACK)
        return (stack is None or name == stack) and name not in exclude

    left: list[str] = []
    for resources in found:
        if stack is not None or exclude:
            resources.networks = [n for n in resources.networks
                                  if wanted(n.attrs.get("Labels"))]
            clusters = {n.name for n in resources.networks}
            resources.containers = [c for c in resources.containers
                                    if wanted(c.labels)
                                    or c.labels.get(KIND_CLUSTER_LABEL) in clusters]
            resources.volumes = [v for v in resources.volumes if wanted(v.attrs.get("Labels"))]
        left.extend(remove(resources))
    return left


def summary(runs: dict[str, RunResources]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = defaultdict(dict)
    for run_id, res in runs.items():
        out[run_id] = {"containers": len(res.containers), "networks": len(res.networks),
                       "volumes": len(res.volumes)}
    return dict(out)
