"""Recordings on disk (one JSON file per real stack, small and reviewable) and the one file
that says which fake is checked against which recording and which differences are meant.

The parity file (``tests/parity/parity.yaml`` in this repository)::

    fakes:
      fake-slurm:
        against: slurm-24.11         # the real stack whose recording this fake must match
        options: {min_job_age: 300}  # the fake configured as that stack's daemons are
    declared:
      - backend: slurm
        call: "run: squeue --json*"
        under: "response.stdout.json.jobs[*]"   # optional: the fields below are under it
        fields: [account, job_resources]         # each covers everything under it
        fake: ["(absent)"]     # optional, with real: the values each side may show there
        real: "*"
        reason: why the fake does not answer this as the daemon does

(:mod:`.declarations` reads the ``declared:`` entries.)
"""

from __future__ import annotations

import dataclasses
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from pytest_stacks.errors import ManifestError
from pytest_stacks.evidence import write_whole
from pytest_stacks.parity.compare import Declared
from pytest_stacks.parity.declarations import read_declared
from pytest_stacks.parity.normalise import Normaliser
from pytest_stacks.parity.provenance import Provenance
from pytest_stacks.parity.tap import Recorder

FORMAT = 1


@dataclasses.dataclass
class Recording:
    stack: str
    backend: str
    versions: dict[str, str]
    recorded_at: str
    #: What made it (:mod:`.provenance`); :mod:`.admission` decides whether a fake may be
    #: held to it.
    provenance: Provenance
    steps: list[dict[str, Any]]
    #: The file it was read from or written to ("" for one only in memory): every failure
    #: about it names the file.
    source: str = dataclasses.field(default="", compare=False, repr=False)

    @classmethod
    def of(cls, stack: str, backend: str, versions: Mapping[str, str], recorder: Recorder,
           roots: Mapping[str, str], provenance: Provenance) -> Recording:
        """The recorder's steps, normalised (nothing run-specific is kept)."""
        normalise = Normaliser(recorder.job_ids, roots)
        # Requests first: the names the driver made (work folders) are numbered in the order
        # it made them, before anything a daemon adds (a container's name) is seen.
        for step in recorder.steps:
            for exchange in step.exchanges:
                normalise(exchange.request)
        steps = [{"name": s.name, "exchanges": [normalise(e.to_json()) for e in s.exchanges]}
                 for s in recorder.steps]
        return cls(stack, backend, dict(versions),
                   time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), provenance, steps)

    def write(self, path: Path) -> Path:
        data = {"format": FORMAT, **dataclasses.asdict(self)}
        del data["source"]
        written = write_whole(path, _readable(data) + "\n", what="parity recording")
        self.source = str(written)
        return written

    def mismatch_title(self, fake: str, parity_file: str) -> str:
        """The first line of a failed parity check: which fake, which recording file."""
        return (f"{fake} does not answer as {self.stack} {self.versions} did (recording "
                f"{self.source or '(not written)'}, recorded {self.recorded_at}); update the "
                f"fake with the daemon, or declare the difference with its reason in "
                f"{parity_file}:")

    @classmethod
    def read(cls, path: Path) -> Recording:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError) as exc:
            raise ManifestError([f"{path}: not a readable recording ({exc}); make it again "
                                 f"with `pytest-stacks record STACK`"]) from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise ManifestError([f"{path}: field 'format' must be {FORMAT}; make the recording "
                                 f"again with `pytest-stacks record STACK`"])
        try:
            return cls(str(data["stack"]), str(data["backend"]), dict(data["versions"]),
                       str(data["recorded_at"]), Provenance.read(data.get("provenance")),
                       _steps(path, data.get("steps")), source=str(path))
        except (KeyError, TypeError, ValueError) as exc:
            raise ManifestError([f"{path}: field {exc} is missing or malformed; make the "
                                 f"recording again with `pytest-stacks record STACK`"]) from exc


