"""How long the real suites take on one stack, and how the backends compare.

For each stack (default: htcondor-23.9, htcondor-23.9-pool-ssh, slurm-24.11) it runs
`pytest --stack=X tests/contract tests/backend` once, alone, and prints
- the wall time of the whole process (bring-up, tests, teardown);
- the sum of the tests' own durations (pytest's `call` phase, bring-up excluded), against the
  target of at most 45 s per stack;
- the slowest tests;
and then each stack's wall time over the first Slurm stack's (target: at most 1.5x).
Benchmarks print; tests never time. Needs a Docker engine; images are built on first use.

    python bench/suites.py [STACK ...]
"""

from __future__ import annotations

import re
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable
DEFAULT = ["htcondor-23.9", "htcondor-23.9-pool-ssh", "slurm-24.11"]
SUITE_TARGET_S = 45.0
RATIO_TARGET = 1.5
# A test id may hold spaces (a parameter's id: "a missing object"), so the id is the rest.
_DURATION = re.compile(r"^([0-9.]+)s (call|setup|teardown)\s+(\S.*)$")


def run(stack: str) -> tuple[float, dict[str, float]]:
    """(process wall seconds, call seconds per test id)."""
    started = time.perf_counter()
    result = subprocess.run(
        [PY, "-m", "pytest", "tests/contract", "tests/backend", f"--stack={stack}", "-q",
         "-p", "no:randomly", "--durations=0", "--durations-min=0"],
        cwd=ROOT, capture_output=True, text=True, check=False)
    wall = time.perf_counter() - started
    if result.returncode != 0:
        sys.exit(f"pytest --stack={stack} failed (exit {result.returncode}):\n"
                 f"{result.stdout[-4000:]}")
    calls = {}
    for line in result.stdout.splitlines():
        match = _DURATION.match(line.strip())
        if match and match.group(2) == "call":
            calls[match.group(3)] = float(match.group(1))
    if not calls:
        sys.exit(f"pytest --stack={stack} printed no test durations:\n{result.stdout[-2000:]}")
    return wall, calls


def main() -> None:
    stacks = sys.argv[1:] or DEFAULT
    walls = {}
    for stack in stacks:
        wall, calls = run(stack)
        walls[stack] = wall
        total = sum(calls.values())
        verdict = "met" if total <= SUITE_TARGET_S else "NOT met"
        print(f"{stack}: wall {wall:.1f} s; {len(calls)} tests, sum of test durations "
              f"{total:.1f} s (target <= {SUITE_TARGET_S:.0f} s: {verdict})")
        for test, seconds in sorted(calls.items(), key=lambda kv: -kv[1])[:5]:
            print(f"    {seconds:6.1f} s  {test.split('::', 1)[-1]}")
    reference = next((s for s in stacks if s.startswith("slurm-")), None)
    if reference is None:
        return
    for stack in stacks:
        if stack == reference:
            continue
        ratio = walls[stack] / walls[reference]
        verdict = "met" if ratio <= RATIO_TARGET else "NOT met"
        print(f"{stack} / {reference}, back to back: {walls[stack]:.1f} s / "
              f"{walls[reference]:.1f} s = {ratio:.1f}x (target <= {RATIO_TARGET}x: {verdict})")


if __name__ == "__main__":
    main()
