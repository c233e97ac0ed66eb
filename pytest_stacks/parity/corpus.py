"""Real clients' command lines, replayed on a stack's login node and recorded for parity.

The corpus (``tests/parity/corpus.yaml`` here) lists, per backend, the command lines public
clients send (dask-jobqueue, submitit, PSI/J, Parsl, snakemake's Slurm executor, DIRAC's CEs),
with the files they write first (a job script, a submit file) and what to compare. Replayed in
one working folder on the login node (a real stack's container, or a fake's command line with
that folder shared), each entry becomes one step of a recording (:class:`~.tap.Recorder`), so
the recordings, their normalisation, their provenance and the comparison with declared
differences are the parity machinery's own (:mod:`.store`, :mod:`.compare`).

An entry either runs a command (``argv``, optional ``stdin``), reads a file a job wrote
(``read``), or waits (``until``: the command is repeated until its stdout matches; only the
last answer is kept, as a scenario's wait keeps its last round). ``job: NAME`` names the job
the command submitted (its id is read from stdout), so later entries say ``{NAME}``, or
``{NAME.cluster}`` for an HTCondor cluster number.
"""

from __future__ import annotations

import hashlib
import re
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import yaml

from pytest_stacks.errors import BackendCallError, ManifestError
from pytest_stacks.parity.provenance import source_digest
from pytest_stacks.parity.tap import Exchange, Recorder

#: What a submit printed, and the job id it means, per backend.
_SUBMITTED = {"slurm": re.compile(r"(?:job |^)(\d+)\b", re.MULTILINE),
              "htcondor": re.compile(r"submitted to cluster (\d+)|^(\d+)\.\d+ -", re.MULTILINE)}
_FIELDS = {"id", "client", "source", "argv", "stdin", "job", "until", "read", "compare"}
#: Placeholder of the corpus's working folder in every recording.
WORK = "<work>"


class CommandResult(Protocol):
    """What a command answered (a transport's ``CommandResult`` fits)."""

    @property
    def returncode(self) -> int: ...

    @property
    def stdout(self) -> str: ...

    @property
    def stderr(self) -> str: ...

    @property
    def ok(self) -> bool: ...


class LoginNode(Protocol):
    """Where the corpus runs: a login node's commands and files, as one user."""

    def run(self, argv: list[str], *, stdin: str, cwd: str) -> CommandResult: ...

    def put_files(self, directory: str, files: Mapping[str, bytes]) -> None: ...

    def read_file(self, path: str) -> bytes | None: ...


@dataclass(frozen=True)
class Entry:
    id: str
    client: str
    source: str
    argv: list[str] = field(default_factory=list)
    stdin: str = ""
    job: str = ""
    until: str = ""
    read: str = ""


@dataclass(frozen=True)
class Corpus:
    backend: str
    files: dict[str, str]
    entries: list[Entry]
    digest: str  # of the corpus text and of this module: a recording names what made it


def read_corpus(path: Path, backend: str) -> Corpus:
    """The corpus of ``backend`` in ``path``; a malformed one names the file, field and fix."""
    try:
        text = path.read_text(encoding="utf-8")
        data = yaml.safe_load(text) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ManifestError([f"{path}: cannot be read as YAML ({exc})"]) from exc
    section = data.get(backend) if isinstance(data, dict) else None
    if not isinstance(section, dict) or not isinstance(section.get("entries"), list):
        raise ManifestError([f"{path}: {backend}.entries must be a list of command lines "
                             f"(see the file's header)"])
    problems: list[str] = []
    entries: list[Entry] = []
    for index, raw in enumerate(section["entries"]):
        where = f"{path}: {backend}.entries[{index}]"
        if not isinstance(raw, dict) or set(raw) - _FIELDS:
            problems.append(f"{where}: an entry holds only {', '.join(sorted(_FIELDS))}")
            continue
        argv = raw.get("argv", [])
        if not raw.get("read") and (not isinstance(argv, list) or not argv
                                    or not all(isinstance(a, str) for a in argv)):
            problems.append(f"{where}.argv: a list of strings (the command line) is required")
            continue
        if not isinstance(raw.get("id"), str) or not isinstance(raw.get("client"), str):
            problems.append(f"{where}: 'id' and 'client' (who sends this line) are required")
            continue
        entries.append(Entry(raw["id"], raw["client"], str(raw.get("source", "")),
                             list(argv), str(raw.get("stdin", "")), str(raw.get("job", "")),
                             str(raw.get("until", "")), str(raw.get("read", ""))))
    files = section.get("files") or {}
    if not isinstance(files, dict):
        problems.append(f"{path}: {backend}.files must map file names to their text")
    if problems:
        raise ManifestError(problems)
    module = Path(__file__).read_text(encoding="utf-8")
    digest = source_digest({"corpus.py": module}) + "+" + hashlib.sha256(
        yaml.safe_dump(section, sort_keys=True).encode("utf-8")).hexdigest()[:16]
    return Corpus(backend, {str(k): str(v) for k, v in files.items()}, entries, digest)


