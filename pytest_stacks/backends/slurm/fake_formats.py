"""How Slurm's query tools print a job: ``squeue -o``/``-O`` fields, ``sacct --format`` columns.

``squeue -o`` takes printf-like specs ``%[.][width]letter`` (a ``.`` right-justifies; a width
pads and cuts); ``-O`` takes ``name[:[.]width]`` fields, 20 wide unless told, with nothing
between them (seen on 24.11: ``JOBID`` then 15 spaces). The header line repeats each spec's
title in the same width. ``sacct`` prints
``|``-separated rows with ``-P`` (``-p`` ends each row with one too), else columns with a
dashed rule under the header. These are the fake's own copies of the tools' tables.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

#: ``squeue`` with neither ``-o`` nor ``-O`` (the default format, and ``-l``'s).
DEFAULT_FORMAT = "%.18i %.9P %.8j %.8u %.2t %.10M %.6D %R"
LONG_FORMAT = "%.18i %.9P %.8j %.8u %.8T %.10M %.9l %.6D %R"

COMPACT = {"PENDING": "PD", "RUNNING": "R", "COMPLETED": "CD", "COMPLETING": "CG",
           "FAILED": "F", "CANCELLED": "CA", "TIMEOUT": "TO", "SUSPENDED": "S",
           "NODE_FAIL": "NF", "PREEMPTED": "PR", "OUT_OF_MEMORY": "OOM", "BOOT_FAIL": "BF",
           "DEADLINE": "DL", "REQUEUED": "RQ", "CONFIGURING": "CF"}


@dataclass(frozen=True)
class JobView:
    """What the query tools can show of one job (strings, as printed)."""

    job_id: str
    name: str
    user: str
    state: str
    reason: str
    partition: str
    elapsed: str
    nodelist: str
    workdir: str
    command: str
    exit_code: str
    uid: str
    end: str
    account: str = ""  # accounting storage's (the completion log has none)
    cpus: str = "1"


#: squeue ``-o`` letter -> (title, value).
_LETTERS: dict[str, tuple[str, Callable[[JobView], str]]] = {
    "i": ("JOBID", lambda j: j.job_id), "A": ("JOBID", lambda j: j.job_id),
    "F": ("ARRAY_JOB_ID", lambda j: j.job_id),
    "j": ("NAME", lambda j: j.name), "u": ("USER", lambda j: j.user),
    "T": ("STATE", lambda j: j.state), "t": ("ST", lambda j: COMPACT.get(j.state, j.state)),
    "P": ("PARTITION", lambda j: j.partition), "M": ("TIME", lambda j: j.elapsed),
    "r": ("REASON", lambda j: j.reason),
    "R": ("NODELIST(REASON)", lambda j: f"({j.reason})" if j.state == "PENDING" else j.nodelist),
    "D": ("NODES", lambda j: "1"), "C": ("CPUS", lambda j: "1"),
    "l": ("TIME_LIMIT", lambda j: "UNLIMITED"), "N": ("NODELIST", lambda j: (
        "" if j.state == "PENDING" else j.nodelist)),
    "Z": ("WORK_DIR", lambda j: j.workdir), "o": ("COMMAND", lambda j: j.command),
}

#: squeue ``-O`` field -> letter (its title and value are the letter's).
_FIELDS = {"jobid": "i", "jobarrayid": "i", "arrayjobid": "F", "name": "j", "username": "u",
           "state": "T",
           "statecompact": "t", "partition": "P", "timeused": "M", "reason": "r",
           "reasonlist": "R", "numnodes": "D", "numcpus": "C", "timelimit": "l",
           "nodelist": "N", "workdir": "Z", "command": "o"}

_SPEC = re.compile(r"%(\.)?(\d*)([A-Za-z%])")


class FormatError(ValueError):
    """A format the tool refuses; ``str()`` is its message."""


def _cell(text: str, width: int, right: bool) -> str:
    if not width:
        return text
    text = text[:width]
    return text.rjust(width) if right else text.ljust(width)


def squeue_lines(jobs: Sequence[JobView], fmt: str, *, header: bool) -> list[str]:
    """``squeue -o FMT``: one line per job, a title line first unless ``-h``."""
    parts: list[tuple[str, int, bool] | str] = []
    position = 0
    for match in _SPEC.finditer(fmt):
        parts.append(fmt[position:match.start()])
        letter = match.group(3)
        if letter == "%":
            parts.append("%")
        else:
            if letter not in _LETTERS:
                raise FormatError(f"squeue: error: Invalid job format specification: {letter}\n")
            parts.append((letter, int(match.group(2) or 0), bool(match.group(1))))
        position = match.end()
    parts.append(fmt[position:])

    def line(value: Callable[[str], str]) -> str:
        out = []
        for part in parts:
            if isinstance(part, str):
                out.append(part)
            else:
                letter, width, right = part
                out.append(_cell(value(letter), width, right))
        return "".join(out)
    rows = [line(lambda letter: _LETTERS[letter][0])] if header else []
    for job in jobs:
        def value(letter: str, job: JobView = job) -> str:
            return _LETTERS[letter][1](job)
        rows.append(line(value))
    return rows


def squeue_format_option(spec: str) -> str:
    """``-O jobid:10,state`` -> the equivalent ``-o`` format."""
    out = []
    for item in spec.split(","):
        name, _, size = item.strip().partition(":")
        letter = _FIELDS.get(name.lower().replace("_", ""))
        if letter is None:
            raise FormatError(f"squeue: error: Invalid job format specification: {name}\n")
        right = size.startswith(".")
        width = int(size.lstrip(".") or 20)
        out.append(f"%{'.' if right else ''}{width}{letter}")
    return "".join(out)


#: sacct ``--format`` field -> (title, default width, value): what the completion log (``-c``)
#: and accounting storage know. Seen on 24.11: JobID and JobIDRaw are left-justified in
#: columns (:data:`_SACCT_LEFT`), every other field right-justified.
_SACCT: dict[str, tuple[str, int, Callable[[JobView], str]]] = {
    "jobid": ("JobID", 12, lambda j: j.job_id), "jobidraw": ("JobIDRaw", 12, lambda j: j.job_id),
    "jobname": ("JobName", 10, lambda j: j.name), "uid": ("UID", 6, lambda j: j.uid),
    "user": ("User", 9, lambda j: j.user), "partition": ("Partition", 10, lambda j: j.partition),
    "nnodes": ("NNodes", 8, lambda j: "1"), "nodelist": ("NodeList", 15, lambda j: j.nodelist),
    "state": ("State", 10, lambda j: j.state), "exitcode": ("ExitCode", 8, lambda j: j.exit_code),
    "end": ("End", 19, lambda j: j.end), "workdir": ("WorkDir", 30, lambda j: j.workdir),
    "account": ("Account", 10, lambda j: j.account),
    "alloccpus": ("AllocCPUS", 10, lambda j: j.cpus),
}
_SACCT_LEFT = frozenset({"jobid", "jobidraw"})
#: ``sacct -c`` without ``--format`` (seen on 20.11 to 26.05: tests/data/slurm/*/sacct-c.txt).
SACCT_C_DEFAULT = "JobID,UID,JobName,Partition,NNodes,NodeList,State,End"
#: ``sacct`` from accounting storage without ``--format`` (seen on 24.11), and ``-b``'s.
SACCT_DEFAULT = "JobID,JobName,Partition,Account,AllocCPUS,State,ExitCode"
SACCT_BRIEF = "JobID,State,ExitCode"


def sacct_lines(jobs: Sequence[JobView], fields: str, *, header: bool, separator: str,
                trailing: bool) -> list[str]:
    columns = []
    for item in fields.split(","):
        name, _, size = item.strip().partition("%")
        known = _SACCT.get(name.lower())
        if known is None:
            raise FormatError(f"sacct: error: Invalid field requested: \"{name}\"\n")
        columns.append((known, int(size) if size.isdigit() else known[1],
                        name.lower() not in _SACCT_LEFT))
    if separator:
        end = separator if trailing else ""
        rows = [separator.join(title for (title, _, _), _, _ in columns) + end] if header else []
        rows.extend(separator.join(value(job) for (_, _, value), _, _ in columns) + end
                    for job in jobs)
        return rows
    rows = []
    if header:
        rows.append(" ".join(_cell(title, width, right)
                             for (title, _, _), width, right in columns))
        rows.append(" ".join("-" * width for _, width, _ in columns))
    rows.extend(" ".join(_cell(value(job), width, right)
                         for (_, _, value), width, right in columns)
                for job in jobs)
    return [row + " " for row in rows]


def elapsed(seconds: float) -> str:
    """squeue's ``%M``: ``M:SS``, ``H:MM:SS``, ``D-HH:MM:SS``."""
    total = max(0, int(seconds))
    days, rest = divmod(total, 86400)
    hours, rest = divmod(rest, 3600)
    minutes, secs = divmod(rest, 60)
    if days:
        return f"{days}-{hours:02d}:{minutes:02d}:{secs:02d}"
    if hours:
        return f"{hours}:{minutes:02d}:{secs:02d}"
    return f"{minutes}:{secs:02d}"


def jobcomp_fields(entry: str) -> Mapping[str, str]:
    return dict(part.split("=", 1) for part in entry.split(" ") if "=" in part)
