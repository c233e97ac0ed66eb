"""Preparing stacks ahead of a run: what their bring-up builds (images, Go programs), built
now, several at once, nothing started. ``pytest-stacks build`` is its command line; CI starts
the Go programs while the machine is still being set up (they need no engine).
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pytest_stacks import cancellation, gobuild, progress
from pytest_stacks.lifecycle.rundir import new_run_id
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import provider_for
from pytest_stacks.providers.base import RunContext

#: The Go builds that take longest on a new machine start first (name prefixes).
LONGEST_FIRST = ("kubernetes-v", "mpi-operator-", "kwok-", "coredns-", "cri-tools-",
                 "etcd-", "kubernetes-node-", "kubernetes-kubeadm-", "kind-")


def build_stacks(stacks: Sequence[Stack]) -> dict[str, str]:
    """Everything each stack's bring-up makes before it starts anything; builds shared by
    several stacks run once (their locks). Returns the failures, by stack name."""
    with tempfile.TemporaryDirectory(prefix="pytest-stacks-build-") as folder:
        ctx = RunContext.for_this_process(new_run_id(), Path(folder))

        def build(stack: Stack) -> Callable[[], None]:
            def run() -> None:
                with progress.for_stack(stack.name), progress.step("build"):
                    provider_for(stack).build(stack, ctx)
            return run

        return _in_parallel({s.name: build(s) for s in stacks}, workers=min(len(stacks), 8))


def build_programs(stacks: Sequence[Stack]) -> dict[str, str]:
    """Only the Go programs of these stacks, each once, three at a time, the longest first
    (the control planes of a three-version window all start at once: the builds that come
    after them, their versions' nodes and kwok, wait for them either way).
    Returns the failures, by build name (every build's name is in the progress lines)."""
    wanted: dict[str, gobuild.GoModuleBuild] = {}
    for stack in stacks:
        for program in provider_for(stack).programs(stack):
            wanted.setdefault(program.name, program)

    def rank(name: str) -> int:
        return next((i for i, prefix in enumerate(LONGEST_FIRST) if name.startswith(prefix)),
                    len(LONGEST_FIRST))

    def job(program: gobuild.GoModuleBuild) -> Callable[[], None]:
        def run() -> None:
            gobuild.ensure_built(program)
        return run

    return _in_parallel({name: job(wanted[name]) for name in sorted(wanted, key=rank)},
                        workers=3)


def _in_parallel(jobs: Mapping[str, Callable[[], None]], workers: int) -> dict[str, str]:
    """Run the jobs in threads; an interrupt kills the children they started (cancellation)
    before the threads are joined. Returns each failed job's error, by name."""
    failed: dict[str, str] = {}
    try:
        with ThreadPoolExecutor(max_workers=max(1, workers),
                                thread_name_prefix="pytest-stacks-build") as pool:
            futures = {name: pool.submit(job) for name, job in jobs.items()}
            try:
                for name, future in futures.items():
                    try:
                        future.result()
                    except Exception as exc:
                        failed[name] = str(exc)
            except KeyboardInterrupt:
                cancellation.cancel()
                raise
    finally:
        cancellation.reset()
    return failed
