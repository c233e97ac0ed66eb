"""Settings and fixtures the unit tests share: the property tests' profile; the kind
provider's fixtures (test_kind_provider, test_kind_local)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import settings

from pytest_stacks import dockerutil, gobuild
from pytest_stacks.providers import kind, preflight
from pytest_stacks.providers.base import RunContext

# No wall-clock bound on a property test's examples: the fake lane runs while the real stacks'
# images and Go programs build in the background, and a busy machine is not a failure (timing
# belongs in bench/). Hypothesis's default deadline (200 ms an example) would say it is. Here,
# not in tests/conftest.py: importing hypothesis costs every run (the contract suite on the
# fakes too) about half a second.
settings.register_profile("pytest-stacks", deadline=None)
settings.load_profile("pytest-stacks")


@pytest.fixture
def ctx(tmp_path: Path) -> RunContext:
    run_dir = tmp_path / "runs" / "20261201000000-abcdef12"
    run_dir.mkdir(parents=True)
    return RunContext.for_this_process("20261201000000-abcdef12", run_dir)


@pytest.fixture
def host_ready(monkeypatch: pytest.MonkeyPatch) -> None:
    """A host whose preflight passes: engine, images, base images and Go all there (and
    every image built here already built)."""
    for check in ("engine", "compose", "image_obtainable", "base_obtainable", "go_toolchain",
                  "user_namespaces"):
        monkeypatch.setattr(preflight, check, lambda *a, **k: None)
    monkeypatch.setattr(dockerutil, "ensure_built_image", lambda *a, **k: False)


@pytest.fixture
def kind_tools(monkeypatch: pytest.MonkeyPatch, tmp_path: Path, host_ready: None) -> Path:
    """kind's tools folder as if built: the operator's release manifest (its floating image
    to be pinned) and every Go build answered with this folder, on a host whose preflight
    passes."""
    tools = tmp_path / "tools"
    (tools / "files").mkdir(parents=True)
    (tools / "files" / kind.OPERATOR_MANIFEST).write_text(
        "kind: Deployment\nspec:\n  template:\n    spec:\n      containers:\n"
        "      - image: mpioperator/mpi-operator:0.8\n")
    monkeypatch.setattr(gobuild, "ensure_built", lambda *a, **k: tools)
    return tools
