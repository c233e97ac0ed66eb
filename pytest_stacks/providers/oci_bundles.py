"""The OCI side of a compose stack whose nodes run container jobs (``options.oci_runtime``):
the runtime goes into the node's image (a build arg), the node gets the few kernel
permissions a rootless runtime needs, and every image the stack names is unpacked into a
bundle on the node at bring-up, the way a site's admin unpacks the images its users may ask
for (``skopeo``/``umoci`` there; the engine's own export here, since the images are built on
this host and no registry serves them).

Why the permissions: slurmstepd starts the runtime as the job's user, which makes a user
namespace and mounts ``/proc`` inside it. Docker's default seccomp profile refuses the
first, AppArmor's default profile and the engine's masked ``/proc`` paths the second, so a
node that runs containers has all three unconfined (and nothing more: no ``--privileged``,
no added capability).
"""

from __future__ import annotations

import io
import tarfile
import time
from collections.abc import Mapping
from typing import Any

from pytest_stacks import dockerutil
from pytest_stacks.backends.kubernetes import extra_images
from pytest_stacks.backends.slurm import containers
from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import Stack

SECURITY = ["seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"]
TEMPLATE = "oci-bundle.json"  # in the stack's compose folder: the bundle's config.json
#: Directories every bundle's root needs besides the image's own, and their modes: the
#: runtime's mounts (proc, dev, sys, tmp), the job area the template binds, the spool folders
#: slurmstepd mounts in. A rootless runtime cannot create them in a root-owned rootfs, nor a
#: step's own folder below them (26.05 mounts ``<SlurmdSpoolDir>/oci-job<id>-batch`` at its
#: node path; 24.11 the step's folder at ``/var/run/slurm``): those are open to everyone.
MOUNT_POINTS = {"proc": 0o755, "dev": 0o755, "sys": 0o755, "tmp": 0o1777, "work/jobs": 0o755,
                "var/lib/slurm/slurmd": 0o1777, "var/run/slurm": 0o1777}


def build_args(stack: Stack) -> dict[str, str]:
    """What the node's image build needs ({} without a runtime)."""
    runtime = containers.runtime_of(stack)
    return {"OCI_RUNTIME": runtime} if runtime else {}


def ensure_images(stack: Stack, base: str, timeout: float) -> None:
    """Build the images the stack's nodes unpack into bundles (cached by their inputs)."""
    if containers.runtime_of(stack):
        extra_images.ensure_extra_images(stack, base, timeout=timeout)


def override(stack: Stack) -> dict[str, Any]:
    """The compose override's part: the node service's security options ({} without a
    runtime)."""
    if not containers.runtime_of(stack):
        return {}
    assert stack.compose is not None
    return {"services": {stack.compose.service: {"security_opt": list(SECURITY)}}}


def install(stack: Stack, node: Any, labels: Mapping[str, str], timeout: float) -> None:
    """Unpack every image the stack names into its bundle on ``node`` (a docker SDK
    container); StacksError says which and why. Nothing without a runtime. ``labels`` mark
    the never-started container an image is exported from, for the reaper of a run that
    dies in between."""
    bundles = containers.stack_bundles(stack)
    if not bundles:
        return
    assert stack.compose is not None
    template = stack.compose.directory / TEMPLATE
    if not template.is_file():
        raise StacksError(f"stack {stack.name}: options.{containers.OPTION} needs the "
                          f"bundles' config.json at {template}")
    config = template.read_bytes()
    for image, path in bundles.items():
        rootfs = rootfs_of(image, labels, timeout)
        try:
            on_node(node, ["mkdir", "-p", f"{path}/rootfs"])
            if not (node.put_archive(f"{path}/rootfs", rootfs)
                    and node.put_archive(path, _bundle_files(config))):
                raise StacksError("the engine refused the copy")
            on_node(node, ["chmod", "-R", "a+rX", path])  # the job's user reads it
        except Exception as exc:  # the engine's own errors too: said as the stack's
            raise StacksError(f"cannot unpack image {image} into the bundle {path} on stack "
                              f"{stack.name}: {exc}") from None


def on_node(node: Any, argv: list[str]) -> None:
    done = node.exec_run(argv, user="root")
    if done.exit_code != 0:
        raise StacksError(f"{' '.join(argv)}: {done.output.decode(errors='replace')[-500:]}")


def rootfs_of(image: str, labels: Mapping[str, str], timeout: float) -> bytes:
    """The image's file system as a tar (the engine's export of a container never started)."""
    api = dockerutil.client()
    try:
        holder = api.containers.create(image, command=["true"], network_disabled=True,
                                       labels=dict(labels))
    except Exception as exc:
        raise StacksError(f"cannot unpack image {image} (is it built?): {exc}") from None
    try:
        started = time.monotonic()
        chunks = []
        for chunk in holder.export():
            chunks.append(chunk)
            if time.monotonic() - started > timeout:
                raise StacksError(f"exporting image {image} took over {timeout:.0f}s")
        return b"".join(chunks)
    finally:
        holder.remove(force=True)


def _bundle_files(config: bytes) -> bytes:
    """A tar of the bundle's ``config.json`` and the mount points its root needs."""
    buffer = io.BytesIO()
    now = int(time.time())
    with tarfile.open(fileobj=buffer, mode="w") as tar:
        info = tarfile.TarInfo("config.json")
        info.size, info.mode, info.mtime = len(config), 0o644, now
        tar.addfile(info, io.BytesIO(config))
        made: set[str] = set()
        for point, mode in MOUNT_POINTS.items():
            parts = point.split("/")
            for depth in range(1, len(parts) + 1):
                name = "rootfs/" + "/".join(parts[:depth])
                if name in made:
                    continue
                made.add(name)
                folder = tarfile.TarInfo(name)
                folder.type, folder.mtime = tarfile.DIRTYPE, now
                folder.mode = mode if depth == len(parts) else 0o755
                tar.addfile(folder)
    return buffer.getvalue()

