"""The operator's manifest applied while kind joins the workers: waited for, applied in the
control-plane node, and never a condition (whatever fails, the provider applies it after)."""

from __future__ import annotations

import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_stacks.cancellation import Cancelled
from pytest_stacks.errors import StacksError
from pytest_stacks.providers import kind_operator


class ControlPlane:
    """A control-plane node whose API answers /readyz from its ``ready_at``-th question."""

    def __init__(self, ready_at: int = 1, apply_code: int = 0,
                 raises: BaseException | None = None) -> None:
        self.ready_at, self.apply_code, self.raises = ready_at, apply_code, raises
        self.calls: list[list[str]] = []
        self.asked = 0

    def __call__(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        if self.raises is not None:
            raise self.raises
        code = 0
        if "--raw=/readyz" in argv:
            self.asked += 1
            code = 0 if self.asked >= self.ready_at else 1
        elif "apply" in argv:
            code = self.apply_code
        return subprocess.CompletedProcess(list(argv), code, "", "")


@pytest.fixture(autouse=True)
def quick_polls(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kind_operator, "POLL_S", 0.01)


def _until(condition: object, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        time.sleep(0.01)


def test_the_manifest_is_applied_in_the_node_once_its_api_is_ready(tmp_path: Path) -> None:
    manifest = tmp_path / "m.yaml"
    manifest.write_text("kind: Namespace\n")
    node = ControlPlane(ready_at=3)
    early = kind_operator.EarlyApply(node, "c-control-plane", manifest, wait_s=30).start()
    _until(lambda: any("apply" in c for c in node.calls))
    assert early.finish() is True
    readyz, copy, apply = node.calls[0], node.calls[-2], node.calls[-1]
    assert readyz[:3] == ["docker", "exec", "c-control-plane"] and kind_operator.ADMIN in readyz
    assert node.asked == 3 and len(node.calls) == 5
    assert copy == ["docker", "cp", str(manifest), f"c-control-plane:{kind_operator.IN_NODE}"]
    assert apply[:4] == ["docker", "exec", "c-control-plane", "kubectl"]
    assert apply[-4:] == ["apply", "--server-side", "-f", kind_operator.IN_NODE]


def test_an_api_never_ready_applies_nothing_and_finish_does_not_wait(tmp_path: Path) -> None:
    node = ControlPlane(ready_at=10**9)
    early = kind_operator.EarlyApply(node, "c-control-plane", tmp_path / "m.yaml",
                                     wait_s=600).start()
    _until(lambda: node.asked >= 2)
    asked = node.asked
    assert early.finish() is False
    # The loop ended on finish, not at its 600 s deadline: at most the question in flight.
    assert node.asked - asked <= 1
    assert not any("apply" in c or "cp" in c for c in node.calls)


@pytest.mark.parametrize("node", [ControlPlane(apply_code=1),
                                  ControlPlane(raises=Cancelled("docker exec")),
                                  ControlPlane(raises=OSError("no docker"))],
                         ids=["apply refused", "cancelled", "no docker"])
def test_a_failed_early_apply_is_left_to_the_provider(tmp_path: Path,
                                                      node: ControlPlane) -> None:
    early = kind_operator.EarlyApply(node, "c-control-plane", tmp_path / "m.yaml", wait_s=30)
    early.start()
    _until(lambda: bool(node.calls) and (node.raises is not None
                                         or any("apply" in c for c in node.calls)))
    assert early.finish() is False


def test_the_release_manifests_image_is_pinned_or_refused() -> None:
    manifest = "containers:\n- image: mpioperator/mpi-operator:0.8\n  name: mpi-operator\n"
    assert "image: r/mpi-operator:0.8.2@sha256:0" in kind_operator.pin_operator_image(
        manifest, "r/mpi-operator:0.8.2@sha256:0")
    with pytest.raises(StacksError, match="names no mpi-operator image"):
        kind_operator.pin_operator_image("containers: []\n", "r/x:1")


def test_finish_waits_for_an_apply_under_way(tmp_path: Path) -> None:
    """kind has returned while the apply still runs: its outcome is waited for, so the
    provider never applies the same manifest twice at once."""
    release = threading.Event()

    class SlowApply(ControlPlane):
        def __call__(self, argv: Sequence[str],
                     timeout: float) -> subprocess.CompletedProcess[str]:
            if "apply" in argv:
                release.wait(5)
            return super().__call__(argv, timeout)

    node = SlowApply()
    early = kind_operator.EarlyApply(node, "c-control-plane", tmp_path / "m.yaml",
                                     wait_s=30).start()
    _until(lambda: any(c[:2] == ["docker", "cp"] for c in node.calls))
    threading.Timer(0.2, release.set).start()
    assert early.finish() is True
