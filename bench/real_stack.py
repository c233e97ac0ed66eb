"""Real-stack start-up and harness overhead, per stack, measured in one run.

For each stack (default: slurm-24.11 htcondor-23.9) it prints:
- cold start: the plugin's bring-up (images cached: up, readiness, version check, probe job);
- time to first test: from `pytest` starting to the first test body running;
- the overhead ratio: `pytest --stack=X tests/contract` end to end, over the same tests run by
  hand, i.e. a plain `docker compose up -d --wait` plus the same tests against that running
  stack (borrowed through `pytest-stacks up`, so no second bring-up is counted). Target <= 1.10.
Benchmarks print; tests never time. Needs a Docker engine and the stack images built once.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_stacks import dockerutil  # noqa: E402
from pytest_stacks.manifest import load  # noqa: E402
from pytest_stacks.providers import images  # noqa: E402
from pytest_stacks.providers.compose import free_port  # noqa: E402

PY = sys.executable
CLI = str(Path(PY).with_name("pytest-stacks"))


def pytest_run(stack: str) -> tuple[float, float, float, str]:
    """(wall, time to first test, bring-up seconds from the summary, output)."""
    with tempfile.NamedTemporaryFile(delete=False) as marker:
        marker_path = marker.name
    env = {**os.environ, "BENCH_FIRST_TEST_FILE": marker_path,
           "PYTHONPATH": f"{ROOT / 'bench'}:{os.environ.get('PYTHONPATH', '')}"}
    started = time.time()
    result = subprocess.run([PY, "-m", "pytest", "tests/contract", f"--stack={stack}", "-q",
                             "-p", "_first_test"], cwd=ROOT, env=env, capture_output=True,
                            text=True, check=False)
    wall = time.time() - started
    if result.returncode != 0:
        sys.exit(f"pytest --stack={stack} failed:\n{result.stdout[-3000:]}")
    first = float(Path(marker_path).read_text()) - started
    os.unlink(marker_path)
    match = re.search(rf"{re.escape(stack)} .*up in ([0-9.]+)s", result.stdout)
    return wall, first, float(match.group(1)) if match else float("nan"), result.stdout


def raw_compose_up(stack_name: str) -> float:
    """`docker compose up -d --wait` by hand, with the same inputs, then down."""
    stack = load(ROOT / "manifest.yaml").get(stack_name)
    assert stack.compose is not None and stack.base_image is not None
    base = images.ensure_base_image(stack.base_image)
    tag = images.content_tag(stack.compose.directory, stack.compose.build_args,
                             dockerutil.image_id(base))
    env = {**os.environ, **stack.compose.build_args, "BASE_IMAGE": base,
           f"{stack.backend.upper()}_IMAGE_TAG": tag,
           **{name: str(free_port()) for name in stack.compose.ports}}
    project = f"bench-{os.getpid()}"
    cmd = ["docker", "compose", "-p", project, "-f", str(stack.compose.directory /
                                                           "compose.yaml")]
    started = time.time()
    up = subprocess.run([*cmd, "up", "-d", "--wait", "--no-build"], env=env,
                        capture_output=True, text=True, check=False)
    elapsed = time.time() - started
    subprocess.run([*cmd, "down", "-v", "--timeout", "5"], env=env, capture_output=True,
                   check=False)
    if up.returncode != 0:
        sys.exit(f"docker compose up --wait failed for {stack_name}: {up.stderr[-2000:]}")
    return elapsed


def tests_on_running_stack(stack: str) -> float:
    subprocess.run([CLI, "up", stack], cwd=ROOT, capture_output=True, check=True)
    try:
        started = time.time()
        result = subprocess.run([PY, "-m", "pytest", "tests/contract", f"--stack={stack}",
                                 "-q"], cwd=ROOT, capture_output=True, text=True, check=False)
        elapsed = time.time() - started
        if "borrowed from" not in result.stdout or result.returncode != 0:
            sys.exit(f"the by-hand run did not reuse the running stack:\n{result.stdout[-2000:]}")
        return elapsed
    finally:
        subprocess.run([CLI, "down", stack], cwd=ROOT, capture_output=True, check=False)


def main() -> None:
    stacks = sys.argv[1:] or ["slurm-24.11", "htcondor-23.9"]
    for stack in stacks:
        pytest_run(stack)  # warm: builds the image if its inputs changed
        wall, first, bring_up, _ = pytest_run(stack)
        manual_up = raw_compose_up(stack)
        manual_tests = tests_on_running_stack(stack)
        ratio = wall / (manual_up + manual_tests)
        print(f"{stack}: cold start (images cached) {bring_up:.1f} s; time to first test "
              f"{first:.1f} s; pytest --stack {wall:.1f} s vs by hand {manual_up:.1f} s "
              f"compose up --wait + {manual_tests:.1f} s tests = ratio {ratio:.2f} "
              f"(target <= 1.10: {'met' if ratio <= 1.10 else 'NOT met'})")


if __name__ == "__main__":
    main()
