"""``pytest-stacks exec NAME -- COMMAND...`` and ``pytest-stacks shell NAME``: a person at the
login host of a stack kept by ``pytest-stacks up``, the way the ``stack_commands`` fixture's
shims reach it (same user, same route, same shared folder)."""

from __future__ import annotations

import argparse
import shutil
import tempfile
from pathlib import Path
from typing import Any

from pytest_stacks import places
from pytest_stacks.cli.common import manifest
from pytest_stacks.errors import StacksError
from pytest_stacks.lifecycle.rundir import StackFiles
from pytest_stacks.login.commands import LoginCommands, open_commands
from pytest_stacks.manifest import Stack
from pytest_stacks.providers.base import StackInfo
from pytest_stacks.selection import select


def _stack(args: argparse.Namespace) -> Stack:
    chosen = select(manifest(args), [args.name])
    if len(chosen) != 1:
        raise StacksError(f"{args.name!r} matches {len(chosen)} stacks; name exactly one")
    stack = chosen[0]
    if stack.is_fake:
        raise StacksError(
            f"{stack.name} is an in-process fake: it lives inside the test process that made "
            f"it and ends with it, so there is no login host for `{args.command}` to reach "
            f"from here. Its commands work inside a test: the stack_commands fixture "
            f"(pytest --stack={stack.name}), see docs/your-own-client.md.")
    return stack


def _kept_info(stack: Stack) -> StackInfo:
    for kept in places.kept_runs().values():
        if stack.name not in kept["stacks"] or not kept["run_dir"]:
            continue
        try:
            record = StackFiles(Path(kept["run_dir"]), stack.name).record()
        except (OSError, ValueError, KeyError):
            continue
        if record is not None:
            return record.info
    raise StacksError(f"no kept stack {stack.name}: bring it up and keep it first with "
                      f"`pytest-stacks up {stack.name}`")


def _with_commands(args: argparse.Namespace, use: Any) -> int:
    stack = _stack(args)
    info = _kept_info(stack)
    folder = Path(tempfile.mkdtemp(prefix=f"pytest-stacks-{stack.name}-"))
    try:
        commands: LoginCommands = open_commands(stack, info, None, folder / "login")
        try:
            return int(use(commands))
        finally:
            commands.close()
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def cmd_exec(args: argparse.Namespace) -> int:
    argv = list(args.argv)
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        raise StacksError("name the command to run: pytest-stacks exec NAME -- sbatch job.sh")
    return _with_commands(args, lambda commands: commands.run(argv))


def cmd_shell(args: argparse.Namespace) -> int:
    return _with_commands(args, lambda commands: commands.shell())


def register(sub: Any) -> None:
    run = sub.add_parser("exec", help="run a command on a kept stack's login host", description=(
        "Run one command on the login host of a stack kept by `pytest-stacks up`, as its "
        "login user, the way the stack_commands fixture does (docker exec, or the stack's "
        "pinned ssh route): stdin, stdout, stderr and the exit code are the command's. The "
        "stack's shared folder (`shared` in `up`'s output) is the same path on both sides; "
        "from anywhere else the command runs in the login user's home. A fake is refused: it "
        "lives in its test process."))
    run.add_argument("name")
    run.add_argument("argv", nargs=argparse.REMAINDER, metavar="-- COMMAND ...")
    run.set_defaults(func=cmd_exec)
    shell = sub.add_parser("shell", help="a login shell on a kept stack's login host",
                           description=(
        "Open an interactive login shell on the login host of a stack kept by `pytest-stacks "
        "up`, as its login user, the way its commands go (docker exec -it, or ssh -t through "
        "the pinned route). A fake is refused: it lives in its test process."))
    shell.add_argument("name")
    shell.set_defaults(func=cmd_shell)
