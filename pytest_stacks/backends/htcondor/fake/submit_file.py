"""A submit file, read as ``condor_submit`` reads one, into the description the fake schedd takes.

The submit language the fake models: ``key = value`` commands (keys are case-insensitive;
``+Attr``/``MY.Attr`` set a job attribute), ``#`` comment lines, a trailing ``\\`` continuing a
line, ``$(Cluster)``/``$(Process)`` macros (expanded by the schedd's submit model), and one
``queue [N]`` statement (the commands after it are ignored, as condor_submit ignores commands
that no later ``queue`` uses). ``queue ... in/from/matching`` and several ``queue`` statements
are refused by name: the fake does not model them, and a silently different job count would
be a lie.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_QUEUE = re.compile(r"^queue(?:\s+(.*))?$", re.IGNORECASE)
_COMMAND = re.compile(r"^([+A-Za-z_][A-Za-z0-9_.+]*)\s*=\s?(.*)$")


class SubmitFileError(Exception):
    """A submit file the fake's condor_submit refuses; ``str()`` is what it prints."""


@dataclass(frozen=True)
class SubmitFile:
    description: dict[str, str]
    count: int


def _lines(text: str) -> list[tuple[int, str]]:
    out: list[tuple[int, str]] = []
    pending = ""
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.strip() if pending else raw.rstrip()
        if not pending:
            start = number
        if line.endswith("\\"):
            pending += line[:-1].rstrip() + " "
            continue
        out.append((start, (pending + line).strip()))
        pending = ""
    if pending:
        out.append((start, pending.strip()))
    return out


def read_submit_file(text: str, *, extra: list[str] | None = None) -> SubmitFile:
    """The description and job count of ``text``; ``extra`` are ``-append`` commands (and
    ``key=value`` arguments), applied before the queue statement as condor_submit does."""
    description: dict[str, str] = {}
    count: int | None = None
    for number, line in _lines(text):
        if not line or line.startswith("#"):
            continue
        queue = _QUEUE.match(line)
        if queue:
            if count is not None:
                raise SubmitFileError("ERROR: the pytest-stacks fake models one queue "
                                      "statement per submit file; run this on a real pool\n")
            for command in extra or []:
                _command(description, command, 0)
            count = _count(queue.group(1) or "", number)
            continue
        if count is None:
            _command(description, line, number)
    if count is None:
        # condor_submit submits nothing without a queue statement (seen in its manual:
        # "no queue statement": 0 jobs); it says so on stderr.
        count = 0
    return SubmitFile(description, count)


def _command(description: dict[str, str], line: str, number: int) -> None:
    match = _COMMAND.match(line)
    if not match:
        where = f" on Line {number}" if number else ""
        raise SubmitFileError(f"ERROR: Parse error in submit file{where}: {line}\n")
    key, value = match.group(1), match.group(2).strip()
    description[key if key.startswith("+") or key.upper().startswith("MY.")
                else key.lower()] = value


def _count(argument: str, number: int) -> int:
    words = argument.split()
    if not words:
        return 1
    if len(words) == 1 and words[0].isdigit():
        return int(words[0])
    raise SubmitFileError(f"ERROR: on Line {number}: the pytest-stacks fake models `queue` and "
                          f"`queue N`, not `queue {argument}`; run this on a real pool\n")
