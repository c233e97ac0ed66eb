"""The Kubernetes control-plane stack, measured in one run.

Prints: the build of its pinned programs (cached: the time to find them; with --cold the cache
of pytest-stacks' builds is emptied first, Go's own module and build caches are kept), the
warm bring-up (container start, readiness, versions, probe job), the time from submit to
Succeeded for pods and MPIJobs, and the memory the running plane uses. Benchmarks print;
tests never time. Needs Docker and Go.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_stacks import gobuild  # noqa: E402
from pytest_stacks.backends.kubernetes.adapter import control_plane_builds  # noqa: E402
from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for  # noqa: E402
from pytest_stacks.lifecycle import StackPool, new_run_id, runs_root  # noqa: E402
from pytest_stacks.manifest import load  # noqa: E402
from pytest_stacks.providers.base import RunContext  # noqa: E402

STACK = "k8s-1.36-mpi-0.8"


def timed_jobs(client: object, specs: list[JobSpec], timeout: float) -> list[float]:
    out = []
    for spec in specs:
        started = time.monotonic()
        handles = submitted(client.submit([spec]))  # type: ignore[attr-defined]
        [status] = wait_for(client, handles, timeout=timeout)  # type: ignore[arg-type]
        if status.state is not JobState.COMPLETED:
            sys.exit(f"job ended {status}")
        out.append(time.monotonic() - started)
    return out


def memory(container: str) -> str:
    done = subprocess.run(["docker", "stats", "--no-stream", "--format", "{{.MemUsage}}",
                           container], capture_output=True, text=True, check=False)
    return done.stdout.strip() or done.stderr.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cold", action="store_true", help="empty pytest-stacks' build cache")
    parser.add_argument("--jobs", type=int, default=5)
    args = parser.parse_args()
    stack = load(ROOT / "manifest.yaml").get(STACK)
    if args.cold:
        shutil.rmtree(gobuild.cache_root(), ignore_errors=True)
    started = time.monotonic()
    for build in control_plane_builds(stack).values():
        gobuild.ensure_built(build)
    build_s = time.monotonic() - started
    run_id = new_run_id()
    pool = StackPool(RunContext.for_this_process(run_id, runs_root() / run_id))
    try:
        started = time.monotonic()
        attached = pool.acquire(stack)
        up_s = time.monotonic() - started
        timeout = stack.timeouts.job
        pods = timed_jobs(attached.client, [JobSpec(script="true\n")] * args.jobs, timeout)
        mpi = timed_jobs(attached.client, [JobSpec(script="true\n", backend_options={
            "shape": "mpijob", "workers": 2})] * args.jobs, timeout)
        mem = memory(attached.info.container)
    finally:
        problems = pool.teardown({stack.name: stack})
        shutil.rmtree(pool.ctx.run_dir, ignore_errors=True)
    print(f"{STACK}: programs {'built cold' if args.cold else 'found (cached)'} in "
          f"{build_s:.1f} s; warm bring-up (start, readiness, versions, probe) {up_s:.1f} s")
    print(f"  submit -> Succeeded, median of {args.jobs}: pod {statistics.median(pods):.2f} s, "
          f"MPIJob (2 workers) {statistics.median(mpi):.2f} s")
    print(f"  memory of the running plane (docker stats): {mem}")
    if problems:
        sys.exit(f"teardown problems: {problems}")


if __name__ == "__main__":
    main()
