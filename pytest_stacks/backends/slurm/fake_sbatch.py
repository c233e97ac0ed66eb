"""What ``sbatch`` makes of its command line and its script, for the fake: the job to queue.

As the real ``sbatch``: options from the command line win over ``#SBATCH`` lines, which are
read from the top of the script up to its first command; the script is a file operand,
``--wrap``'s command wrapped in ``#!/bin/sh``, or standard input when neither is given; a
script must start with ``#!``; ``-o``/``-e`` default to ``slurm-%j.out`` in the working
directory (``-D``, else where ``sbatch`` ran) and take the filename patterns ``%j %x %u %A
%N %%``. Options the fake has no model for (arrays, ``--wait``) are refused by name, not
ignored.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import dataclass

from pytest_stacks.backends.slurm.fake_options import (
    Option,
    OptionError,
    Parsed,
    flags,
    parse,
    valued,
)

_OPTIONS = [
    Option("job-name", "J", True), Option("output", "o", True), Option("error", "e", True),
    Option("chdir", "D", True), Option("partition", "p", True), Option("time", "t", True),
    Option("nodes", "N", True), Option("ntasks", "n", True), Option("cpus-per-task", "c", True),
    Option("account", "A", True), Option("qos", "q", True), Option("hold", "H"),
    Option("dependency", "d", True), Option("constraint", "C", True),
    Option("input", "i", True), Option("quiet", "Q"), Option("verbose", "v"),
    Option("version", "V"), Option("help", "h"), Option("exclude", "x", True),
    Option("nodelist", "w", True), Option("licenses", "L", True),
    Option("oversubscribe", "s"), Option("no-kill", "k", optional=True),
    Option("clusters", "M", True), Option("array", "a", True), Option("wait", "W"),
    Option("parsable", optional=True), Option("exclusive", optional=True),
    Option("requeue"), Option("no-requeue"), Option("test-only"),
    Option("get-user-env", optional=True), Option("ignore-pbs"),
    Option("export", argument=True), Option("kill-on-invalid-dep", argument=True),
    *valued("wrap", "comment", "container", "ntasks-per-node", "mem", "mem-per-cpu",
            "mem-per-gpu", "gres", "gpus", "gpus-per-node", "gpus-per-task", "cpus-per-gpu",
            "signal", "open-mode", "mail-type", "mail-user", "begin", "nice", "tmp",
            "time-min", "threads-per-core", "propagate", "mpi", "reservation", "wckey",
            "distribution", "deadline", "priority", "uid", "gid", "export-file"),
    *flags("usage", "contiguous", "overcommit", "spread-job", "use-min-nodes"),
]

#: Accepted but not modelled: sbatch refuses them here with this reason.
_NOT_MODELLED = {
    "array": "job arrays", "wait": "--wait (sbatch blocking until the job ends)",
    "test-only": "--test-only", "clusters": "federated clusters (-M)",
}

WRAP_HEADER = "#!/bin/sh\n# This script was created by sbatch --wrap.\n\n"
_PATTERN = re.compile(r"%(%|[jxuANnst])")


@dataclass(frozen=True)
class Submission:
    """The job sbatch hands to slurmctld."""

    name: str
    workdir: str  # as the job sees it (absolute)
    submit_dir: str
    script: str
    script_args: list[str]
    output: str  # the -o pattern, absolute, %j still in it
    error: str
    parsable: bool
    hold: bool
    partition: str
    container: str
    command: str  # what squeue's %o shows: the script's path, else "(null)"


class SbatchRefused(Exception):
    """sbatch's own refusal; ``str()`` is its stderr, ``code`` its exit status."""

    def __init__(self, stderr: str, code: int = 1) -> None:
        super().__init__(stderr)
        self.code = code


