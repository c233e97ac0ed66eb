"""Images without a registry: the base image (pull by digest, or seed with debootstrap) and
content-addressed stack image tags so an unchanged stack is never rebuilt."""

from __future__ import annotations

import os
import re
import shutil
import socket
import subprocess
import tempfile
from functools import cache
from pathlib import Path

from pytest_stacks import cancellation, dockerutil, progress
from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import BaseImage

MIRROR_ENV = "PYTEST_STACKS_DEBIAN_MIRROR"
REGISTRY_ENV = "PYTEST_STACKS_REGISTRY_HOST"
DEFAULT_MIRROR = "http://deb.debian.org/debian"
DEFAULT_REGISTRY = "registry-1.docker.io"
#: What debootstrap takes as its mirror (an http(s) URL: never an option such as "--foo"),
#: and a registry host name with an optional port, as Docker names one.
_MIRROR = re.compile(r"^https?://[A-Za-z0-9.-]+(:[0-9]{1,5})?(/[A-Za-z0-9._~%/+-]*)?$")
_HOST = re.compile(r"^(?=.{1,253}$)[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?"
                   r"(\.[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?)*$")


class ImageError(StacksError):
    pass


def _shown(value: str) -> str:
    return repr(value) if len(value) <= 60 else f"{value[:60]!r}... ({len(value)} chars)"


def debian_mirror() -> str:
    """The Debian mirror seeds are made from (``PYTEST_STACKS_DEBIAN_MIRROR``), checked where
    it enters: StacksError naming the variable otherwise."""
    value = os.environ.get(MIRROR_ENV) or DEFAULT_MIRROR
    if not _MIRROR.fullmatch(value):
        raise StacksError(f"environment variable {MIRROR_ENV}={_shown(value)}: not a Debian "
                          f"mirror URL. Set it to an http:// or https:// URL such as "
                          f"{DEFAULT_MIRROR}, or unset it")
    return value


def registry_host() -> str:
    """The registry whose reachability decides pulls (``PYTEST_STACKS_REGISTRY_HOST``),
    checked where it enters: StacksError naming the variable otherwise."""
    value = os.environ.get(REGISTRY_ENV) or DEFAULT_REGISTRY
    if not _HOST.fullmatch(value):
        raise StacksError(f"environment variable {REGISTRY_ENV}={_shown(value)}: not a host "
                          f"name. Set it to the registry's host name such as "
                          f"{DEFAULT_REGISTRY} (its port is 443), or unset it")
    return value


@cache
def registry_reachable(timeout: float = 5.0) -> bool:
    """Whether the registry accepts a TCP connection, decided in seconds, never by a hang."""
    try:
        with socket.create_connection((registry_host(), 443), timeout=timeout):
            return True
    except OSError:
        return False


def ensure_image(reference: str, *, refresh: bool = False, pull_timeout: float = 1800) -> None:
    """Make an upstream image available, or say at once why it cannot be.

    ``refresh`` (a floating canary tag) pulls again even when a copy is present, so the canary
    sees what upstream publishes today, not what was pulled last week.
    """
    if dockerutil.image_exists(reference) and not (refresh and registry_reachable()):
        return
    if not registry_reachable():
        raise ImageError(
            f"image {reference} is not available locally and no registry is reachable from "
            f"this host ({registry_host()}:443 does not answer). Run this stack where a registry "
            f"is reachable (a developer machine or a GitHub-hosted runner), or `docker load` "
            f"the image first.")
    pulled = dockerutil.run_cli(["pull", "-q", reference], timeout=pull_timeout)
    if pulled.returncode != 0:
        raise ImageError(f"image {reference} cannot be pulled: {pulled.stderr.strip()[-500:]}")


def ensure_base_image(base: BaseImage) -> str:
    """The reference to build FROM: the pinned registry image where possible, else the seed."""
    pinned = base.registry_reference  # name:tag@digest (or name:tag without a digest)
    if dockerutil.image_exists(pinned):
        return pinned
    if registry_reachable():
        pulled = dockerutil.run_cli(["pull", "-q", pinned], timeout=600)
        if pulled.returncode == 0:
            return pinned
        if base.digest:
            # The registry answers but refuses the pin: a stale or wrong digest must be fixed,
            # not silently replaced by an unpinned local seed.
            raise ImageError(f"cannot pull the pinned base image {pinned}: "
                             f"{pulled.stderr.strip()[-500:]}")
    seeded = base.seeded_reference
    if dockerutil.image_exists(seeded):
        return seeded
    seed_debian(base.seed)
    return seeded


def seed_debian(suite: str) -> str:
    """debootstrap ``suite`` (minbase) and import it as pytest-stacks/debian-base:SUITE."""
    reference = f"pytest-stacks/debian-base:{suite}"
    lock = Path(tempfile.gettempdir()) / f"pytest-stacks-seed-{suite}.lock"
    with progress.step(f"debootstrap {suite}"), cancellation.file_lock(str(lock)):
        if dockerutil.image_exists(reference):
            return reference
        debootstrap = shutil.which("debootstrap") or "/usr/sbin/debootstrap"
        if not Path(debootstrap).exists():
            raise ImageError(
                f"cannot seed {reference}: debootstrap is not installed (apt-get install "
                f"debootstrap, or `pytest-stacks doctor --fix`)")
        if os.geteuid() != 0:
            raise ImageError(f"cannot seed {reference}: debootstrap needs root; run "
                             f"`sudo pytest-stacks seed {suite}`")
        with tempfile.TemporaryDirectory(prefix=f"pytest-stacks-{suite}-") as root:
            target = Path(root) / "rootfs"
            try:
                result = subprocess.run(
                    [debootstrap, "--variant=minbase", suite, str(target), debian_mirror()],
                    capture_output=True, text=True, check=False, timeout=1200)
            except subprocess.TimeoutExpired:
                raise ImageError(f"debootstrap {suite} did not finish in 20 minutes") from None
            if result.returncode != 0:
                tail = "\n".join((result.stdout + result.stderr).splitlines()[-15:])
                raise ImageError(f"debootstrap {suite} failed:\n{tail}")
            _import_rootfs(target, reference)
    return reference


def _import_rootfs(rootfs: Path, reference: str, timeout: float = 900) -> None:
    """``tar -C rootfs -c . | docker import - reference``, bounded, with no stray process."""
    tar = subprocess.Popen(["tar", "-C", str(rootfs), "-c", "."], stdout=subprocess.PIPE)
    try:
        imported = subprocess.Popen([dockerutil.docker_cli(), "import", "-", reference],
                                    stdin=tar.stdout, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
        assert tar.stdout is not None
        tar.stdout.close()  # only `docker import` reads it; tar sees EPIPE if import dies
        _, err = imported.communicate(timeout=timeout)
        tar.wait(timeout=60)
    except subprocess.TimeoutExpired:
        raise ImageError(f"docker import of {reference} did not finish in {timeout:.0f}s") \
            from None
    finally:
        for process in (tar, locals().get("imported")):
            if process is not None and process.poll() is None:
                process.kill()
                process.wait()
    if imported.returncode != 0 or tar.returncode != 0:
        raise ImageError(f"docker import of {reference} failed: {err.strip()}")
