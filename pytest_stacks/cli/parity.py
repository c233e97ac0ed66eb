"""``record``: a real stack's exchanges with the reference driver, recorded for the fakes'
parity check (``tests/parity``), written beside the parity file the fakes are checked with.

It is a pytest run of the parity test on that one stack (the stack comes up, is proven, and
goes down as in any run); the test writes the recording before it compares the fakes that
claim the stack, so a new daemon's recording is kept even when a fake no longer matches it.

Only a real stack is recorded: a fake is what recordings hold to account, so ``record`` on one
is refused before anything starts (and an unknown name, as under pytest's ``--stack``).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from pytest_stacks.cli.common import manifest, manifest_path
from pytest_stacks.errors import StacksError, UnknownStackError
from pytest_stacks.selection import unknown_stack_message

#: Where a user reads how to check their own double against a real stack.
PARITY_DOCS = "the user's guide (docs/user-guide.md#your-own-fake-checked-against-a-real-stack)"


def cmd_record(args: argparse.Namespace) -> int:
    loaded = manifest(args)
    if args.name not in loaded.names():
        raise UnknownStackError(unknown_stack_message(args.name, loaded.names(), loaded))
    tests = Path(args.tests)
    parity_file = tests / "parity.yaml"
    if loaded.get(args.name).provider == "fake":
        paired = (f"the real stack it is paired with in {parity_file}" if parity_file.is_file()
                  else "a real stack")
        raise StacksError(f"{args.name} is a fake stack: a recording is a real daemon's "
                          f"answers, which the fakes are checked against, so nothing was "
                          f"started. Record {paired} instead")
    if not parity_file.is_file():
        raise StacksError(
            f"{parity_file} does not exist: `record` runs your parity test on the stack, and "
            f"--tests names its folder (a parity test beside a parity.yaml pairing your fake "
            f"with a real stack; {PARITY_DOCS} says how to write one), so nothing was started")
    target = Path(args.to) if args.to else tests / "recordings"
    env = {**os.environ, "PYTEST_STACKS_RECORD_TO": str(target.resolve())}
    command = [sys.executable, "-m", "pytest", str(tests), f"--stack={args.name}",
               f"--stack-manifest={manifest_path(args)}", "-p", "no:randomly", "-q",
               "--stack-results", str(Path(".pytest-stacks") / f"record-{args.name}.json")]
    print(f"pytest-stacks record: {' '.join(command[2:])}", flush=True)
    written = target / f"{args.name}.json"
    before = _version(written)
    code = subprocess.call(command, env=env)
    if _version(written) in (None, before):
        # Every test skipped, or none ran: a success that recorded nothing is not one.
        raise StacksError(f"recorded nothing: {written} was not written by this run "
                          f"(pytest exit {code}; see its output above: a skip says why). "
                          f"Check that {args.name} is a real stack a parity test in "
                          f"{tests} records, and that its recording goes to --to")
    print(f"pytest-stacks record: {written}")
    return code


def _version(path: Path) -> tuple[int, int, int] | None:
    """Which file ``path`` is now (inode, size, modification time), or None when absent: a
    recording written by this run differs from the one before it."""
    try:
        info = path.stat()
    except OSError:
        return None
    return info.st_ino, info.st_size, info.st_mtime_ns


def register(sub: Any) -> None:
    p = sub.add_parser("record", help="record a real stack's exchanges for a parity check of "
                                      "a fake (written to TESTS/recordings/NAME.json)")
    p.add_argument("name", metavar="NAME", help="a real stack of the manifest")
    p.add_argument("--tests", default="tests/parity",
                   help="the folder holding your parity test and its parity.yaml "
                        "(default: tests/parity)")
    p.add_argument("--to", default=None, metavar="DIR",
                   help="where the recording goes (default: TESTS/recordings)")
    p.set_defaults(func=cmd_record)
