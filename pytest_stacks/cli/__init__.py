"""``pytest-stacks``: one thin command line over the same library the plugin uses.

One parser, and one place (:data:`EXIT_CODES`) that turns the library's errors into a message
and an exit code: no command prints a traceback or picks its own code.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Sequence

from pytest_stacks import extras, progress
from pytest_stacks.ci import EMPTY_LANE_EXIT, EmptyLaneError
from pytest_stacks.cli import login, parity, planning, report, stacks
from pytest_stacks.errors import (
    InfrastructureError,
    ManifestError,
    StacksError,
    UnknownStackError,
    redact,
)
from pytest_stacks.verdicts.results import ResultsError

#: The one table of exit codes (docs/getting-started.md#exit-codes shows it beside pytest's):
#: the same error exits with the same code under pytest and here.
EXIT_CODES: tuple[tuple[type[BaseException], int], ...] = (
    (EmptyLaneError, EMPTY_LANE_EXIT),  # the lane is empty: nothing to run, said as such
    (ManifestError, 4),  # as pytest: a usage error
    (UnknownStackError, 4),  # as pytest's --stack=NAME: a usage error
    (ResultsError, 4),  # a results file that cannot be read: bad input, as a manifest
    (InfrastructureError, 3),
    (StacksError, 2),
    (KeyboardInterrupt, 130),
)


#: What ``--help`` says (plain text: the module's docstring is for readers of the code).
DESCRIPTION = ("The pytest-stacks command line: list and show the stacks of the manifest, check "
               "what they need (doctor), bring them up and down outside a pytest run, plan CI "
               "lanes, and merge results files into a compatibility table.")
EPILOG = ("Exit codes: the same as pytest's for the same error (4: bad input such as a "
          "manifest or a stack name; 3: an infrastructure error); 141 when the reader of its "
          "output went away (a closed pipe). The full table: the user's guide, Exit codes.")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="pytest-stacks", description=DESCRIPTION,
                                     epilog=EPILOG)
    from importlib import metadata

    parser.add_argument("--version", action="version",
                        version=f"pytest-stacks {metadata.version('pytest-stacks')}")
    parser.add_argument("--manifest", default=None, metavar="PATH",
                        help="manifest path (default: ./manifest.yaml if it is a pytest-stacks "
                             "manifest, else the stack catalogue shipped with pytest-stacks)")
    sub = parser.add_subparsers(dest="command", required=True)
    stacks.register(sub)
    planning.register(sub)
    report.register(sub)
    parity.register(sub)
    login.register(sub)
    for command in sub.choices.values():
        # Every --help says what the command is for, beyond its one-line summary at least.
        if not command.description:
            command.description = next(
                (a.help for a in sub._choices_actions if a.dest == command.prog.split()[-1]),
                None)
    return parser


def describe(command: str, exc: BaseException) -> str:
    """The message a person reads for ``exc``: what went wrong, without a traceback, and
    without any credential it may quote (:func:`~pytest_stacks.errors.redact`)."""
    return redact(_described(command, exc))


def _described(command: str, exc: BaseException) -> str:
    if isinstance(exc, ManifestError):
        if len(exc.problems) == 1:
            return f"pytest-stacks {command}: invalid manifest: {exc.problems[0]}"
        return f"pytest-stacks {command}: invalid manifest:\n" + "\n".join(exc.problems)
    if isinstance(exc, InfrastructureError):
        text = f"pytest-stacks {command}: INFRASTRUCTURE ERROR: {exc}"
        return text + (f"\n{exc.logs[-5000:]}" if exc.logs else "")
    if isinstance(exc, StacksError):
        return f"pytest-stacks {command}: {exc}"
    if isinstance(exc, KeyboardInterrupt):
        return f"pytest-stacks {command}: interrupted"
    if isinstance(exc, ModuleNotFoundError) and exc.name:
        said = extras.missing_module_message(exc.name)
        if said:
            return f"pytest-stacks {command}: {said}"
    return f"pytest-stacks {command} failed: {type(exc).__name__}: {exc}"


def exit_code(exc: BaseException) -> int:
    for kind, code in EXIT_CODES:
        if isinstance(exc, kind):
            return code
    return 1  # an engine or OS error


#: A reader that stopped reading (``pytest-stacks matrix | head``): what a shell reports for
#: a program ended by SIGPIPE (128 + 13), and nothing printed about it.
BROKEN_PIPE_EXIT = 141


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code = int(args.func(args))
        sys.stdout.flush()  # a closed pipe shows here, not as a traceback at exit
    except BrokenPipeError:
        _quiet_stdout()
        return BROKEN_PIPE_EXIT
    except (Exception, KeyboardInterrupt) as exc:
        print(describe(args.command, exc), file=sys.stderr)
        code = exit_code(exc)
    for lost in progress.lost_writes():  # evidence that did not land fails the command too
        print(f"pytest-stacks {args.command}: {lost}", file=sys.stderr)
        code = code or 1
    return code


def _quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush at exit does not raise a
    second BrokenPipeError (the way the Python docs advise for SIGPIPE)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass
    finally:
        os.close(devnull)


if __name__ == "__main__":
    sys.exit(main())
