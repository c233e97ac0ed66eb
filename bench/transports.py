"""Bring-up per configuration and per-job latency per transport, as ratios, in one run.

For each stack (default: slurm-26.05 single-node over `local`, the cluster over `ssh`, the
cluster over `ssh` through a jump host) it brings the stack up through the harness (the same
pool pytest uses: bring-up, readiness, version check, probe job), then times one-job round
trips (submit `true`, wait until completed) and a status query, and tears it down. Printed:
bring-up seconds, median job round trip and status latency, and each as a ratio to `local`.
Benchmarks print; tests never time. Needs a Docker engine and the images built once.
"""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_stacks.contract import JobSpec, submitted, wait_for  # noqa: E402
from pytest_stacks.lifecycle import StackPool, new_run_id  # noqa: E402
from pytest_stacks.manifest import load  # noqa: E402
from pytest_stacks.providers.base import RunContext  # noqa: E402

DEFAULT = ["slurm-26.05", "slurm-26.05-cluster-ssh", "slurm-26.05-cluster-jump"]
ROUNDS = 10


def measure(name: str) -> tuple[float, float, float]:
    """(bring-up s, median job round trip s, median status query s)."""
    stack = load(ROOT / "manifest.yaml").get(name)
    run_id = new_run_id()
    folder = Path(tempfile.mkdtemp(prefix="bench-transports-"))
    pool = StackPool(RunContext.for_this_process(run_id, folder / run_id))
    try:
        started = time.monotonic()
        attached = pool.acquire(stack)
        bring_up = time.monotonic() - started
        client = attached.client
        trips, queries = [], []
        for _ in range(ROUNDS):
            started = time.monotonic()
            handles = submitted(client.submit([JobSpec(script="true\n", name="bench")]))
            wait_for(client, handles, timeout=stack.timeouts.job)
            trips.append(time.monotonic() - started)
            started = time.monotonic()
            client.status(handles)
            queries.append(time.monotonic() - started)
        return bring_up, statistics.median(trips), statistics.median(queries)
    finally:
        problems = pool.teardown({stack.name: stack})
        if problems:
            print(f"{name}: teardown problems: {problems}", file=sys.stderr)


def main() -> None:
    names = sys.argv[1:] or DEFAULT
    results = {name: measure(name) for name in names}
    base = results[names[0]]
    for name, (up, trip, query) in results.items():
        print(f"{name}: bring-up {up:.1f} s ({up / base[0]:.2f}x), job round trip "
              f"{trip:.2f} s ({trip / base[1]:.2f}x), status query {query * 1000:.0f} ms "
              f"({query / base[2]:.2f}x)  [ratios to {names[0]}]")


if __name__ == "__main__":
    main()
