"""The Kubernetes control-plane stacks, measured in one run.

Prints: the build of its pinned programs (cached: the time to find them; with --cold the cache
of pytest-stacks' builds is emptied first, Go's own module and build caches are kept), the
warm bring-up (container start, readiness, versions, probe job), the time from submit to
Succeeded for pods and MPIJobs, and the memory the running plane uses. Benchmarks print;
tests never time. Needs Docker and Go.

``--stack k8s-1.36-node-mpi-0.8`` (a real kubelet node) also prints the time from nothing to
the first MPIJob Succeeded (builds, images, bring-up with its MPIJob probe, one more MPIJob),
the pod start latency (submit -> Running as the client sees it, and creation -> container
start as the kubelet reports it) and the node's memory (docker stats, the RSS of its
processes, its memory cgroup). Its --cold removes only what that stack alone builds (kubelet,
kube-proxy, CoreDNS, pause, the image tars, the worker and node images), never the programs
a running kwok stack may have mounted.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.object_store import bring_up  # noqa: E402
from pytest_stacks import gobuild  # noqa: E402
from pytest_stacks.backends.kubernetes.adapter import (  # noqa: E402
    control_plane_builds,
    runs_pods,
)
from pytest_stacks.backends.kubernetes.objects import terminated  # noqa: E402
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


def node_memory(container: str) -> str:
    """RSS of every process in the node (pods included) and its memory cgroup's usage."""
    usage = "/sys/fs/cgroup/memory/memory.usage_in_bytes"  # cgroup v1, private namespace
    script = ("ps -eo rss= | awk '{s+=$1} END {printf \"%.0f MiB RSS, \", s/1024}'; "
              f"awk '{{printf \"%.0f MiB\", $1/1048576}}' {usage}; "
              "echo ' cgroup usage (page cache included)'")
    done = subprocess.run(["docker", "exec", container, "sh", "-c", script],
                          capture_output=True, text=True, check=False)
    return done.stdout.strip() or done.stderr.strip()


def pod_start(client: object, timeout: float) -> tuple[float, float]:
    """(submit -> Running seen by the client, creation -> container start by the kubelet)."""
    started = time.monotonic()
    [handle] = submitted(client.submit([JobSpec(  # type: ignore[attr-defined]
        script="sleep 30\n", backend_options={"keep_running": True, "shape": "pod"})]))
    wait_for(client, [handle], until=frozenset({JobState.RUNNING}),  # type: ignore[arg-type]
             timeout=timeout)
    seen = time.monotonic() - started
    api, namespace = client.api, client.namespace  # type: ignore[attr-defined]
    pod = api.get("Pod", namespace, handle.job_id)
    state = pod["status"]["containerStatuses"][0]["state"]
    begun = (state.get("running") or terminated(pod)).get("startedAt", "")
    created = pod["metadata"]["creationTimestamp"]
    client.kill([handle])  # type: ignore[attr-defined]
    return seen, (_stamp(begun) - _stamp(created)).total_seconds()


def _stamp(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00"))


def cold_node(stack: object) -> None:
    """Remove what only the node stack builds (see the module's docstring)."""
    for name in ("node", "coredns"):
        build = control_plane_builds(stack)[name]  # type: ignore[arg-type]
        for folder in gobuild.cache_root().glob(f"{build.name}-*"):
            shutil.rmtree(folder, ignore_errors=True)
    for folder in gobuild.cache_root().glob("pause-*"):
        shutil.rmtree(folder, ignore_errors=True)
    shutil.rmtree(gobuild.cache_root().parent / "images", ignore_errors=True)
    image = str(stack.options["image"])  # type: ignore[attr-defined]
    listed = subprocess.run(["docker", "images", "-q", "pytest-stacks/pause",
                             ], capture_output=True, text=True, check=False).stdout.split()
    subprocess.run(["docker", "rmi", "-f", image, *listed], capture_output=True, check=False)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--cold", action="store_true", help="empty pytest-stacks' build cache")
    parser.add_argument("--jobs", type=int, default=5)
    parser.add_argument("--stack", default=STACK)
    parser.add_argument("--bring-ups", type=int, default=3,
                        help="warm bring-ups measured (the figure is their median: one bring-up "
                             "on this 2-core VM moves by a second between runs)")
    args = parser.parse_args()
    stack = load(ROOT / "manifest.yaml").get(args.stack)
    node = runs_pods(stack)
    if args.cold and node:
        cold_node(stack)
    elif args.cold:
        shutil.rmtree(gobuild.cache_root(), ignore_errors=True)
    from_nothing = started = time.monotonic()
    for build in control_plane_builds(stack).values():
        gobuild.ensure_built(build)
    build_s = time.monotonic() - started
    ups = [bring_up(stack) for _ in range(max(args.bring_ups, 1) - 1)]
    run_id = new_run_id()
    pool = StackPool(RunContext.for_this_process(run_id, runs_root() / run_id))
    try:
        started = time.monotonic()
        attached = pool.acquire(stack)
        ups.append(time.monotonic() - started)
        up_s = statistics.median(ups)
        timeout = stack.timeouts.job
        if node:
            ranks = JobSpec(script="mpirun --allow-run-as-root -np 2 --map-by node "
                            "pytest-stacks-rank\n", backend_options={"shape": "mpijob",
                                                                     "workers": 2})
            timed_jobs(attached.client, [ranks], timeout)
            first_mpi_s = time.monotonic() - from_nothing
            starts = [pod_start(attached.client, timeout) for _ in range(args.jobs)]
        pods = timed_jobs(attached.client, [JobSpec(script="true\n")] * args.jobs, timeout)
        mpi = timed_jobs(attached.client, [JobSpec(script="true\n", backend_options={
            "shape": "mpijob", "workers": 2})] * args.jobs, timeout)
        mem = memory(attached.info.container)
        node_mem = node_memory(attached.info.container) if node else ""
    finally:
        problems = pool.teardown({stack.name: stack})
        shutil.rmtree(pool.ctx.run_dir, ignore_errors=True)
    label = "cold (node builds and images removed first)" if args.cold and node else (
        "built cold" if args.cold else "found (cached)")
    print(f"{args.stack}: programs {label} in {build_s:.1f} s; bring-up (images, start, "
          f"readiness, versions, probe) {up_s:.1f} s (median of "
          f"{', '.join(f'{u:.1f}' for u in ups)})")
    if node:
        print(f"  from nothing to the first MPIJob (mpirun, 2 ranks) Succeeded: "
              f"{first_mpi_s:.1f} s")
        print(f"  pod start latency, median of {args.jobs}: submit -> Running (client) "
              f"{statistics.median(s for s, _ in starts):.2f} s; creation -> container start "
              f"(kubelet, 1 s resolution) {statistics.median(k for _, k in starts):.1f} s")
        print(f"  node memory: {node_mem}")
    print(f"  submit -> Succeeded, median of {args.jobs}: pod {statistics.median(pods):.2f} s, "
          f"MPIJob (2 workers) {statistics.median(mpi):.2f} s")
    print(f"  memory of the running plane (docker stats): {mem}")
    if problems:
        sys.exit(f"teardown problems: {problems}")


if __name__ == "__main__":
    main()
