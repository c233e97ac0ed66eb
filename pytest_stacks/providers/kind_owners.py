"""Who owns which kind cluster, and removing the clusters of runs that died.

kind has no labels of its own for clusters, so run ownership is carried in the cluster name
(``pst-<run>-<stack>``) and in an owner record beside the run directories
(``<runs>/kind-clusters/<cluster>.json``: run id, owner pid and start time, the kind binary).
The reaper deletes a dead owner's clusters and never a live run's; clusters without our prefix,
and kind's shared ``kind`` network, are never touched. Node containers with our prefix and no
record that never ran for ten minutes are a creation killed half-way, and go too
(:func:`remove_orphans`).

Every removal is checked by looking again (the cluster's node containers, its network): a
removal that did not take is named as a problem, and so is an owner record that cannot be
read, because skipping it would leave a cluster running with nobody told. The kind binary a
record names is run only when it is kind as pytest-stacks built it (:func:`our_kind`): a
record is a file on disk, and a file must never choose a program for us to run.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from pytest_stacks import gobuild, places, progress
from pytest_stacks.evidence import write_whole
from pytest_stacks.providers.labels import owner_alive

Runner = Callable[[Sequence[str], float], subprocess.CompletedProcess[str]]
CLUSTER_PREFIX = "pst-"
KIND_CLUSTER_LABEL = "io.x-k8s.kind.cluster"  # kind's label on every node container
KIND_BUILD_PREFIX = "kind-"  # the Go build of kind itself (kind.tools_build's name)


def owner_file(root: Path, cluster: str) -> Path:
    return root / "kind-clusters" / f"{cluster}.json"


def record_owner(root: Path, cluster: str, *, run_id: str, pid: int, start: str,
                 kind: Path, stack: str) -> None:
    """Write the cluster's owner record whole (EvidenceError naming it otherwise: a cluster
    whose owner is not on record is one no reaper can judge, so it must not be created)."""
    path = owner_file(root, cluster)
    write_whole(path, json.dumps({"run": run_id, "pid": pid, "start": start, "kind": str(kind),
                                  "stack": stack}), what="kind cluster owner record", mode=0o600)


@dataclass(frozen=True)
class Owned:
    """One owner record: the cluster, its record file, and what the record says."""

    cluster: str
    record: Path
    run: str
    pid: int
    start: str
    kind: str
    stack: str = ""


def records(root: Path) -> tuple[list[Owned], list[str]]:
    """Every owner record, and a problem line per record that cannot be read."""
    found, problems = [], []
    for path in sorted((root / "kind-clusters").glob(f"{CLUSTER_PREFIX}*.json")):
        try:
            owned = _owned(path, places.read_record(path))
        except (ValueError, KeyError, TypeError) as exc:
            problems.append(f"kind cluster {path.stem}: its owner record {path} cannot be "
                            f"read ({exc}); check the cluster by hand (`kind get clusters`) "
                            f"and remove the record")
            continue
        found.append(owned)
    return found, problems


def _owned(path: Path, data: dict[str, object]) -> Owned:
    """One record's fields, each of its type (TypeError naming the field otherwise)."""
    pid = data.get("pid")
    if type(pid) is not int:
        raise TypeError(f"field 'pid' is {pid!r}, not a process id")
    for field in ("run", "start"):
        if not isinstance(data.get(field), str):
            raise TypeError(f"field {field!r} is {data.get(field)!r}, not a string")
    return Owned(path.stem, path, str(data["run"]), pid, str(data["start"]),
                 str(data.get("kind") or ""), str(data.get("stack") or ""))


def not_ours(owned: Owned) -> str:
    """The problem of a record whose kind is not :func:`our_kind`: named, never run."""
    return (f"kind cluster {owned.cluster}: its owner record {owned.record} has field 'kind' "
            f"{owned.kind or '(none)'!r}, which is not a kind binary pytest-stacks built "
            f"(under {gobuild.cache_root()}/{KIND_BUILD_PREFIX}*/bin/); it is not run. Delete "
            f"the cluster by hand (`kind delete cluster --name {owned.cluster}`) and remove "
            f"the record")


def our_kind(named: str) -> Path | None:
    """The kind binary a record names, if it is one pytest-stacks built (a completed build of
    kind's module in this user's Go build cache, symlinks resolved); else None. A record is a
    file on disk: the reaper never runs a program only because a record names it."""
    path = Path(named)
    if not named or not path.is_absolute():
        return None
    real = path.resolve()
    build = real.parent.parent
    cache = gobuild.cache_root().resolve()
    if (real.name, real.parent.name) != ("kind", "bin") or build.parent != cache \
            or not build.name.startswith(KIND_BUILD_PREFIX) \
            or not (build / gobuild.COMPLETE).is_file() or not real.is_file():
        return None
    return real  # what is run is the resolved binary, never the name the record gave


def _dead(owned: list[Owned]) -> list[Owned]:
    """The clusters whose run is neither alive nor kept (`pytest-stacks up`, --stack-keep)."""
    kept = places.kept_runs()
    return [o for o in owned if o.run not in kept and not owner_alive(o.pid, o.start)]


def dead(root: Path) -> list[Owned]:
    """Our clusters whose owning run is dead (what :func:`reap` deletes)."""
    return _dead(records(root)[0])


