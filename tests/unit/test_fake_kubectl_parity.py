"""The fake's kubectl against the pinned kubectl itself: the command lines whose answer needs
no API server (kubectl refuses them, or prints its own version, before it connects) give the
same exit code, stdout and stderr from both. Skipped where the stack's kubectl is not built
on this machine (a cold Go build takes minutes: `pytest-stacks build --programs-only
k8s-1.36-node-mpi-0.8`)."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from pytest_stacks.backends.kubernetes.fake import FakeCluster
from pytest_stacks.manifest import load
from pytest_stacks.manifest.catalogue import default_manifest

REPO = Path(__file__).resolve().parents[2]

#: Answered before any request (parse errors, usage errors, the client's own version).
OFFLINE = [
    ["frobnicate"],
    ["get", "pods", "--bogus"],
    ["get", "pods", "-z"],
    ["get", "pods", "-n"],
    ["get", "pods", "--namespace"],
    ["logs", "x", "--bogus"],
    ["version", "--client", "-o"],
    ["apply"],
    ["apply", "-f", "/nonexistent/pytest-stacks/mpijob.yaml"],
    ["get"],
    ["logs"],
    ["logs", "a", "b", "c"],
    ["delete"],
    ["version", "--client"],
    ["version", "--client", "-o", "json"],
    ["version", "--client", "-o", "yaml"],
    ["version", "-o", "xml"],
]


def _pinned_kubectl() -> Path | None:
    from pytest_stacks import gobuild
    from pytest_stacks.backends.kubernetes.adapter import control_plane_builds

    if shutil.which("go") is None and not Path("/usr/local/go/bin/go").exists():
        return None
    build = control_plane_builds(load(default_manifest(REPO)).get(
        "k8s-1.36-node-mpi-0.8"))["kubernetes"]
    version = subprocess.run([str(gobuild.go_binary()), "env", "GOVERSION"],
                             capture_output=True, text=True, check=False).stdout.strip()
    folder = gobuild.cache_root() / f"{build.name}-{build.digest(version)}"
    binary = folder / "bin" / "kubectl"
    return binary if (folder / gobuild.COMPLETE).exists() and binary.exists() else None


@pytest.fixture(scope="module")
def pinned() -> Path:
    found = _pinned_kubectl()
    if found is None:
        pytest.skip("kubectl v1.36.3 is not built on this machine yet (`pytest-stacks build "
                    "--programs-only k8s-1.36-node-mpi-0.8` makes it)")
    return found


@pytest.mark.parametrize("argv", OFFLINE, ids=[" ".join(a) or "-" for a in OFFLINE])
def test_the_fake_answers_as_the_pinned_kubectl(pinned: Path, argv: list[str],
                                                tmp_path: Path) -> None:
    # No server anywhere: kubectl must answer these without one.
    env = {**os.environ, "KUBECONFIG": str(tmp_path / "none"), "HOME": str(tmp_path)}
    real = subprocess.run([str(pinned), *argv], capture_output=True, text=True, env=env,
                          cwd=tmp_path, timeout=60, check=False, stdin=subprocess.DEVNULL)
    cluster = FakeCluster()
    try:
        fake = cluster.commands.run(["kubectl", *argv], cwd=str(tmp_path))
    finally:
        cluster.close()
    assert (fake.returncode, fake.stdout, fake.stderr) == (
        real.returncode, real.stdout, real.stderr)
