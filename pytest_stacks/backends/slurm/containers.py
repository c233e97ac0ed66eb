"""Container jobs on Slurm: ``sbatch --container`` where the cluster runs OCI containers,
else a refusal at submit.

Slurm runs a job in a container from 21.08 on, and only where ``oci.conf`` (beside
``slurm.conf``) names an OCI runtime (runc, crun) and how to call it; the job then names an OCI
*bundle* (an unpacked image with its ``config.json``) on the nodes, not an image reference.
Without ``oci.conf`` a 21.08+ sbatch still accepts ``--container`` and the job fails only on
the node, so the driver looks for the file before it submits. Before 21.08 sbatch has no such
option and refuses it itself, which the driver leaves to it: that refusal is the version's own.
"""

from __future__ import annotations

import re

OCI_SINCE = (21, 8)
DEFAULT_CONF = "/etc/slurm/slurm.conf"


def oci_conf_path(show_config: str) -> str:
    """Where ``oci.conf`` must be: beside the ``SLURM_CONF`` that ``scontrol show config``
    reports (Slurm's default when it reports none)."""
    found = re.search(r"^SLURM_CONF\s*=\s*(\S+)", show_config, re.MULTILINE)
    conf = found.group(1) if found else DEFAULT_CONF
    return f"{conf.rsplit('/', 1)[0] or ''}/oci.conf"


def container_option(image: str, version: str, oci_conf: str, configured: bool) -> list[str]:
    """``--container=BUNDLE`` for a 21.08+ cluster with ``oci.conf``; ValueError with the
    reason where Slurm cannot run ``image`` in a container here."""
    if not configured:
        raise ValueError(
            f"refused at submit: Slurm {version} runs a job in a container only where "
            f"oci.conf configures an OCI runtime, and this cluster has none ({oci_conf} is "
            f"absent); container {image!r} would not run")
    if not image.startswith("/"):
        raise ValueError(
            f"refused at submit: Slurm runs OCI bundles (sbatch --container=<bundle "
            f"directory on the nodes>), not image references: unpack {image!r} into a bundle "
            "on the nodes and name its path")
    return [f"--container={image}"]
