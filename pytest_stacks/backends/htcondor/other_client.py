"""An HTCondor client of another release than this process's bindings: that release's PyPI
``htcondor`` package in a virtual environment of its own, as a user who has not upgraded has
it, driven one call per process (:mod:`.other_client_script`).

What a schedd does with a job can depend on which client wrote it (the default
``LeaveJobInQueue`` of a spooled job changed in the 25.8.2 client, HTCONDOR-3508), so a stack's
schedd is asked with the old client and the new one side by side. The environment is made once
per version under this user's cache (``$XDG_CACHE_HOME/pytest-stacks/htcondor-clients``) and
reused; it needs the package index, like the project's own set-up.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import venv
from pathlib import Path
from typing import Any

from filelock import FileLock, Timeout

from pytest_stacks.errors import BackendCallError

SCRIPT = Path(__file__).with_name("other_client_script.py")
_VERSION = re.compile(r"^\d+\.\d+\.\d+$")
READY = "ready"


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-stacks" / "htcondor-clients"


def client_python(version: str, *, timeout: float = 600) -> Path:
    """The Python of an environment holding the ``htcondor`` bindings ``version``, made on
    first use; BackendCallError with pip's words where the index cannot give it."""
    if not _VERSION.match(version):
        raise ValueError(f"an HTCondor client version is X.Y.Z, not {version!r}")
    folder = cache_root() / version
    python = folder / "bin" / "python"
    folder.parent.mkdir(parents=True, exist_ok=True)
    try:
        with FileLock(str(folder) + ".lock", timeout=timeout):
            return _made(folder, python, version, timeout)
    except (Timeout, subprocess.TimeoutExpired):
        raise BackendCallError(f"the HTCondor {version} bindings were not installed into "
                               f"{folder} within {timeout:.0f}s (is the package index "
                               f"reachable?)") from None


def _made(folder: Path, python: Path, version: str, timeout: float) -> Path:
    ready = folder / READY
    if ready.is_file() and ready.read_text().strip() == version and python.exists():
        return python
    venv.EnvBuilder(clear=True, with_pip=True).create(folder)
    done = subprocess.run([str(python), "-m", "pip", "install", "-q",
                           "--disable-pip-version-check", f"htcondor=={version}"],
                          capture_output=True, text=True, timeout=timeout)
    if done.returncode != 0:
        raise BackendCallError(f"cannot install the HTCondor {version} bindings into "
                               f"{folder}: {done.stderr.strip()[-600:]}")
    ready.write_text(version + "\n")
    return python


def call(python: Path, request: dict[str, Any], *, timeout: float = 120) -> dict[str, Any]:
    """One schedd call through the other client (``call``: submit, retrieve, version), with
    the pool's ``collector`` and ``token_dir``; its JSON answer (always its ``client``
    version)."""
    try:
        done = subprocess.run([str(python), str(SCRIPT)], input=json.dumps(request),
                              capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise BackendCallError(f"the other HTCondor client ({python}) did not answer "
                               f"{request['call']!r} within {timeout:.0f}s") from None
    if done.returncode != 0:
        raise BackendCallError(f"the other HTCondor client ({python}) failed "
                               f"{request['call']!r}: {done.stderr.strip()[-800:]}")
    try:
        answer: dict[str, Any] = json.loads(done.stdout)
    except json.JSONDecodeError:
        raise BackendCallError(f"the other HTCondor client ({python}) answered "
                               f"{done.stdout[-300:]!r}") from None
    return answer

