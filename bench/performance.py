"""Every performance target of the project, measured by its bench script, in one table.

Runs ``bench/fake_lane.py``, ``bench/kubernetes.py``, ``bench/kind.py``, ``bench/suites.py``
and ``bench/object_store.py``
(each as its own process, as a person would), reads the figures they print, and prints one
table: what, the target, what was measured, whether it is met. With ``--write`` the table
replaces the part of docs/performance.md between the two ``bench/performance.py`` markers, so
the page's figures are always the last ones measured, never typed by hand. A bench whose output
no longer carries a figure stops this script with the line it could not read: a table with a
hole is not written. Benchmarks print; tests never time. Needs Docker and Go (the real stacks).

    python bench/performance.py [--write] [--skip kind ...]
"""

from __future__ import annotations

import argparse
import re
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PAGE = ROOT / "docs" / "performance.md"
BEGIN = "<!-- bench/performance.py: begin -->"
END = "<!-- bench/performance.py: end -->"


@dataclass(frozen=True)
class Figure:
    what: str
    target: str
    measured: str
    met: bool


def _run(script: str, *args: str) -> str:
    result = subprocess.run([sys.executable, str(ROOT / "bench" / script), *args], cwd=ROOT,
                            capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"bench/{script} failed (exit {result.returncode}):\n"
                 f"{(result.stdout + result.stderr)[-3000:]}")
    return result.stdout


def _find(pattern: str, text: str, script: str, index: int = 0) -> tuple[str, ...]:
    found = re.findall(pattern, text, re.MULTILINE)
    if len(found) <= index:
        sys.exit(f"bench/{script} printed no line matching {pattern!r}:\n{text[-2000:]}")
    match = found[index]
    return match if isinstance(match, tuple) else (match,)


def fake_lane() -> list[Figure]:
    out = _run("fake_lane.py")
    [wall] = _find(r"process wall ([0-9.]+) s", out, "fake_lane.py")
    return [Figure("contract suite on every fake stack, process wall (`bench/fake_lane.py`)",
                   "< 2.5 s", f"{float(wall):.1f} s", float(wall) < 2.5)]


def kubernetes() -> list[Figure]:
    out = _run("kubernetes.py", "--jobs", "3")
    [up] = _find(r"bring-up \(images, start, readiness, versions, probe\) ([0-9.]+) s", out,
                 "kubernetes.py")
    return [Figure("`k8s-1.36-mpi-0.8` warm bring-up with its MPIJob probe "
                   "(`bench/kubernetes.py`)", "<= 6 s", f"{float(up):.1f} s", float(up) <= 6)]


def kind() -> list[Figure]:
    out = _run("kind.py", "--jobs", "3", "--warm-runs", "3")
    [first] = _find(r"warm, median of \d+: nothing -> first MPIJob Succeeded ([0-9.]+) s", out,
                    "kind.py")
    return [Figure("`kind-1.36-local-mpi-0.8`: nothing -> first MPIJob Succeeded, warm, median "
                   "of three (`bench/kind.py`)", "<= 35 s", f"{float(first):.1f} s",
                   float(first) <= 35)]


def suites() -> list[Figure]:
    out = _run("suites.py")
    figures = []
    for stack in ("htcondor-23.9", "htcondor-23.9-pool-ssh", "slurm-24.11"):
        [total] = _find(rf"^{re.escape(stack)}: wall [0-9.]+ s; \d+ tests, sum of test "
                        r"durations ([0-9.]+) s", out, "suites.py")
        figures.append(Figure(f"contract + backend suite on `{stack}`, sum of test durations "
                              "(`bench/suites.py`)", "<= 45 s", f"{float(total):.0f} s",
                              float(total) <= 45))
    for stack in ("htcondor-23.9", "htcondor-23.9-pool-ssh"):
        [ratio] = _find(rf"^{re.escape(stack)} / slurm-24.11, back to back: .* = ([0-9.]+)x",
                        out, "suites.py")
        figures.append(Figure(f"`pytest --stack={stack}` over `--stack=slurm-24.11`, back to "
                              "back (`bench/suites.py`)", "<= 1.5x", f"{float(ratio):.1f}x",
                              float(ratio) <= 1.5))
    return figures


def object_store() -> list[Figure]:
    out = _run("object_store.py", "--rounds", "3")
    figures = []
    for stack in ("slurm-24.11", "htcondor-23.9"):
        [added] = _find(rf"^{re.escape(stack)}: .* the store adds ([+-][0-9.]+) s", out,
                        "object_store.py")
        figures.append(Figure(f"what the object store adds to `{stack}`'s bring-up, median "
                              "(`bench/object_store.py`)", "<= 5 s", f"{float(added):+.1f} s",
                              float(added) <= 5))
    return figures


BENCHES: dict[str, Callable[[], list[Figure]]] = {
    "fake_lane": fake_lane, "kubernetes": kubernetes, "kind": kind, "suites": suites,
    "object_store": object_store}


def table(figures: list[Figure], measured_on: str) -> str:
    lines = [f"Measured {measured_on} by `python bench/performance.py --write` (2 cores, warm "
             "caches, the machine otherwise idle):", "",
             "| what | target | measured | met |", "|---|---|---|---|"]
    lines += [f"| {f.what} | {f.target} | {f.measured} | {'yes' if f.met else '**no**'} |"
              for f in figures]
    return "\n".join(lines)


def write_readme(text: str) -> None:
    readme = PAGE.read_text(encoding="utf-8")
    if readme.count(BEGIN) != 1 or readme.count(END) != 1:
        sys.exit(f"{PAGE}: needs exactly one {BEGIN!r} and one {END!r} line")
    head, rest = readme.split(BEGIN)
    _, tail = rest.split(END)
    PAGE.write_text(f"{head}{BEGIN}\n{text}\n{END}{tail}", encoding="utf-8")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__,
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--write", action="store_true", help="rewrite docs/performance.md's table")
    parser.add_argument("--skip", action="append", default=[], choices=sorted(BENCHES),
                        help="leave a bench out (not with --write: the table would lack it)")
    args = parser.parse_args()
    if args.write and args.skip:
        parser.error("--write measures every figure: drop --skip")
    figures: list[Figure] = []
    for name, bench in BENCHES.items():
        if name in args.skip:
            continue
        started = time.monotonic()
        figures += bench()
        print(f"(bench/{name}.py took {time.monotonic() - started:.0f} s)", file=sys.stderr)
    text = table(figures, time.strftime("%Y-%m-%d"))
    print(text)
    if args.write:
        write_readme(text)
        print(f"written to {PAGE}", file=sys.stderr)


if __name__ == "__main__":
    main()