def reap(runner: Runner, root: Path, only_run: str | None = None,
         except_stacks: Collection[str] = ()) -> list[str]:
    """Delete our clusters whose owner is dead (or, with ``only_run``, that run's clusters but
    those of ``except_stacks``, kept), each with its own docker network, and prove each gone.
    Returns what could not be removed (and records that could not be read)."""
    owned, problems = records(root)
    chosen = [o for o in owned if o.run == only_run and o.stack not in except_stacks] \
        if only_run is not None else _dead(owned)
    for cluster in chosen:
        kind = our_kind(cluster.kind)
        problem = delete(runner, str(kind), cluster.cluster) if kind else not_ours(cluster)
        if problem:
            problems.append(problem)
        else:
            cluster.record.unlink(missing_ok=True)
    if only_run is None:
        problems += remove_orphans(runner, {o.cluster for o in owned})
    return problems


#: How old a recordless node container must be before it counts as an orphan: a live run
#: writes its record before ``kind create``, so only another user's run (records elsewhere)
#: could own one, and its containers run; a container that never started for this long is
#: what a creation killed half-way left.
ORPHAN_AGE_S = 600.0


def remove_orphans(runner: Runner, recorded: Collection[str],
                   now: float | None = None) -> list[str]:
    """Node containers of clusters with our prefix and no owner record that never ran (or
    stopped) and are older than :data:`ORPHAN_AGE_S`: a ``kind create`` killed half-way,
    whose run's record went with its teardown. Removed with their volumes and the cluster's
    network, proven gone; returns what could not be (an engine that cannot answer is said)."""
    listed = runner(["docker", "ps", "-a", "--filter", f"label={KIND_CLUSTER_LABEL}",
                     "--format", "{{.ID}}\t{{.Label \"" + KIND_CLUSTER_LABEL + "\"}}\t"
                     "{{.State}}\t{{.CreatedAt}}"], 60)
    if listed.returncode != 0:
        return [f"cannot list kind node containers to find orphans: "
                f"{(listed.stderr or listed.stdout).strip()[-300:]}"]
    clock = time.time() if now is None else now
    orphans: dict[str, list[str]] = {}
    for line in listed.stdout.splitlines():
        fields = line.split("\t")
        if len(fields) != 4:
            continue
        cid, cluster, state, created = fields
        if not cluster.startswith(CLUSTER_PREFIX) or cluster in recorded or state == "running":
            continue
        born = _created(created)
        if born is not None and clock - born >= ORPHAN_AGE_S:
            orphans.setdefault(cluster, []).append(cid)
    problems = []
    for cluster, ids in sorted(orphans.items()):
        done = runner(["docker", "rm", "-f", "-v", *ids], 120)
        if done.returncode != 0:
            problems.append(f"kind cluster {cluster}: its orphaned node containers {ids} "
                            f"(no owner record) cannot be removed: "
                            f"{(done.stderr or done.stdout).strip()[-300:]}")
            continue
        problem = remaining(runner, cluster) or remove_network(runner, cluster)
        if problem:
            problems.append(problem)
        else:
            progress.say(f"removed kind cluster {cluster}'s orphaned node containers (a "
                         f"creation killed half-way, no owner record): {len(ids)}")
    return problems


def _created(text: str) -> float | None:
    """Docker's ``CreatedAt`` (``2026-12-07 11:48:48 +0000 UTC``) as epoch seconds."""
    try:
        return datetime.strptime(" ".join(text.split()[:3]), "%Y-%m-%d %H:%M:%S %z").timestamp()
    except ValueError:
        return None


def delete(runner: Runner, kind: str, cluster: str) -> str:
    """``kind delete cluster``, then prove it: no node container left, the network gone.
    Returns a problem, or ''."""
    done = runner([kind, "delete", "cluster", "--name", cluster], 300)
    if done.returncode != 0:
        return f"kind cluster {cluster}: `kind delete cluster` failed: " \
               f"{(done.stderr or done.stdout).strip()[-300:]}"
    return remaining(runner, cluster) or remove_network(runner, cluster)


def remaining(runner: Runner, cluster: str) -> str:
    """'' when no node container of ``cluster`` is left; else what is (or why we cannot
    tell: an engine error never reads as "nothing remains")."""
    left = runner(["docker", "ps", "-aq", "--filter", f"label={KIND_CLUSTER_LABEL}={cluster}"],
                  60)
    if left.returncode != 0:
        return f"kind cluster {cluster}: cannot list its node containers to prove them gone: " \
               f"{(left.stderr or left.stdout).strip()[-300:]}"
    if left.stdout.split():
        return f"kind cluster {cluster}: containers remain after delete: {left.stdout.split()}"
    return ""


def remove_network(runner: Runner, network: str) -> str:
    """Remove the cluster's own docker network (named like the cluster, so never kind's
    shared ``kind``) and look again; gone already is fine. Returns a problem, or ''."""
    assert network.startswith(CLUSTER_PREFIX)
    done = runner(["docker", "network", "rm", network], 60)
    said = (done.stderr or done.stdout).strip()
    if done.returncode != 0 and "not found" not in said.lower() \
            and "no such network" not in said.lower():
        return f"kind cluster {network}: its docker network remains: {said[-300:]}"
    look = runner(["docker", "network", "ls", "-q", "--filter", f"name=^{network}$"], 60)
    if look.returncode != 0:
        return f"kind cluster {network}: cannot list networks to prove its network gone: " \
               f"{(look.stderr or look.stdout).strip()[-300:]}"
    if look.stdout.strip():
        return f"kind cluster {network}: its docker network remains after removal"
    return ""
