"""``report``: the results files of a lane's jobs (or one job's), merged into one compatibility
table, with an exit code that is 0 only when the table is green.

The table is written even when it is not green: the people who have to fix it need to see it.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

from pytest_stacks.cli.common import manifest, manifest_path
from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import LANES
from pytest_stacks.verdicts import merge, render
from pytest_stacks.verdicts.results import ResultsDoc, ResultsError, load, write_atomic

NOT_GREEN_EXIT = 1


def load_all(paths: list[str]) -> list[ResultsDoc]:
    """Every file, or one ResultsError with the problems of all bad ones: fixing them one run
    at a time would take as many runs as there are bad files."""
    docs, problems = [], []
    for path in paths:
        try:
            docs.append(load(path))
        except ResultsError as exc:
            problems.extend(exc.problems)
    if problems:
        raise ResultsError(problems)
    return docs


def _not_an_input(output: Path, inputs: list[str]) -> None:
    """Refuse an ``--output`` that is one of the report's own inputs (the same file by any
    name: a symlink, a hard link, ``./x/../``): the report would replace what it was made
    from, and the next report would read a table as results."""
    for given in inputs:
        if _same_file(output, Path(given)):
            raise StacksError(f"--output {output} is {given}, one of this report's own inputs; "
                              f"writing the report there would destroy it. Write the report "
                              f"to another file.")


def _same_file(a: Path, b: Path) -> bool:
    try:
        return os.path.samefile(a, b)
    except OSError:  # one of them does not exist (yet): the same only by name
        return os.path.realpath(a) == os.path.realpath(b)


def cmd_report(args: argparse.Namespace) -> int:
    if args.single and (args.lane or args.matrix):
        raise StacksError("--single summarises one job without a lane: drop --lane/--matrix, "
                          "or drop --single to check a lane's coverage")
    if not (args.single or args.lane or args.matrix):
        raise StacksError("say what the results must cover: --lane pr|full|canary, --matrix "
                          "FILE (as `pytest-stacks matrix` printed it), or --single for one "
                          "job's own summary")
    if args.tests is not None and not args.single:
        raise StacksError("--tests names one job's planned scope: use it with --single (a "
                          "lane's matrix already carries each row's tests)")
    if args.output:
        _not_an_input(Path(args.output), [*args.results, *([args.matrix] if args.matrix else []),
                                          str(manifest_path(args))])
    docs = load_all(args.results)
    loaded = manifest(args)
    project = Path(args.project)
    if not project.is_dir():
        raise StacksError(f"--project {args.project}: not a folder; pass the checkout the jobs "
                          f"tested (default: the current folder)")
    expected = None
    if args.matrix:
        expected = merge.expected_from_matrix(Path(args.matrix), args.lane, loaded, project)
    elif args.lane:
        expected = merge.expected_from_lane(loaded, args.lane, project)
    model = merge.merge(docs, manifest=loaded, expected=expected,
                        planned_tests=args.tests, project=project)
    text = render.render(model, args.format)
    if args.output:
        write_atomic(Path(args.output), text, what="report")
    else:
        sys.stdout.write(text)
    if args.output or args.format != "markdown":  # else the problems are in what was printed
        print(f"pytest-stacks report: {render.overall(model)}", file=sys.stderr)
        for problem in model.problems:
            print(f"  {problem}", file=sys.stderr)
    return 0 if model.green else NOT_GREEN_EXIT


def register(subparsers: Any) -> None:
    r = subparsers.add_parser(
        "report", help="merge results files into one compatibility table",
        description="Merge the results files that pytest runs with stacks wrote into one "
                    "compatibility table (backends and versions by capabilities). Always "
                    "strict: a capability no passing test proved is a problem whatever "
                    "--stack-unproven the run used. Fails closed: "
                    "exit 0 only when every stack the lane (or matrix) expects is reported "
                    "exactly once, with the manifest's pins, from a whole run of this "
                    "commit's code and inputs as its plan's job, and passed; exit "
                    f"{NOT_GREEN_EXIT} otherwise (the table and its problems are still written); "
                    "exit 4 for an unreadable or invalid results file. Fake stacks are accepted "
                    "as extra rows without being expected.")
    r.add_argument("results", nargs="+", metavar="RESULTS",
                   help="results JSON files (one per job; shell globs welcome)")
    r.add_argument("--lane", choices=LANES, default=None,
                   help="the lane whose rows the results must cover exactly (from the manifest)")
    r.add_argument("--matrix", default=None, metavar="FILE",
                   help="the matrix JSON the jobs ran from ({\"include\": rows}, as "
                        "`pytest-stacks matrix` prints it); it must be the lane the manifest "
                        "plans on this checkout, and its rows must be covered exactly")
    r.add_argument("--single", action="store_true",
                   help="one job's own summary: no coverage check, but still not green unless "
                        "every stack passed")
    r.add_argument("--tests", default=None, metavar="SCOPE",
                   help="with --single: the scope the job's plan named (its matrix row's "
                        "tests), so a job that ran exactly that is whole, not partial")
    r.add_argument("--format", choices=render.FORMATS, default="markdown",
                   help="markdown (for $GITHUB_STEP_SUMMARY; the default), html (one "
                        "self-contained page) or json")
    r.add_argument("--output", default=None, metavar="FILE",
                   help="write the table here (atomically) instead of to stdout; the verdict "
                        "and the problems then go to stderr")
    r.add_argument("--project", default=".", metavar="DIR",
                   help="the checkout the jobs tested (default: the current folder): its "
                        "commit, code and stack folders are what every results file and the "
                        "matrix must have been made from")
    r.add_argument("--manifest", default=argparse.SUPPRESS, metavar="PATH",
                   help="manifest to read (default: as for pytest-stacks --manifest)")
    r.set_defaults(func=cmd_report)
