"""What the object store adds to a stack's start, measured.

For each stack (default: slurm-24.11 htcondor-23.9) it brings the stack up and down
``--rounds`` times as the manifest declares it (with ``options.object_store``) and as many
times without the store, alternating, through the plugin's own pool (build caches warm:
the first round of each kind is a warm-up and not counted). Prints the median bring-up of each
and the difference against the target (the store adds at most 5 s). Benchmarks print; tests
never time. Needs Docker and Go.
"""

from __future__ import annotations

import argparse
import dataclasses
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from pytest_stacks.lifecycle import StackPool, new_run_id, runs_root  # noqa: E402
from pytest_stacks.manifest import Stack, load  # noqa: E402
from pytest_stacks.providers import object_store  # noqa: E402
from pytest_stacks.providers.base import RunContext  # noqa: E402

TARGET_S = 5.0


def bring_up(stack: Stack) -> float:
    run_id = new_run_id()
    pool = StackPool(RunContext.for_this_process(run_id, runs_root() / run_id))
    try:
        started = time.monotonic()
        pool.acquire(stack)
        return time.monotonic() - started
    finally:
        problems = pool.teardown({stack.name: stack})
        shutil.rmtree(pool.ctx.run_dir, ignore_errors=True)
        if problems:
            sys.exit(f"teardown of {stack.name} failed: {problems}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("stacks", nargs="*", default=["slurm-24.11", "htcondor-23.9"])
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    manifest = load(ROOT / "manifest.yaml")
    for name in args.stacks:
        stack = manifest.get(name)
        if object_store.config_of(stack) is None:
            sys.exit(f"{name} has no options.{object_store.OPTION}")
        bare = dataclasses.replace(stack, options={k: v for k, v in stack.options.items()
                                                   if k != object_store.OPTION})
        times: dict[str, list[float]] = {"with": [], "without": []}
        for round_ in range(args.rounds + 1):
            for kind, variant in (("with", stack), ("without", bare)):
                took = bring_up(variant)
                if round_:  # the first of each is a warm-up (images, programs)
                    times[kind].append(took)
        with_s, without_s = (statistics.median(times[k]) for k in ("with", "without"))
        added = with_s - without_s
        print(f"{name}: bring-up with the store {with_s:.1f} s, without {without_s:.1f} s "
              f"(medians of {args.rounds}): the store adds {added:+.1f} s, target <= "
              f"{TARGET_S:.0f} s: {'met' if added <= TARGET_S else 'MISSED'}")


if __name__ == "__main__":
    main()
