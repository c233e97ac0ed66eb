"""The upstream HTCondor stacks: fail fast without a registry, and their adaptation works.

`htcondor-25-mini` (htcondor/mini) cannot be pulled here; it must fail within 15 s with a clear
infrastructure error. The adaptation in stacks/htcondor-mini (config drop-ins, the pre-exec
hook, token, port, readiness) is proven against a faithful double of htcondor/mini
(stacks/htcondor-mini-double) running the real contract suite.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from pytest_stacks.manifest import load
from tests.faults.sessions import NEEDS_ENGINE, run_argv

REPO = Path(__file__).resolve().parents[2]

pytestmark = NEEDS_ENGINE


def _registry_reachable() -> bool:
    from pytest_stacks.providers.images import registry_reachable
    return registry_reachable()


@pytest.mark.skipif("_registry_reachable()", reason="a registry is reachable: the image can "
                                                    "be pulled, so there is no fast failure")
def test_upstream_stack_fails_fast_without_a_registry(tmp_path: Path) -> None:
    cmd = [*run_argv(tmp_path, "def test_x(backend):\n    pass\n"), "--stack=htcondor-25-mini"]
    started = time.monotonic()
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=120,
                            check=False)
    elapsed = time.monotonic() - started
    out = result.stdout
    assert result.returncode == 1, out[-3000:]
    assert "1 infra" in out
    assert "image htcondor/mini:25.13.2-el9 is not available locally and no registry is " \
           "reachable" in out
    assert "Traceback" not in out
    # Fast means not waiting on a pull that cannot happen (the session's 120 s and more): a
    # whole pytest process, which a new machine's CI runs beside three Kubernetes builds
    # (18.8 s there; 3 to 5 s idle).
    assert elapsed < 45, f"took {elapsed:.1f}s"


def _double_image() -> str:
    from pytest_stacks import dockerutil
    from pytest_stacks.dockerutil import content_tag
    from pytest_stacks.manifest import BaseImage
    from pytest_stacks.providers.images import ensure_base_image

    folder = REPO / "stacks" / "htcondor-mini-double"
    base = ensure_base_image(BaseImage("debian", "trixie-slim", "trixie"))
    tag = content_tag(folder, {}, dockerutil.image_id(base))
    reference = f"pytest-stacks/htcondor-mini-double:{tag}"
    if not dockerutil.image_exists(reference):
        built = subprocess.run(["docker", "build", "-q", "-t", reference, "--build-arg",
                                f"BASE_IMAGE={base}", str(folder)], capture_output=True,
                               text=True, timeout=1200, check=False)
        assert built.returncode == 0 and dockerutil.image_exists(reference), built.stderr[-3000:]
    return reference


def test_upstream_adaptation_on_a_faithful_double(tmp_path: Path) -> None:
    name, tag = _double_image().split(":")
    manifest = tmp_path / "manifest.yaml"
    # Every capability the contract suite's markers may name: the repository's catalogue.
    catalogue = ", ".join(f"{name}: {name}" for name in load(REPO / "manifest.yaml").capabilities)
    manifest.write_text(f"""
version: 1
capabilities: {{{catalogue}}}
backends:
  htcondor: {{window: {{anchor: "23.9", leading_edge: "25.13"}}}}
stacks:
  - name: htcondor-mini-double
    backend: htcondor
    version: "23.9.6"
    provider: compose
    transport: bindings
    configuration: single-node
    capabilities: [submit, status, execution, kill, purge, inputs, outputs, outputs.repeatable,
                   logs]
    lanes: [full]
    image: {{name: {name}, tag: {tag}}}
    compose:
      directory: {REPO / "stacks" / "htcondor-mini"}
      service: htcondor
      ports: [CONDOR_PORT]
    options: {{output_retrieval: repeatable, periodic_expr_interval: 5}}
""")
    cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
           f"--stack-manifest={manifest}", "--stack=htcondor-mini-double",
           str(REPO / "tests" / "contract"), "-k",
           "completion or non_zero or inputs or byte_for_byte or killed or unknown"]
    result = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=900,
                            check=False)
    out = result.stdout
    assert result.returncode == 0, out[-5000:]
    assert "htcondor-mini-double (htcondor 23.9.6, compose): daemon 23.9.6" in out
    assert " 0 test(s) ran" not in out
