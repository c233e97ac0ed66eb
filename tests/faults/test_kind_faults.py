"""kind on this machine (``kind-1.36-local-mpi-0.8``, node image built here): a session
stopped with SIGTERM leaves no node container and no network; one killed with SIGKILL leaves
them, and ``pytest-stacks reap`` (or the next kind bring-up) removes them. kind's containers
carry kind's labels, not ours: a session's clusters are found by its owner label on the
cluster's own network (named as the cluster), then its nodes by kind's cluster label. Other
runs on the machine (``scripts/test.sh`` runs most of these tests beside the real window, whose
kind cluster is up meanwhile) are never counted."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_stacks.manifest import load
from tests.faults.sessions import NEEDS_ENGINE, start_long

STACK = "kind-1.36-local-mpi-0.8"
REPO = Path(__file__).resolve().parents[2]

pytestmark = [pytest.mark.kubernetes_builds, NEEDS_ENGINE]


PID_LABEL = "io.pytest-stacks.owner-pid"


def _clusters(owner_pid: int) -> list[str]:
    """The kind clusters of the session ``owner_pid``: their networks carry its owner label."""
    return subprocess.run(["docker", "network", "ls", "--filter", f"label={PID_LABEL}={owner_pid}",
                           "--format", "{{.Name}}"], capture_output=True, text=True,
                          check=True).stdout.split()


def _left(clusters: list[str]) -> dict[str, list[str]]:
    """What Docker still has of these clusters: node containers, networks, and kind's own
    shared ``kind`` network (never used by our clusters)."""
    nodes = []
    for cluster in clusters:
        nodes += subprocess.run(["docker", "ps", "-a", "--filter",
                                 f"label=io.x-k8s.kind.cluster={cluster}", "--format",
                                 "{{.Names}}"], capture_output=True, text=True,
                                check=True).stdout.split()
    networks = subprocess.run(["docker", "network", "ls", "--format", "{{.Name}}"],
                              capture_output=True, text=True, check=True).stdout.split()
    return {"nodes": nodes, "networks": [n for n in networks if n in clusters],
            "kind network": [n for n in networks if n == "kind"]}


def _nodes() -> int:
    """The node containers of the stack's cluster: kind.nodes of it."""
    kind = load(REPO / "manifest.yaml").get(STACK).kind
    assert kind is not None
    return kind.nodes


def _start(tmp_path: Path) -> subprocess.Popen[str]:
    """A session in its long test on the kind stack; the cluster's network carries the
    session's owner labels, which ``start_long`` checks."""
    proc, _ = start_long(tmp_path, STACK, wait=1200)  # a new machine builds the image first
    return proc


def test_sigterm_tears_the_cluster_and_its_network_down(tmp_path: Path) -> None:
    proc = _start(tmp_path)
    clusters = _clusters(proc.pid)
    up = _left(clusters)
    # Every node of the cluster (kind.nodes of them) on the cluster's own network.
    assert len(up["nodes"]) == _nodes(), up
    assert len(up["networks"]) == 1 and up["networks"][0].startswith("pst-"), up
    assert all(n.startswith(up["networks"][0] + "-") for n in up["nodes"]), up
    os.killpg(proc.pid, signal.SIGTERM)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode != 0
    assert _left(clusters) == {"nodes": [], "networks": [], "kind network": []}, out[-3000:]


@pytest.mark.exclusive  # a concurrent run's bring-up would reap the dead cluster first
def test_sigkill_leftovers_are_reaped(tmp_path: Path) -> None:
    proc = _start(tmp_path)
    clusters = _clusters(proc.pid)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    left = _left(clusters)
    assert left["nodes"] and left["networks"], "SIGKILL cannot tear down: the cluster must stay"
    # From another run root: the dead run's owner record is not there, its labels are.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    reap = subprocess.run([str(Path(sys.executable).parent / "pytest-stacks"), "reap"], cwd=REPO,
                          env={**os.environ, "TMPDIR": str(elsewhere)},
                          capture_output=True, text=True, timeout=600, check=False)
    assert reap.returncode == 0, reap.stdout + reap.stderr
    assert f"{_nodes()} containers, 1 networks" in reap.stdout, reap.stdout
    assert _left(clusters) == {"nodes": [], "networks": [], "kind network": []}, reap.stdout
