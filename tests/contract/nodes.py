"""The nodes of a stack, read from Docker: where a contract test looks for what the backend
did on its nodes (its processes, its files), never at what the client remembers."""

from __future__ import annotations

import subprocess
from typing import Any

from pytest_stacks.manifest import Stack


def node_containers(stack: Stack, info: dict[str, Any]) -> list[str]:
    """The running containers of the stack: its kind nodes, or its compose project's."""
    label = (f"io.x-k8s.kind.cluster={info['project']}" if stack.provider == "kind"
             else f"com.docker.compose.project={info['project']}")
    ids = subprocess.run(["docker", "ps", "-q", "--filter", f"label={label}"],
                         capture_output=True, text=True, check=True, timeout=30).stdout.split()
    assert ids, f"no running container of stack {stack.name} ({label})"
    return ids


def on_node(container: str, script: str) -> subprocess.CompletedProcess[str]:
    """``sh -c script`` in a node's container, as the node sees it."""
    return subprocess.run(["docker", "exec", container, "sh", "-c", script],
                          capture_output=True, text=True, timeout=60)
