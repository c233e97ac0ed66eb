"""What the existing-deployment fault tests share: a stack kept by ``pytest-stacks up`` as the
"site", sessions run as a user runs them, and a poll that says what it waited for."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI = str(Path(sys.executable).parent / "pytest-stacks")
T = TypeVar("T")


def _engine() -> bool:
    return shutil.which("docker") is not None and subprocess.run(
        ["docker", "info"], capture_output=True, check=False).returncode == 0


ENGINE = pytest.mark.skipif(
    not _engine() and os.environ.get("PYTEST_STACKS_REQUIRE_DOCKER") != "1",
    reason="no Docker engine (scripts/setup.sh installs one)")


@contextlib.contextmanager
def kept_stack(name: str, home: Path) -> Iterator[dict[str, Any]]:
    """``pytest-stacks up NAME`` in a private run root; its public facts (what ``up`` prints);
    ``pytest-stacks down NAME`` after, which must leave none of its containers."""
    env = {**os.environ, "TMPDIR": str(home)}
    up = subprocess.run([CLI, "up", name], capture_output=True, text=True, env=env,
                        timeout=1500, check=False)
    assert up.returncode == 0, f"pytest-stacks up {name} failed:\n{up.stderr[-4000:]}"
    shown: dict[str, Any] = json.loads(up.stdout)
    try:
        yield shown
    finally:
        down = subprocess.run([CLI, "down", name], capture_output=True, text=True, env=env,
                              timeout=600, check=False)
        assert down.returncode == 0, down.stdout + down.stderr


def write_manifest(where: Path, text: str) -> Path:
    where.mkdir(parents=True, exist_ok=True)
    path = where / "site-manifest.yaml"
    path.write_text(text)
    return path


def pytest_session(args: list[str], *, env: dict[str, str], cwd: Path,
                   timeout: float = 1200) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
           "-rA", *args]
    return subprocess.run(cmd, capture_output=True, text=True, cwd=cwd,
                          env={**os.environ, **env}, timeout=timeout, check=False)


def poll(ask: Callable[[], T], *, timeout: float, what: str, interval: float = 0.5) -> T:
    deadline = time.monotonic() + timeout
    while True:
        answer = ask()
        if answer:
            return answer
        if time.monotonic() > deadline:
            raise AssertionError(f"no {what} within {timeout:.0f}s")
        time.sleep(interval)
