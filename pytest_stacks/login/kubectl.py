"""``kubectl`` for a Kubernetes stack: the one built from ``k8s.io/kubernetes`` at the stack's
own Kubernetes version (the same cached build as its control plane, so nothing is compiled
twice), with the run's kubeconfig. kubectl talks to the API server itself: no login host and
no forwarding, only a bin folder and ``KUBECONFIG``."""

from __future__ import annotations

import shlex
from collections.abc import Mapping
from pathlib import Path

from pytest_stacks import gobuild
from pytest_stacks.backends.kubernetes.adapter import control_plane_builds
from pytest_stacks.login.route import NoCommands
from pytest_stacks.manifest import Stack

KUBECONFIG = "kubeconfig"


def binary(stack: Stack, timeout: float) -> Path:
    """The stack's pinned kubectl, built from its module on first use (cached by version)."""
    if stack.provider != "compose":
        raise NoCommands(f"stack {stack.name} ({stack.provider}): kubectl is put on PATH only "
                          f"for the compose Kubernetes stacks, whose Kubernetes version is "
                          f"pinned here")
    return gobuild.ensure_built(control_plane_builds(stack)["kubernetes"],
                                timeout=timeout) / "bin" / "kubectl"


def write(stack: Stack, endpoints: Mapping[str, str], bin_folder: Path,
          kubectl: Path) -> dict[str, str]:
    """``bin_folder/kubectl`` (the pinned binary, on the stack's context); the environment it
    needs (``KUBECONFIG``)."""
    if KUBECONFIG not in endpoints:
        raise NoCommands(f"stack {stack.name} records no kubeconfig: there is no API server "
                          f"for kubectl to reach (an in-process fake has none: its own kubectl "
                          f"goes through its relay, see commands.open_commands)")
    wrapper = bin_folder / "kubectl"
    context = endpoints.get("context")
    extra = f" --context {shlex.quote(context)}" if context else ""
    wrapper.write_text(f"#!/bin/sh\n# pytest-stacks: kubectl {stack.name} pinned\n"
                       f"exec {shlex.quote(str(kubectl))}{extra} \"$@\"\n")
    wrapper.chmod(0o755)
    return {"KUBECONFIG": endpoints[KUBECONFIG]}
