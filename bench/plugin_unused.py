"""What a project that installs pytest-stacks but does not use it pays at collection.

Builds a throw-away project of many plain tests (no manifest, no stacks options), then collects
it with the plugin installed and with it disabled (``-p no:stacks``), alternating, and prints
the ratios of pytest's own collection time and of the whole process's wall time.
Target: collection-time ratio <= 1.02. Benchmarks print; tests never time.
"""

from __future__ import annotations

import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

FILES, TESTS_PER_FILE, REPEAT = 200, 20, 7


def make_project(root: Path) -> None:
    (root / "pytest.ini").write_text("[pytest]\n")
    body = "\n".join(f"def test_{i}():\n    assert {i} == {i}\n" for i in range(TESTS_PER_FILE))
    for index in range(FILES):
        (root / f"test_plain_{index}.py").write_text(body)


def collect(root: Path, *extra: str) -> tuple[float, float]:
    """(pytest's reported collection time, process wall time) of one --collect-only run."""
    started = time.perf_counter()
    result = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q",
                             "-p", "no:cacheprovider", *extra], cwd=root, capture_output=True,
                            text=True, check=False)
    wall = time.perf_counter() - started
    found = re.search(r"(\d+) tests? collected in ([0-9.]+)s", result.stdout)
    if result.returncode != 0 or found is None:
        sys.exit(f"collection failed ({result.returncode}):\n{result.stdout[-2000:]}")
    if int(found.group(1)) != FILES * TESTS_PER_FILE:
        sys.exit(f"collected {found.group(1)} tests, expected {FILES * TESTS_PER_FILE}")
    return float(found.group(2)), wall


def main() -> None:
    with tempfile.TemporaryDirectory(prefix="pytest-stacks-bench-") as folder:
        root = Path(folder)
        make_project(root)
        collect(root)  # warm the bytecode caches of both variants
        collect(root, "-p", "no:stacks")
        on: list[tuple[float, float]] = []
        off: list[tuple[float, float]] = []
        for _ in range(REPEAT):
            on.append(collect(root))
            off.append(collect(root, "-p", "no:stacks"))
    col_on, col_off = (statistics.median(c for c, _ in runs) for runs in (on, off))
    wall_on, wall_off = (statistics.median(w for _, w in runs) for runs in (on, off))
    ratio = col_on / col_off
    print(f"{FILES * TESTS_PER_FILE} plain tests, plugin installed but unused, median of "
          f"{REPEAT}:")
    print(f"  collection: {col_on:.3f} s with the plugin, {col_off:.3f} s without; ratio "
          f"{ratio:.3f} (target <= 1.02: {'met' if ratio <= 1.02 else 'NOT met'})")
    print(f"  process wall (interpreter start and plugin import included): {wall_on:.3f} s vs "
          f"{wall_off:.3f} s; ratio {wall_on / wall_off:.3f}")


if __name__ == "__main__":
    main()
