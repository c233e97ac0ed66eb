"""The compose files of a stack's project: its own ``compose.yaml`` and the override this run
writes beside it, which labels everything the project creates (services, networks, volumes)
with the run, the stack and the owner, and adds what the stack's options ask of its services
(the object store, a container runtime's permissions, each node's own job area where the
stack has no shared file system, the run's shared folder)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from pytest_stacks.manifest import Stack
from pytest_stacks.providers import object_store, rest_access, shared_folder, unshared_fs
from pytest_stacks.providers import oci_bundles as oci
from pytest_stacks.providers.base import RunContext


def compose_file(stack: Stack) -> Path:
    assert stack.compose is not None
    return stack.compose.directory / "compose.yaml"


def override(stack: Stack, ctx: RunContext, run_dir: Path) -> Path:
    """A second compose file that labels everything the project creates."""
    source = yaml.safe_load(compose_file(stack).read_text()) or {}
    labels = ctx.labels(stack.name)
    doc: dict[str, Any] = {
        "services": {name: {"labels": labels} for name in source.get("services", {})},
        "networks": {"default": {"labels": labels}},
    }
    for name in (source.get("networks") or {}):
        doc["networks"][name] = {"labels": labels}
    if source.get("volumes"):
        doc["volumes"] = {name: {"labels": labels} for name in source["volumes"]}
    for part in (object_store.override(stack, labels, list(source.get("services", {}))),
                 oci.override(stack),
                 rest_access.override(stack),
                 unshared_fs.override(stack, source, labels),
                 shared_folder.override(stack, run_dir, list(source.get("services", {})))):
        for name, service in part.get("services", {}).items():
            into = doc["services"].setdefault(name, {})
            mounts = into.get("volumes", []) + service.get("volumes", [])
            into.update(service)
            if mounts:
                into["volumes"] = mounts
        doc.setdefault("volumes", {}).update(part.get("volumes", {}))
    path = run_dir / f"{stack.name}.compose.override.yaml"
    path.write_text(yaml.safe_dump(doc, sort_keys=True))
    return path
