"""Fake-lane wall time and the plugin's collection overhead, measured in one run.

Prints: the contract suite's wall time on every fake stack, and the ratio of collection time
with the plugin over collection time without it (``-p no:stacks``) on the same test files.
Benchmarks print; tests never time.
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PY = sys.executable


def timed(args: list[str], repeat: int = 3) -> float:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        result = subprocess.run([PY, "-m", "pytest", *args], cwd=ROOT, capture_output=True,
                                text=True, check=False)
        samples.append(time.perf_counter() - started)
        if result.returncode not in (0, 5):
            sys.exit(f"pytest {' '.join(args)} failed:\n{result.stdout[-3000:]}")
    return statistics.median(samples)


def main() -> None:
    lane = timed(["tests/contract", "-q", "-p", "no:randomly"], repeat=3)
    files = ["tests/unit", "tests/contract"]
    with_plugin = timed([*files, "--collect-only", "-q"], repeat=5)
    without = timed([*files, "--collect-only", "-q", "-p", "no:stacks",
                     "--deselect", "tests/contract"], repeat=5)
    print(f"fake lane (contract suite on every fake stack): {lane:.2f} s wall "
          f"(target < 3 s: {'met' if lane < 3 else 'NOT met'})")
    print(f"collection with plugin: {with_plugin:.2f} s; without (-p no:stacks): {without:.2f} s;"
          f" ratio {with_plugin / without:.2f}")


if __name__ == "__main__":
    main()
