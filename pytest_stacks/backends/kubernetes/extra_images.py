"""The images a real stack's pods run besides the MPI worker, built here from the stack's
sibling folders and handed to its nodes with the worker image; nothing comes from a registry:

- ``options.container_probe`` (``stacks/container-probe``): what a job asks to run in when a
  test checks that the backend really runs the payload in the requested image (capability
  ``container``): a static BusyBox on an empty root, with an os-release and a marker file of
  its own;
- ``options.stager`` (``stacks/stager``): the image of a job's staging containers (capabilities
  ``inputs.remote``, ``outputs.remote``): Debian's curl, which downloads a job's remote inputs
  before its payload and uploads its remote outputs after it, on the node.
"""

from __future__ import annotations

from pathlib import Path

from pytest_stacks import dockerutil
from pytest_stacks.manifest import Stack

#: The stack option naming each image, and the folder (a sibling of the stack's compose
#: folder) it is built from; the folder's name is also the image's tar on a node.
FOLDERS = {"container_probe": "container-probe", "stager": "stager"}


def references(stack: Stack) -> dict[str, str]:
    """The images the stack names, by folder ({} where it names none)."""
    return {folder: str(stack.options[option]) for option, folder in FOLDERS.items()
            if stack.options.get(option)}


def folder_of(stack: Stack, folder: str) -> Path:
    assert stack.compose is not None
    return stack.compose.directory.parent / folder


def ensure_extra_images(stack: Stack, base: str, *, timeout: float) -> dict[str, str]:
    """Build each image the stack names under its reference unless it is built from the same
    inputs; the references, by folder."""
    named = references(stack)
    for folder, reference in named.items():
        dockerutil.ensure_built_image(reference, folder_of(stack, folder), {}, base,
                                      timeout=timeout)
    return named
