"""What can refuse a bring-up in seconds, asked before anything that takes minutes.

A stack that cannot come up on this host (no engine, an upstream image with no registry to pull
it from, no Go toolchain for its pinned programs, no way to make its Debian base) must say so at
once. Asked after a Go build or an image build, the same refusal costs a new machine tens of
minutes first. Each check raises :class:`~pytest_stacks.errors.StacksError` naming the fix;
none of them builds, pulls or seeds anything.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

from pytest_stacks import dockerutil, gobuild
from pytest_stacks.errors import InfrastructureError, StacksError
from pytest_stacks.manifest import BaseImage, Stack
from pytest_stacks.providers import disk, images


def refusing(stack: str, checks: Callable[[], None]) -> None:
    """A provider's preflight as a bring-up asks it: a refusal is the stack's infrastructure
    error, marked as having started nothing (so the run's teardown has nothing of it to
    sweep, and does not ask an engine that is not there)."""
    try:
        checks()
    except StacksError as exc:
        raise InfrastructureError(stack, str(exc), started=False) from None


def engine(stack: Stack | None = None) -> None:
    """A Docker engine answers (EngineUnavailable with the fix otherwise); with ``stack``, its
    disk has room for what a bring-up of that stack writes (a disk that fills half-way fails
    as "no space left on device" in whatever step was writing, naming no cause)."""
    dockerutil.client()
    problem = disk.shortfall([stack]) if stack is not None else ""
    if problem:
        raise StacksError(problem)


def compose() -> None:
    """The Compose v2 plugin answers ``docker compose version``."""
    done = dockerutil.run_cli(["compose", "version", "--short"], timeout=30)
    if done.returncode != 0:
        raise StacksError(f"`docker compose` is not available ({done.stderr.strip()[-200:]}); "
                          f"`pytest-stacks doctor --fix` installs the Compose v2 plugin")


def image_obtainable(reference: str) -> None:
    """An upstream image is here, or a registry answers to pull it from."""
    if dockerutil.image_exists(reference) or images.registry_reachable():
        return
    raise images.ImageError(
        f"image {reference} is not available locally and no registry is reachable from this "
        f"host ({images.registry_host()}:443 does not answer). Run this stack where a registry is "
        f"reachable (a developer machine or a GitHub-hosted runner), or `docker load` the image "
        f"first.")


def base_obtainable(base: BaseImage) -> None:
    """A Debian base image is here, can be pulled, or can be seeded with debootstrap as root."""
    if dockerutil.image_exists(base.registry_reference) or \
            dockerutil.image_exists(base.seeded_reference) or images.registry_reachable():
        return
    debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
    if not Path(debootstrap).exists():
        raise images.ImageError(
            f"base image {base.registry_reference} is not here, no registry is reachable, and "
            f"debootstrap is not installed to seed {base.seeded_reference}: apt-get install "
            f"debootstrap (or `pytest-stacks doctor --fix`)")
    if os.geteuid() != 0:
        raise images.ImageError(
            f"base image {base.registry_reference} is not here and no registry is reachable; "
            f"seeding it needs root: run `sudo pytest-stacks seed {base.seed}` once")


#: Where a kernel says whether an unprivileged user may make a user namespace: the knob, the
#: value that refuses it, the value that allows it. The upstream limit, Debian's switch, and
#: Ubuntu's AppArmor restriction (which holds for a container whose profile is unconfined too).
USERNS_KNOBS = (("user.max_user_namespaces", "0", "15000"),
                ("kernel.unprivileged_userns_clone", "0", "1"),
                ("kernel.apparmor_restrict_unprivileged_userns", "1", "0"))


def user_namespaces(stack_name: str, sysctl: Path = Path("/proc/sys")) -> None:
    """A rootless OCI runtime (Slurm's container jobs) needs unprivileged user namespaces from
    the kernel the engine runs on; a kernel that refuses them would fail every container job on
    the node long after bring-up, as if the product had failed. Asked only of a local engine
    (a remote one's kernel is not this one's)."""
    if os.environ.get("DOCKER_HOST", "unix://").split("://", 1)[0] != "unix":
        return
    refused = []
    for knob, refusing, allowing in USERNS_KNOBS:
        try:
            value = (sysctl / knob.replace(".", "/")).read_text().strip()
        except OSError:
            continue  # not this kernel's knob
        if value == refusing:
            refused.append((f"{knob} = {value}", f"sysctl -w {knob}={allowing}"))
    if refused:
        raise StacksError(
            f"stack {stack_name} runs container jobs with a rootless runtime "
            f"(options.oci_runtime or container_runtime), which needs unprivileged user "
            f"namespaces, and this host's kernel refuses them "
            f"({', '.join(r for r, _ in refused)}). Fix, as root: "
            f"{'; '.join(f for _, f in refused)}; or run a stack without `container`")


def go_toolchain() -> None:
    """The Go toolchain that builds a stack's pinned programs is installed."""
    gobuild.go_binary()

