"""Settings and fixtures the unit tests share: the property tests' profile; the kind
provider's fixtures (test_kind_provider, test_kind_local); a test's own temp, state and cache
folders (test_state_files, test_hostile_inputs); the results tests' project, manifest and
writer (test_results_report, test_results_binding)."""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import settings

from pytest_stacks import dockerutil, gobuild
from pytest_stacks.manifest import Manifest, load
from pytest_stacks.providers import kind, preflight
from pytest_stacks.providers.base import RunContext
from tests.unit.results_docs import make_project, writer

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


@pytest.fixture
def private_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own TMPDIR (so its own runs root), state and cache folders. A module whose
    tests write run directories or kept-run records takes it for every test
    (``pytestmark = pytest.mark.usefixtures("private_places")``)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() caches its answer
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    return folder


@pytest.fixture
def manifest_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The results tests' project (:func:`results_docs.make_project`), which is also the
    current folder: the checkout the report binds to."""
    monkeypatch.chdir(tmp_path)
    return make_project(tmp_path)


@pytest.fixture
def manifest(manifest_path: Path) -> Manifest:
    """The manifest of :func:`manifest_path`'s project."""
    return load(manifest_path)


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    """Writes a results document into this test's ``results`` folder (results_docs.writer)."""
    return writer(tmp_path / "results")