def _steps(path: Path, steps: Any) -> list[dict[str, Any]]:
    """A recording's steps, each ``{"name": text, "exchanges": [object, ...]}``: anything
    else is refused naming the file and the step (a list of characters or of a mapping's keys
    must never be compared as steps)."""
    again = "make the recording again with `pytest-stacks record STACK`"
    if not isinstance(steps, list):
        raise ManifestError([f"{path}: field 'steps' is a {type(steps).__name__}, not a list "
                             f"of steps; {again}"])
    for index, step in enumerate(steps):
        where = f"{path}: field 'steps[{index}]'"
        if not isinstance(step, dict):
            raise ManifestError([f"{where} is a {type(step).__name__}, not a step object; "
                                 f"{again}"])
        if not isinstance(step.get("name"), str) or not step["name"]:
            raise ManifestError([f"{where}.name is {step.get('name')!r:.60}, not a step's "
                                 f"name; {again}"])
        exchanges = step.get("exchanges")
        if not isinstance(exchanges, list) or not all(isinstance(e, dict) for e in exchanges):
            raise ManifestError([f"{where}.exchanges (step {step['name']!r}) is not a list of "
                                 f"exchange objects; {again}"])
    return steps


@dataclasses.dataclass(frozen=True)
class Pairing:
    fake: str
    against: str
    options: dict[str, Any]


@dataclasses.dataclass(frozen=True)
class ParityFile:
    path: Path
    pairings: dict[str, Pairing]
    declared: list[Declared]

    def recording_path(self, stack: str, kind: str = "") -> Path:
        """The recording of ``stack`` (``kind``: ``corpus`` for its command-line corpus)."""
        suffix = f".{kind}" if kind else ""
        return self.path.parent / "recordings" / f"{stack}{suffix}.json"

    def fakes_of(self, real: str) -> list[Pairing]:
        return [p for p in self.pairings.values() if p.against == real]


def read_parity_file(path: Path) -> ParityFile:
    """The pairings and declarations; a malformed entry names the file, the field, the fix."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ManifestError([f"{path}: cannot be read as YAML ({exc})"]) from exc
    problems: list[str] = []
    if not isinstance(data, dict) or set(data) - {"fakes", "declared"}:
        raise ManifestError([f"{path}: the top level holds 'fakes' and 'declared' only"])
    pairings: dict[str, Pairing] = {}
    for fake, entry in (data.get("fakes") or {}).items():
        if not isinstance(entry, dict) or not isinstance(entry.get("against"), str):
            problems.append(f"{path}: fakes.{fake}.against must name the real stack whose "
                            f"recording the fake is checked against")
            continue
        options = entry.get("options") or {}
        if not isinstance(options, dict):
            problems.append(f"{path}: fakes.{fake}.options must be a mapping of the fake's "
                            f"options")
            continue
        pairings[str(fake)] = Pairing(str(fake), entry["against"], dict(options))
    declared, wrong = read_declared(data.get("declared"), path)
    problems += wrong
    if problems:
        raise ManifestError(problems)
    return ParityFile(path, pairings, declared)


def _readable(value: Any, indent: str = "") -> str:
    """JSON with one line per value that fits in one (a Slurm ``{"set": true, "infinite":
    false, "number": 0}`` is one line, not five): a recording stays reviewable in a diff."""
    flat = json.dumps(value, ensure_ascii=False)
    if len(flat) + len(indent) <= 100 or not isinstance(value, dict | list) or not value:
        return flat
    inner = indent + " "
    if isinstance(value, dict):
        items = [f"{inner}{json.dumps(k, ensure_ascii=False)}: {_readable(v, inner)}"
                 for k, v in value.items()]
        return "{\n" + ",\n".join(items) + f"\n{indent}}}"
    items = [f"{inner}{_readable(v, inner)}" for v in value]
    return "[\n" + ",\n".join(items) + f"\n{indent}]"
