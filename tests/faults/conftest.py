"""Fault tests start pytest sessions as subprocesses: keep them hermetic."""

from __future__ import annotations

from pathlib import Path

import pytest


@pytest.fixture(autouse=True)
def _private_run_root(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test's sessions get their own run root (TMPDIR), so a stack someone keeps with
    `pytest-stacks up` on this machine is never borrowed by a lifecycle test. Docker labels,
    which the reaper works from, are machine-wide either way, and so are the records of kept
    runs (places.state_root): a run beside these tests never reaps a stack one of them keeps."""
    private = tmp_path / "tmpdir"
    private.mkdir()
    monkeypatch.setenv("TMPDIR", str(private))


@pytest.fixture(autouse=True)
def _no_outer_xdist(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests run on two xdist workers (scripts/test.sh); a session they start is its own
    pytest, not one of those workers: xdist's variables must not leak into it (one did: a
    single-process session read PYTEST_XDIST_WORKER and looked for its containers under the
    outer worker's pid)."""
    for name in ("PYTEST_XDIST_WORKER", "PYTEST_XDIST_WORKER_COUNT", "PYTEST_XDIST_TESTRUNUID"):
        monkeypatch.delenv(name, raising=False)


def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "exclusive: needs the machine's Docker engine to itself (it proves what a "
        "later run's reaper does; a run beside it would reap first). scripts/test.sh runs the "
        "others on two workers and these after them, alone.")
    config.addinivalue_line(
        "markers", "kubernetes_builds: its stacks need the Kubernetes Go programs. "
        "scripts/test.sh runs the others while those programs are still being built on a new "
        "machine, and these after the real window.")


@pytest.hookimpl(trylast=True)  # after pytest-randomly's shuffle: keep its order within each part
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Tests whose stacks are Kubernetes ones go last: where they start while the Go programs
    are still being built, the others use that time."""
    items.sort(key=lambda item: item.get_closest_marker("kubernetes_builds") is not None)
