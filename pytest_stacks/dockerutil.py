"""Small helpers around the Docker engine shared by the provider, the reaper and doctor."""

from __future__ import annotations

import shutil
import subprocess
import threading
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_stacks import cancellation
from pytest_stacks.errors import StacksError


class EngineUnavailable(StacksError):
    """No Docker engine answers; the message says how to get one."""


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
