"""The whole real window of this machine in one run, against the sum of single-stack runs.

Prints, for the stacks given (default: the four Slurm stacks and HTCondor 23.9):
- each single-stack run (`pytest tests/contract tests/backend --stack=X`), as a CI matrix job
  runs it, and their sum;
- the whole window in one run, with the stacks coming up concurrently (--stack-parallel) and
  the tests spread over xdist workers, once test by test (`--dist load`) and once a stack's
  tests kept on one worker (`--stack-group`);
- the ratios window / sum (target <= 0.5 on a 2-core machine).
Every run must pass; a failing run aborts the benchmark (a fast red run proves nothing).
Benchmarks print; tests never time. Needs a Docker engine and the stack images built once.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
DEFAULT = ["slurm-20.11", "slurm-22.05", "slurm-24.11", "slurm-26.05", "htcondor-23.9"]
TESTS = ["tests/contract", "tests/backend"]


def timed(args: list[str]) -> float:
    started = time.monotonic()
    result = subprocess.run([PY, "-m", "pytest", *TESTS, "-q", "-p", "no:randomly", *args],
                            cwd=ROOT, capture_output=True, text=True, check=False)
    took = time.monotonic() - started
    if result.returncode != 0:
        sys.exit(f"pytest {' '.join(args)} failed (exit {result.returncode}):\n"
                 f"{result.stdout[-4000:]}\n{result.stderr[-2000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stacks", nargs="*", default=DEFAULT)
    parser.add_argument("-n", "--workers", type=int, default=4,
                        help="xdist workers for the window run (default 4)")
    parser.add_argument("--no-sequential", action="store_true",
                        help="skip the one-process, one-stack-at-a-time run")
    args = parser.parse_args()
    selection = [f"--stack={s}" for s in args.stacks]
    timed([*selection, "--co"])  # warm imports; builds nothing (collect-only starts nothing)
    singles = {}
    for stack in args.stacks:
        singles[stack] = timed([f"--stack={stack}"])
        print(f"single run {stack}: {singles[stack]:.1f} s", flush=True)
    total = sum(singles.values())
    print(f"sum of single-stack runs: {total:.1f} s", flush=True)
    for how in (["--dist", "load"], ["--stack-group"]):
        window = timed([*selection, "-n", str(args.workers), *how])
        ratio = window / total
        print(f"whole window in one run (-n {args.workers} {' '.join(how)}): {window:.1f} s; "
              f"ratio to the sum {ratio:.2f} (target <= 0.5: "
              f"{'met' if ratio <= 0.5 else 'NOT met'})", flush=True)
    if args.no_sequential:
        return
    sequential = timed([*selection, "--stack-parallel", "1"])
    print(f"whole window in one process, stacks one after another (--stack-parallel 1, no "
          f"xdist): {sequential:.1f} s; ratio {sequential / total:.2f}", flush=True)


if __name__ == "__main__":
    main()
