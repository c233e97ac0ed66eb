"""Real-stack start-up and harness overhead, per stack, measured in one run.

For each stack (default: slurm-24.11 htcondor-23.9) it prints:
- cold start: the plugin's bring-up (images cached: up, readiness, version check, probe job);
- time to first test: from `pytest` starting to the first test body running;
- the overhead ratio: `pytest --stack=X tests/contract` end to end, over the same tests run by
  hand: a plain `docker compose up -d --wait`, the same tests against that fresh stack, and
  (in the second ratio) the `docker compose down -v` a careful person runs after. Target <= 1.10.
Benchmarks print; tests never time. Needs a Docker engine and the stack images built once.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_stacks import dockerutil, registry  # noqa: E402
from pytest_stacks.lifecycle import RunDirectory, StackRecord, up_root  # noqa: E402
from pytest_stacks.manifest import load  # noqa: E402
from pytest_stacks.providers import images, stack_adapter  # noqa: E402
from pytest_stacks.providers.base import RunContext, StackInfo  # noqa: E402
from pytest_stacks.providers.compose import free_port  # noqa: E402
from pytest_stacks.transports.docker_exec import DockerExecTransport  # noqa: E402

PY = sys.executable


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


def by_hand(stack_name: str) -> tuple[float, float, float]:
    """The same tests run by hand: `docker compose up -d --wait` with the same inputs, the
    suite against that fresh, unprobed stack, then `docker compose down -v`. All three timed.

    pytest reaches the hand-made stack the way it reaches one kept by `pytest-stacks up`: a
    record in the kept-stacks folder (written here, as a user's script would), so no bring-up,
    version check or probe job of the harness is counted on this side.
    """
    stack = load(ROOT / "manifest.yaml").get(stack_name)
    assert stack.compose is not None and stack.base_image is not None
    base = images.ensure_base_image(stack.base_image)
    tag = dockerutil.content_tag(stack.compose.directory, stack.compose.build_args,
                             dockerutil.image_id(base))
    ports = {name: free_port() for name in stack.compose.ports}
    env = {**stack.compose.build_args, "BASE_IMAGE": base,
           registry.BACKENDS[stack.backend].image_tag_variable: tag,
           **{k: str(v) for k, v in ports.items()}}
    project = f"bench-{os.getpid()}"
    compose_file = str(stack.compose.directory / "compose.yaml")
    cmd = ["docker", "compose", "-p", project, "-f", compose_file]
    full_env = {**os.environ, **env}
    run_dir = up_root() / f"bench-{os.getpid()}"
    started = time.time()
    up = subprocess.run([*cmd, "up", "-d", "--wait", "--no-build"], env=full_env,
                        capture_output=True, text=True, check=False)
    up_s = time.time() - started
    try:
        if up.returncode != 0:
            sys.exit(f"docker compose up --wait failed for {stack_name}: {up.stderr[-2000:]}")
        container = subprocess.run([*cmd, "ps", "-q", stack.compose.service], env=full_env,
                                   capture_output=True, text=True, check=True).stdout.strip()
        run_dir.mkdir(parents=True, exist_ok=True)
        info = StackInfo(provider="compose", project=project, files=(compose_file,), env=env,
                         ports=ports, image=f"pytest-stacks/{stack.backend}:{tag}",
                         container=container)
        transport = DockerExecTransport(dockerutil.client().containers.get(container))
        info.endpoints.update(stack_adapter(stack).prepare(stack, transport, run_dir, ports))
        RunDirectory(RunContext.for_this_process(run_dir.name, run_dir, keeps=True)).stack(
            stack_name).write(StackRecord(stack_name, info, observed_version=stack.version))
        started = time.time()
        result = subprocess.run([PY, "-m", "pytest", "tests/contract", f"--stack={stack_name}",
                                 "-q"], cwd=ROOT, capture_output=True, text=True, check=False)
        tests_s = time.time() - started
        if "borrowed from" not in result.stdout or result.returncode != 0:
            sys.exit(f"the by-hand run did not use the hand-made stack:\n"
                     f"{result.stdout[-2000:]}")
    finally:
        started = time.time()
        subprocess.run([*cmd, "down", "-v", "--timeout", "5"], env=full_env,
                       capture_output=True, check=False)
        down_s = time.time() - started
        shutil.rmtree(run_dir, ignore_errors=True)
    return up_s, tests_s, down_s


def main() -> None:
    stacks = sys.argv[1:] or ["slurm-24.11", "htcondor-23.9"]
    for stack in stacks:
        pytest_run(stack)  # warm: builds the image if its inputs changed
        wall, first, bring_up, _ = pytest_run(stack)
        manual_up, manual_tests, manual_down = by_hand(stack)
        ratio = wall / (manual_up + manual_tests)
        with_down = wall / (manual_up + manual_tests + manual_down)
        print(f"{stack}: cold start (images cached) {bring_up:.1f} s; time to first test "
              f"{first:.1f} s; pytest --stack {wall:.1f} s vs by hand {manual_up:.1f} s "
              f"compose up --wait + {manual_tests:.1f} s tests = ratio {ratio:.2f} "
              f"(target <= 1.10: {'met' if ratio <= 1.10 else 'NOT met'}); counting the "
              f"{manual_down:.1f} s `compose down` by hand too: {with_down:.2f}")


if __name__ == "__main__":
    main()
