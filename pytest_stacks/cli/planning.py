"""``matrix`` and ``window``: the CI plan, printed or handed to GitHub Actions."""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_stacks import ci
from pytest_stacks.cli.common import manifest
from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import LANES


def write_github_output(values: Mapping[str, str]) -> None:
    """Append ``key=value`` lines to ``$GITHUB_OUTPUT`` (set by GitHub Actions)."""
    target = os.environ.get("GITHUB_OUTPUT")
    if not target:
        raise StacksError("--format github appends to $GITHUB_OUTPUT, which is not set "
                          "(use --format json outside GitHub Actions)")
    with open(target, "a", encoding="utf-8") as out:
        for key, value in values.items():
            if "\n" in value:  # pragma: no cover - every value here is one line
                raise ValueError(f"{key}: multi-line output value")
            out.write(f"{key}={value}\n")


def cmd_matrix(args: argparse.Namespace) -> int:
    loaded = manifest(args)
    if args.format == "github" and not os.environ.get("GITHUB_OUTPUT"):
        write_github_output({})  # raises the clear error before any work
    host = None
    if args.runnable_here:
        from pytest_stacks.doctor import host_offers

        host = host_offers()
    try:
        result = ci.matrix(loaded, args.lane, args.tests, host, project=Path.cwd())
    except ci.EmptyLaneError:
        if args.format == "github":
            write_github_output({"has_rows": "false", "count": "0"})
        raise
    encoded = json.dumps(result, separators=(",", ":"), sort_keys=False)
    if args.format in ("json", "names"):
        text = encoded if args.format == "json" else "\n".join(
            r["stack"] for r in result["include"])
        if args.output:
            Path(args.output).write_text(text + "\n", encoding="utf-8")
        else:
            print(text)
        return 0
    rows = result["include"]
    write_github_output({"matrix": encoded, "has_rows": "true", "count": str(len(rows))})
    print(f"{args.lane} lane: {len(rows)} job(s): " + ", ".join(r["stack"] for r in rows))
    return 0


def cmd_window(args: argparse.Namespace) -> int:
    sys.stdout.write(ci.window_markdown(manifest(args)))
    return 0


def register(subparsers: Any) -> None:
    m = subparsers.add_parser(
        "matrix", help="print a lane's GitHub Actions matrix",
        description="Print the GitHub Actions matrix {\"include\": [...]} of a lane: pr (leading "
                    "edge plus one anchor per backend), full (the whole window), canary (every "
                    "stack with a floating reference). Each row carries what binds its job's "
                    "results: the commit and code of this checkout (the current folder), the "
                    "manifest's digest, the stack's inputs digest and the plan (the digest of "
                    "all rows), which the report recomputes. Exit 3 when the lane is empty.")
    m.add_argument("--lane", required=True, choices=LANES, help="the lane to plan")
    m.add_argument("--tests", default="", metavar="TEXT",
                   help="what pytest runs on each stack: paths (or node ids), -k and -m (e.g. "
                        "'tests/contract tests/backend'); carried in every row, and a job's "
                        "results stand in the report only for exactly this scope or the whole "
                        "suite. Default: the project's own default tests")
    m.add_argument("--runnable-here", action="store_true",
                   help="only the stacks whose requires (docker, go, registry, kind) this "
                        "machine offers now")
    m.add_argument("--format", choices=("json", "names", "github"), default="json",
                   help="json: print it; names: one stack name per line; github: append "
                        "matrix=, has_rows=, count= to $GITHUB_OUTPUT")
    m.add_argument("--output", default=None, metavar="PATH",
                   help="write json or names to PATH instead of printing it")
    m.add_argument("--manifest", default=argparse.SUPPRESS, metavar="PATH",
                   help="manifest to read (default: as for pytest-stacks --manifest)")
    m.set_defaults(func=cmd_matrix)
    w = subparsers.add_parser(
        "window", help="print the support window per backend as a Markdown table",
        description="Print each backend's support window (anchor to leading edge, the stacks "
                    "that cover it and their roles) as a Markdown table, as the README shows "
                    "it.")
    w.add_argument("--manifest", default=argparse.SUPPRESS, metavar="PATH",
                   help="manifest to read (default: as for pytest-stacks --manifest)")
    w.set_defaults(func=cmd_window)