def replay(corpus: Corpus, node: LoginNode, workdir: str, *, timeout: float) -> Recorder:
    """Run every entry in ``workdir`` on ``node``; the recorder holds what came back."""
    recorder = Recorder()
    jobs: dict[str, str] = {"work": workdir}
    node.put_files(workdir, {name: _fill(text, jobs).encode("utf-8")
                             for name, text in corpus.files.items()})
    for entry in corpus.entries:
        recorder.step(entry.id)
        if entry.read:
            name = _fill(entry.read, jobs)
            data = node.read_file(name if name.startswith("/") else f"{workdir}/{name}")
            recorder.add(Exchange("read", {"args": [_fill(entry.read, {})]},
                                  None if data is None else data.decode("utf-8", "replace")))
            continue
        argv = [_fill(a, jobs) for a in entry.argv]
        stdin = _fill(entry.stdin, jobs)
        result = _until(node, entry, argv, stdin, workdir, timeout) if entry.until else \
            node.run(argv, stdin=stdin, cwd=workdir)
        request: dict[str, Any] = {"args": [argv]}
        if stdin:
            request["stdin"] = stdin
        recorder.add(Exchange("run", request, {"returncode": result.returncode,
                                               "stdout": result.stdout,
                                               "stderr": result.stderr}))
        if entry.job and entry.job != "work":
            jobs[entry.job] = _job_id(corpus.backend, entry, result)
            recorder.own_jobs([jobs[entry.job]])
    return recorder


def _until(node: LoginNode, entry: Entry, argv: list[str], stdin: str, workdir: str,
           timeout: float) -> CommandResult:
    pattern = re.compile(entry.until)
    deadline = time.monotonic() + timeout
    while True:
        result = node.run(argv, stdin=stdin, cwd=workdir)
        if pattern.search(result.stdout):
            return result
        if time.monotonic() > deadline:
            raise BackendCallError(f"corpus entry {entry.id}: {' '.join(argv)} did not "
                                      f"print /{entry.until}/ within {timeout:.0f} s (last: "
                                      f"{(result.stdout or result.stderr).strip()[:200]!r})")
        time.sleep(0.3)


def _job_id(backend: str, entry: Entry, result: CommandResult) -> str:
    match = _SUBMITTED[backend].search(result.stdout)
    if not result.ok or match is None:
        raise BackendCallError(f"corpus entry {entry.id}: {' '.join(entry.argv)} submitted "
                                  f"no job (exit {result.returncode}: "
                                  f"{(result.stderr or result.stdout).strip()[:300]!r})")
    number = next(g for g in match.groups() if g)
    return number if backend == "slurm" else f"{number}.0"


def _fill(text: str, jobs: Mapping[str, str]) -> str:
    def one(match: re.Match[str]) -> str:
        name, _, part = match.group(1).partition(".")
        if name not in jobs:
            return match.group(0)
        return jobs[name].split(".")[0] if part == "cluster" else jobs[name]
    return re.sub(r"\{([A-Za-z_][\w]*(?:\.cluster)?)\}", one, text)