def read_submission(argv: list[str], *, stdin: str, cwd: str,
                    read_file: Callable[[str], str | None],
                    option_error_code: int = 1) -> Submission:
    """The job for ``sbatch argv`` run in ``cwd``; ``read_file`` returns a file's text (None:
    it cannot be opened); ``option_error_code``: the exit status of a command line getopt
    refuses (255 on 20.11, 22.05 and 24.11, seen in the corpus recordings)."""
    try:
        cli = parse("sbatch", argv, _OPTIONS, stop_at_operand=True)
    except OptionError as exc:
        raise SbatchRefused(str(exc), option_error_code) from exc
    for name, what in _NOT_MODELLED.items():
        if cli.has(name):
            raise SbatchRefused(f"sbatch: error: the pytest-stacks fake does not model {what}; "
                                "run this on a real Slurm stack\n")
    script, default_name = _script(cli, stdin, read_file)
    if not script.strip():
        raise SbatchRefused("sbatch: error: Batch script is empty!\n")
    if not script.startswith("#!"):
        raise SbatchRefused(
            "sbatch: error: This does not look like a batch script.  The first\n"
            "sbatch: error: line must start with #! followed by the path to an interpreter.\n"
            "sbatch: error: For instance: #!/bin/sh\n")
    merged = _with_directives(cli, script)
    workdir = _absolute(merged.last("chdir", cwd), cwd)
    name = merged.last("job-name", default_name)
    output = _absolute(merged.last("output", "slurm-%j.out"), workdir)
    error = _absolute(merged.last("error"), workdir) if merged.has("error") else output
    return Submission(name, workdir, cwd, script, cli.operands[1:], output, error,
                      cli.has("parsable"), merged.has("hold"), merged.last("partition", "debug"),
                      merged.last("container"),
                      _absolute(cli.operands[0], cwd) if cli.operands and not cli.has("wrap")
                      else "(null)")


def _script(cli: Parsed, stdin: str, read_file: Callable[[str], str | None]) -> tuple[str, str]:
    if cli.has("wrap"):
        if cli.operands:
            raise SbatchRefused("sbatch: error: Script arguments not permitted with --wrap "
                                "option\n")
        return WRAP_HEADER + cli.last("wrap") + "\n", "wrap"
    if not cli.operands:
        return stdin, "sbatch"
    text = read_file(cli.operands[0])
    if text is None:
        raise SbatchRefused(f"sbatch: error: Unable to open file {cli.operands[0]}\n")
    return text, cli.operands[0].rsplit("/", 1)[-1]


def directives(script: str) -> list[str]:
    """The words of the ``#SBATCH`` lines, read as sbatch does: up to the first line that is
    neither blank nor a comment, each line's words split as a shell would, a ``#`` word
    ending the line."""
    words: list[str] = []
    for line in script.splitlines()[1:]:
        stripped = line.strip()
        if stripped and not stripped.startswith("#"):
            break
        if not stripped.startswith("#SBATCH"):
            continue
        try:
            parts = shlex.split(stripped[len("#SBATCH"):], comments=True)
        except ValueError:
            parts = stripped[len("#SBATCH"):].split()
        words.extend(parts)
    return words


def _with_directives(cli: Parsed, script: str) -> Parsed:
    try:
        inline = parse("sbatch", directives(script), _OPTIONS)
    except OptionError as exc:
        raise SbatchRefused(str(exc)) from exc
    merged = Parsed({**inline.options, **cli.options}, cli.operands)
    return merged


def _absolute(path: str, base: str) -> str:
    return path if path.startswith("/") else f"{base.rstrip('/')}/{path}"


def expand(pattern: str, *, job_id: int, name: str, user: str) -> str:
    """A ``-o``/``-e`` pattern with its fields filled as slurmd fills them (one node)."""
    values = {"%": "%", "j": str(job_id), "x": name, "u": user, "A": str(job_id),
              "N": "localhost", "n": "0", "s": "batch", "t": "0"}
    return _PATTERN.sub(lambda m: values[m.group(1)], pattern)


