"""kind on this machine (``kind-1.36-local-mpi-0.8``, node image built here): a session
stopped with SIGTERM leaves no node container and no network; one killed with SIGKILL leaves
them, and ``pytest-stacks reap`` (or the next kind bring-up) removes them. kind's containers
carry kind's labels, not ours, so what is looked for is kind's cluster label and our name
prefix."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_stacks.manifest import load
from tests.faults.test_lifecycle_faults import _engine, _start_long

STACK = "kind-1.36-local-mpi-0.8"
REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.skipif(
    not _engine() and os.environ.get("PYTEST_STACKS_REQUIRE_DOCKER") != "1",
    reason="no Docker engine (scripts/setup.sh installs one)")


def _ours() -> dict[str, list[str]]:
    """Our kind clusters' node containers and networks, whoever owns them."""
    nodes = subprocess.run(["docker", "ps", "-a", "--filter", "label=io.x-k8s.kind.cluster",
                            "--format", "{{.Names}}"], capture_output=True, text=True,
                           check=True).stdout.split()
    networks = subprocess.run(["docker", "network", "ls", "--format", "{{.Name}}"],
                              capture_output=True, text=True, check=True).stdout.split()
    return {"nodes": [n for n in nodes if n.startswith("pst-")],
            "networks": [n for n in networks if n.startswith("pst-")],
            "kind network": [n for n in networks if n == "kind"]}


def _nodes() -> int:
    """The node containers of the stack's cluster: kind.nodes of it."""
    kind = load(REPO / "manifest.yaml").get(STACK).kind
    assert kind is not None
    return kind.nodes


def _start(tmp_path: Path) -> subprocess.Popen[str]:
    """A session in its long test on the kind stack; the cluster's network carries the
    session's owner labels, which ``_start_long`` checks."""
    proc, _ = _start_long(tmp_path, STACK, wait=1200)  # a new machine builds the image first
    return proc


@pytest.fixture
def nothing_before() -> None:
    left = _ours()
    if left["nodes"] or left["networks"]:
        pytest.fail(f"kind clusters of ours exist before the test: {left}")


def test_sigterm_tears_the_cluster_and_its_network_down(tmp_path: Path,
                                                         nothing_before: None) -> None:
    proc = _start(tmp_path)
    up = _ours()
    # Every node of the cluster (kind.nodes of them) on the cluster's own network.
    assert len(up["nodes"]) == _nodes(), up
    assert len(up["networks"]) == 1, up
    assert all(n.startswith(up["networks"][0] + "-") for n in up["nodes"]), up
    os.killpg(proc.pid, signal.SIGTERM)
    out, _ = proc.communicate(timeout=300)
    assert proc.returncode != 0
    assert _ours() == {"nodes": [], "networks": [], "kind network": []}, out[-3000:]


def test_sigkill_leftovers_are_reaped(tmp_path: Path, nothing_before: None) -> None:
    proc = _start(tmp_path)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    left = _ours()
    assert left["nodes"] and left["networks"], "SIGKILL cannot tear down: the cluster must stay"
    # From another run root: the dead run's owner record is not there, its labels are.
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    reap = subprocess.run([str(Path(sys.executable).parent / "pytest-stacks"), "reap"], cwd=REPO,
                          env={**os.environ, "TMPDIR": str(elsewhere)},
                          capture_output=True, text=True, timeout=600, check=False)
    assert reap.returncode == 0, reap.stdout + reap.stderr
    assert f"{_nodes()} containers, 1 networks" in reap.stdout, reap.stdout
    assert _ours() == {"nodes": [], "networks": [], "kind network": []}, reap.stdout
