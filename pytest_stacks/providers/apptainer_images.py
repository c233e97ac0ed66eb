"""The Apptainer side of a compose HTCondor stack whose execute nodes run container-universe
jobs (``options.container_runtime: apptainer``): the runtime goes into the node's image (a
build arg), and every image the stack names is unpacked into a sandbox folder on the node at
bring-up, the way a site's admin keeps the images its users may ask for where no registry is
reached (``apptainer build --sandbox`` there; the engine's own export here, since the images
are built on this host).

Apptainer runs as the job's user in a user namespace of its own (no setuid helper), so the
node needs what :mod:`.oci_bundles` gives Slurm's rootless runtime from the kernel:
unprivileged user namespaces, said by the preflight before anything is built.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_stacks.backends.htcondor import containers
from pytest_stacks.backends.kubernetes import extra_images
from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import Stack
from pytest_stacks.providers.oci_bundles import on_node, rootfs_of

#: The image's build arg that installs the runtime and its HTCondor configuration.
BUILD_ARG = "CONTAINER_RUNTIME"


def build_args(stack: Stack) -> dict[str, str]:
    """What the node's image build needs ({} without a runtime)."""
    runtime = containers.runtime_of(stack)
    return {BUILD_ARG: runtime} if runtime else {}


def ensure_images(stack: Stack, base: str, timeout: float) -> None:
    """Build the images the stack's nodes keep unpacked (cached by their inputs)."""
    if containers.runtime_of(stack):
        extra_images.ensure_extra_images(stack, base, timeout=timeout)


def install(stack: Stack, node: Any, labels: Mapping[str, str], timeout: float) -> None:
    """Unpack every image the stack names into its sandbox folder on ``node`` (a docker SDK
    container), readable by every job's user; StacksError says which and why. ``labels`` mark
    the never-started container an image is exported from, for a dead run's reaper."""
    for image, path in containers.stack_sandboxes(stack).items():
        rootfs = rootfs_of(image, labels, timeout)
        try:
            on_node(node, ["mkdir", "-p", path])
            if not node.put_archive(path, rootfs):
                raise StacksError("the engine refused the copy")
            # The runtime's own mount points, which a plain image's root may lack.
            on_node(node, ["sh", "-c", f"cd {path} && mkdir -p proc sys dev tmp "
                                       "&& chmod 1777 tmp && chmod -R a+rX ."])
        except Exception as exc:  # the engine's own errors too: said as the stack's
            raise StacksError(f"cannot unpack image {image} into the sandbox {path} on stack "
                              f"{stack.name}: {exc}") from None
