"""Container jobs on Slurm: ``sbatch --container`` where the cluster runs OCI containers,
else a refusal at submit.

Slurm runs a job in a container from 21.08 on, and only where ``oci.conf`` (beside
``slurm.conf``) names an OCI runtime (runc, crun) and how to call it; the job then names an OCI
*bundle* (an unpacked image with its ``config.json``) on the nodes, not an image reference.
A cluster that keeps bundles for images (ours: :data:`BUNDLES`, one per image the stack names)
runs a job that names such an image in its bundle; an image it has no bundle for is refused,
as is any image where no ``oci.conf`` exists: a 21.08+ sbatch accepts ``--container`` there and
the job fails only on the node. Before 21.08 sbatch has no such option and refuses it itself,
which the driver leaves to it: that refusal is the version's own.

What Slurm does with the bundle decides how the job's script must look: slurmstepd rewrites
its ``config.json`` to run the batch script inside (through the image's ``/bin/sh``, not the
node's bash) and starts it in the bundle's working directory, not ``--chdir``; the script
changes into the job's directory itself (:func:`preamble`), which the bundle binds from the
node.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Mapping

from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import Stack

OCI_SINCE = (21, 8)
DEFAULT_CONF = "/etc/slurm/slurm.conf"
#: Where a stack keeps the bundle of each image it names (``<BUNDLES>/<folder>``: its
#: ``config.json`` and ``rootfs``), unpacked at bring-up on every node.
BUNDLES = "/srv/oci/bundles"
#: The stack option that gives a compose stack's nodes an OCI runtime, and the runtimes the
#: image knows how to install and configure.
OPTION = "oci_runtime"
RUNTIMES = ("crun",)
#: The stack options naming an image a job may ask for, and the folder (a sibling of the
#: stack's compose folder) it is built from: the bundle's name too.
IMAGE_OPTIONS = {"container_probe": "container-probe"}


def runtime_of(stack: Stack) -> str:
    """The stack's OCI runtime ("" for none); StacksError names the field and the fix."""
    runtime = stack.options.get(OPTION)
    if runtime is None:
        return ""
    if runtime not in RUNTIMES:
        raise StacksError(f"manifest: stack {stack.name}: options.{OPTION} must be one of "
                          f"{', '.join(RUNTIMES)} (or absent), got {runtime!r}")
    if stack.compose is None:
        raise StacksError(f"manifest: stack {stack.name}: options.{OPTION} needs a compose "
                          "stack (the runtime is installed into its image)")
    return str(runtime)


def stack_bundles(stack: Stack) -> dict[str, str]:
    """The bundle the stack's nodes keep for each image it names, by image ({} without a
    runtime: no bundle is made, and every container job is refused)."""
    if not runtime_of(stack):
        return {}
    return {str(stack.options[option]): f"{BUNDLES}/{folder}"
            for option, folder in IMAGE_OPTIONS.items() if stack.options.get(option)}


def oci_conf_path(show_config: str) -> str:
    """Where ``oci.conf`` must be: beside the ``SLURM_CONF`` that ``scontrol show config``
    reports (Slurm's default when it reports none)."""
    found = re.search(r"^SLURM_CONF\s*=\s*(\S+)", show_config, re.MULTILINE)
    conf = found.group(1) if found else DEFAULT_CONF
    return f"{conf.rsplit('/', 1)[0] or ''}/oci.conf"


def container_option(image: str, version: str, oci_conf: str, configured: bool,
                     bundles: Mapping[str, str] | None = None) -> list[str]:
    """``--container=BUNDLE`` for a 21.08+ cluster with ``oci.conf``: the bundle the cluster
    keeps for ``image``, or ``image`` itself where it is already a bundle's path. ValueError
    with the reason where Slurm cannot run ``image`` in a container here."""
    if not configured:
        raise ValueError(
            f"refused at submit: Slurm {version} runs a job in a container only where "
            f"oci.conf configures an OCI runtime, and this cluster has none ({oci_conf} is "
            f"absent); container {image!r} would not run")
    kept = dict(bundles or {})
    if image in kept:
        return [f"--container={kept[image]}"]
    if not image.startswith("/"):
        have = ", ".join(sorted(kept)) or "none"
        raise ValueError(
            f"refused at submit: Slurm runs OCI bundles (sbatch --container=<bundle "
            f"directory on the nodes>), not image references, and this cluster keeps no "
            f"bundle for container {image!r} (it has bundles for: {have}): unpack the image "
            "into a bundle on the nodes and name its path")
    return [f"--container={image}"]


def preamble(workdir: str) -> str:
    """The first lines of a container job's script: the image's shell (the node's bash is
    not in the image), then the job's directory (slurmstepd starts the bundle in its own
    working directory, not in ``--chdir``)."""
    return f"#!/bin/sh\ncd {shlex.quote(workdir)} || exit 1\n"
