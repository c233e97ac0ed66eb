"""Small helpers around the Docker engine shared by the provider, the reaper and doctor."""

from __future__ import annotations

import hashlib
import shutil
import subprocess
import tempfile
import threading
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

from pytest_stacks import cancellation, progress
from pytest_stacks.errors import StacksError


class EngineUnavailable(StacksError):
    """No Docker engine answers; the message says how to get one."""


class ImageBuildError(StacksError):
    """An image built here failed to build; the message holds the build's last lines."""


ENGINE_FIX = ("start one: on Debian as root run `pytest-stacks doctor --fix` (installs docker.io "
              "and starts dockerd), or start Docker Desktop / `systemctl start docker`")


_CLIENT: Any = None
_CLIENT_LOCK = threading.Lock()


def client() -> Any:
    """The process's docker SDK client, or EngineUnavailable with the fix. Shared by the
    bring-up threads: it only lists, inspects and copies (plain requests on a thread-safe
    connection pool); commands run through the CLI
    (:mod:`~pytest_stacks.transports.docker_exec`)."""
    global _CLIENT
    with _CLIENT_LOCK:
        if _CLIENT is not None:
            return _CLIENT
        try:
            import docker

            api = docker.from_env(timeout=120)
            # No proxy or netrc lookup per request: the engine is a local socket, and the
            # lookup walks os.environ, which pytest changes between test phases while a
            # bring-up or teardown thread is in a request (a KeyError for nothing).
            api.api.trust_env = False
            api.ping()
        except Exception as exc:
            raise EngineUnavailable(f"no Docker engine is reachable ({exc}); {ENGINE_FIX}") \
                from None
        _CLIENT = api
        return api


def docker_cli() -> str:
    path = shutil.which("docker")
    if path is None:
        raise EngineUnavailable("the `docker` command is not installed; install the Docker CLI "
                                "(`pytest-stacks doctor --fix` does it on Debian)")
    return path


def run_cli(args: Sequence[str], *, env: Mapping[str, str] | None = None, timeout: float = 600,
            cwd: str | None = None, input_bytes: bytes | None = None
            ) -> subprocess.CompletedProcess[str]:
    """Run ``docker ARGS`` capturing text output; never raises for a non-zero exit (a timeout
    is exit 124). Raises :class:`~pytest_stacks.cancellation.Cancelled` if the run is
    interrupted meanwhile."""
    return cancellation.run([docker_cli(), *args], env=env, cwd=cwd, timeout=timeout,
                            input_text=input_bytes.decode() if input_bytes else None)


def image_exists(reference: str) -> bool:
    try:
        client().images.get(reference)
    except Exception:
        return False
    return True


def image_id(reference: str) -> str:
    return str(client().images.get(reference).id)


CONTENT_LABEL = "io.pytest-stacks.content"  # on an image built here: the tag of its inputs


def build_lock(reference: str) -> AbstractContextManager[None]:
    """One build of an image at a time on this machine (stacks, sessions and a background
    ``pytest-stacks build`` may all want it at once): the others wait and find it built."""
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in reference)
    return cancellation.file_lock(
        str(Path(tempfile.gettempdir()) / f"pytest-stacks-image-{safe}.lock"))


def ensure_built_image(reference: str, context: Path, build_args: Mapping[str, str], base: str,
                       *, timeout: float) -> bool:
    """Build ``reference`` from ``context`` unless the image of that name was built from the
    same inputs (the folder, the build args, the base image: its content label says so); a
    name that stays the same across changes (the MPI worker image pods name) is never a
    stale image. The image the name leaves behind is removed (unless a container still runs
    it): every change would otherwise leave an untagged image of hundreds of MB on the disk.
    Returns whether it built; raises ImageBuildError when the build fails."""
    args = {**build_args, **({"BASE_IMAGE": base} if base else {})}
    tag = content_tag(context, args, image_id(base) if base else "")
    with build_lock(reference):
        if _content_of(reference) == tag:
            return False
        replaced = image_id(reference) if image_exists(reference) else ""
        with progress.step(f"image build {reference}"):
            done = run_cli(
                ["build", "-q", "-t", reference, f"--label={CONTENT_LABEL}={tag}",
                 *(f"--build-arg={k}={v}" for k, v in args.items()), str(context)],
                timeout=timeout)
        if done.returncode != 0 or _content_of(reference) != tag:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
            raise ImageBuildError(f"image build of {reference} failed (exit "
                                  f"{done.returncode}):\n{tail}")
        if replaced and replaced != image_id(reference):
            remove_untagged(replaced)
    return True


def remove_untagged(image: str) -> bool:
    """Remove an image that no name points at any more; False where it is still named or
    used by a container (the engine refuses), or already gone."""
    try:
        if client().images.get(image).tags:
            return False
        client().images.remove(image)
    except Exception:
        return False
    return True


def _content_of(reference: str) -> str:
    try:
        labels = client().images.get(reference).labels or {}
    except Exception:
        return ""
    return str(labels.get(CONTENT_LABEL, ""))


def content_tag(directory: Path, build_args: Mapping[str, str], base_image_id: str) -> str:
    """A tag derived from everything that goes into the build: same inputs, same tag."""
    digest = hashlib.sha256()
    for path in sorted(p for p in directory.rglob("*") if p.is_file()):
        if path.name in {"README.md"} or "__pycache__" in path.parts:
            continue
        digest.update(str(path.relative_to(directory)).encode() + b"\0")
        digest.update(path.read_bytes() + b"\0")
    for key in sorted(build_args):
        digest.update(f"{key}={build_args[key]}\0".encode())
    digest.update(base_image_id.encode())
    return digest.hexdigest()[:16]
