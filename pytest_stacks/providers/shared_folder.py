"""The run's shared folder of a login-node stack: one folder of the run directory, mounted at
the same absolute path into every service of the stack, so a client writes ``job.sh`` there on
this machine and ``sbatch job.sh`` finds it on the login node (and its output lands back
there), as a site's shared home does.

Writable by every user (mode 0777, like a scratch folder): the login user of the containers
(uid 1000) is not this machine's user, and a test's own files stay readable to it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_stacks.manifest import Stack
from pytest_stacks.providers import unshared_fs

#: The endpoint (``stack_info`` key) naming the folder.
ENDPOINT = "shared"
#: Backends whose clients work on a login node (Kubernetes has none).
LOGIN_BACKENDS = frozenset({"slurm", "htcondor"})


def wanted(stack: Stack) -> bool:
    return stack.backend in LOGIN_BACKENDS and stack.compose is not None


def path(stack: Stack, run_dir: Path) -> Path:
    return run_dir / "shared" / stack.name


def make(stack: Stack, run_dir: Path) -> Path:
    folder = path(stack, run_dir)
    folder.mkdir(parents=True, exist_ok=True)
    folder.chmod(0o777)
    folder.parent.chmod(0o755)
    return folder


def override(stack: Stack, run_dir: Path, services: list[str]) -> dict[str, Any]:
    """The bind mount for every service (the login node, and the nodes where jobs write); on
    a stack without a shared file system (:mod:`.unshared_fs`) for the login node only (the
    stack's own service), or the folder would be the very shared path the stack has not."""
    if not wanted(stack):
        return {}
    folder = make(stack, run_dir)
    assert stack.compose is not None
    if not unshared_fs.shared(stack):
        services = [name for name in services if name == stack.compose.service]
    return {"services": {name: {"volumes": [f"{folder}:{folder}"]} for name in services}}


def endpoints(stack: Stack, run_dir: Path) -> dict[str, str]:
    return {ENDPOINT: str(path(stack, run_dir))} if wanted(stack) else {}
