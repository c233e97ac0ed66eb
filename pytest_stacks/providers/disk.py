"""Disk space where the stacks write, and what of ours can be given back.

A bring-up writes images, the nodes' volumes (kind copies its node image's ``/var``, with the
images preloaded into it, into a volume per node; a real node imports its images into
containerd) and the Go programs' cache. A disk that fills half-way through fails in whichever
step was writing, as "no space left on device" from kind's node creation or a node's image
import, never naming the cause (a CI run on a disk that earlier work had filled: 82 tests
reported as infrastructure errors). So a bring-up asks for its space before it starts, and
``pytest-stacks doctor --fix`` gives back what is ours to give: node images superseded by
newer builds, images no name points at, and the engine's build cache.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_stacks import dockerutil
from pytest_stacks.manifest import Stack

GIB = 1024 ** 3
#: What one bring-up writes at most, by provider, with its images built here (measured on a
#: machine that had nothing: a kind cluster's node image and its two nodes' volumes, a real
#: node's containerd store, a Slurm image and its spool), with room to spare.
NEED_GIB = {"compose": 2.0, "kind": 8.0}
NODE_STACK_NEED_GIB = 5.0  # a compose stack with a real kubelet node (its containerd store)
#: Node images kept per repository: the newest, by creation (a manifest's kind stacks each
#: have one; a change to their inputs builds another, hundreds of MB to GBs each).
KEEP_NODE_IMAGES = 4
NODE_REPOSITORIES = ("pytest-stacks/kind-node", "pytest-stacks/kind-node-tools")


def need_gib(stack: Stack) -> float:
    """The free space a bring-up of ``stack`` asks for; 0 for a stack that writes nothing
    here (a fake, an existing deployment)."""
    if stack.provider == "compose" and stack.transport == "kubernetes" and \
            "execution" in stack.capabilities:
        return NODE_STACK_NEED_GIB
    return NEED_GIB.get(stack.provider, 0.0)


def data_root() -> Path | None:
    """The local engine's data root (``docker info``), where images and volumes go; None for
    an engine elsewhere (``DOCKER_HOST`` over TCP or SSH: its disk is not this one's)."""
    if os.environ.get("DOCKER_HOST", "unix://").split("://", 1)[0] != "unix":
        return None
    try:
        root = dockerutil.client().info().get("DockerRootDir") or "/var/lib/docker"
    except Exception:
        return None
    if not isinstance(root, str):
        return None  # not an engine's answer
    path = Path(root)
    while not path.exists() and path != path.parent:
        path = path.parent  # a rootless engine's root may not be readable: its parent is
    return path


def free_gib(path: Path) -> float:
    return shutil.disk_usage(path).free / GIB


def shortfall(stacks: Sequence[Stack], root: Path | None = None) -> str:
    """Why these stacks cannot come up together on this disk, or "" when they can."""
    need = sum(need_gib(s) for s in stacks)
    root = root if root is not None else data_root()
    if root is None or need == 0:
        return ""
    free = free_gib(root)
    if free >= need:
        return ""
    names = ", ".join(s.name for s in stacks)
    return (f"only {free:.1f} GiB free on {root} (the Docker engine's data root); bringing up "
            f"{names} writes up to {need:.0f} GiB (images, node volumes): free some space, or "
            f"run `pytest-stacks doctor --fix` to remove superseded pytest-stacks node images, "
            f"untagged images and the build cache")


@dataclass(frozen=True)
class Image:
    id: str
    tags: tuple[str, ...]
    created: int  # seconds since the epoch
    size: int
    containers: int  # -1: the engine did not say


def superseded(images: Iterable[Image], repositories: Sequence[str] = NODE_REPOSITORIES,
               keep: int = KEEP_NODE_IMAGES) -> list[Image]:
    """Per repository, the images of ours beyond the ``keep`` newest (none a container uses)."""
    out: list[Image] = []
    for repository in repositories:
        mine = [i for i in images if i.tags and
                all(t.rsplit(":", 1)[0] == repository for t in i.tags)]
        mine.sort(key=lambda i: i.created, reverse=True)
        out.extend(i for i in mine[keep:] if i.containers <= 0)
    return out


def _images() -> list[Image]:
    """The engine's images with their sizes and users, one call (``docker system df``)."""
    listed: list[dict[str, Any]] = dockerutil.client().df().get("Images") or []
    return [Image(str(i["Id"]), tuple(t for t in i.get("RepoTags") or [] if t != "<none>:<none>"),
                  int(i.get("Created") or 0),
                  int(i.get("Size") or 0) - max(int(i.get("SharedSize") or 0), 0),
                  int(i.get("Containers", -1))) for i in listed]


def prune_node_images(keep: int = KEEP_NODE_IMAGES) -> list[str]:
    """Remove the node images beyond the ``keep`` newest per repository; what was removed.
    An image a container uses meanwhile is refused by the engine and stays."""
    removed = []
    for image in superseded(_images(), keep=keep):
        try:
            dockerutil.client().images.remove(image.id)
        except Exception:
            continue
        removed.append(", ".join(image.tags))
    return removed


def reclaim(echo: Callable[[str], None] = print) -> float:
    """Give back what is ours to give, in order of what costs least to make again: the build
    cache, images no name points at (and no container uses), superseded node images. The GiB
    freed, as the engine counts them."""
    api = dockerutil.client()
    freed = 0
    for what, prune in (("the build cache", api.api.prune_builds),
                        ("untagged images", lambda: api.images.prune(filters={"dangling": True}))):
        try:  # one refusal (an engine without the endpoint) leaves the others to do
            freed += int((prune() or {}).get("SpaceReclaimed") or 0)
        except Exception as exc:
            echo(f"  could not remove {what}: {exc}")
    before = {i.id: i.size for i in _images()}
    removed = prune_node_images()
    after = {i.id for i in _images()}
    freed += sum(size for id_, size in before.items() if id_ not in after)
    for tags in removed:
        echo(f"  removed superseded node image {tags}")
    echo(f"  gave back {freed / GIB:.1f} GiB (build cache, untagged images, "
         f"{len(removed)} superseded node image(s))")
    return freed / GIB
