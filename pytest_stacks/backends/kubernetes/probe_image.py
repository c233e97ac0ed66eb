"""The container probe image: what a job asks to run in when a test checks that the backend
really runs the payload in the requested image (capability ``container``).

Built here (``stacks/container-probe``: a static BusyBox from Debian on an empty root, with an
os-release and a marker file of its own), named by a stack's ``options.container_probe``, and
handed to the stack's nodes with its other images; nothing comes from a registry.
"""

from __future__ import annotations

from pathlib import Path

from pytest_stacks import dockerutil
from pytest_stacks.manifest import Stack

PROBE_FOLDER = "container-probe"  # a sibling of the stack's compose folder
OPTION = "container_probe"


def probe_reference(stack: Stack) -> str:
    """The probe's image reference, or "" where the stack runs no container jobs."""
    return str(stack.options.get(OPTION) or "")


def probe_folder(stack: Stack) -> Path:
    assert stack.compose is not None
    return stack.compose.directory.parent / PROBE_FOLDER


def ensure_probe_image(stack: Stack, base: str, *, timeout: float) -> str:
    """Build the probe under the stack's reference unless it is built from the same inputs;
    return the reference ("" where the stack names none)."""
    reference = probe_reference(stack)
    if reference:
        dockerutil.ensure_built_image(reference, probe_folder(stack), {}, base, timeout=timeout)
    return reference
