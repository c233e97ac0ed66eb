"""The results document one pytest run with stacks writes (``pytest-stacks/results``).

The plugin writes it at the end of a run and ``pytest-stacks report`` reads many of them, often
in another job on another machine. So the two rules that turn test outcomes into a capability
status and a stack verdict live here, once, and :func:`validate` re-derives them: a writer and a
reader that disagreed would make the table lie. A file is refused whole (:class:`ResultsError`
naming the file, the JSON path and the fix), never half-read, because a report that skipped
what it could not parse would be green by omission.

The model and the rules live in :mod:`.model`; this module re-exports them, so the plugin
still imports one module for the rules, the validator that re-derives them, the reader and the
writer: a writer that could pick up a rule without the check of it (or the reader's limits)
could write files the report refuses.
"""

from __future__ import annotations

import json
import math
import os
import stat
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_stacks.ci.scope import Scope
from pytest_stacks.errors import StacksError
from pytest_stacks.evidence import EvidenceError, write_whole
from pytest_stacks.suggest import did_you_mean
from pytest_stacks.verdicts import consistency
from pytest_stacks.verdicts.consistency import json_path
from pytest_stacks.verdicts.model import (
    STATUSES,
    VERDICTS,
    CapabilityResult,
    CaseResult,
    InfraRetry,
    Outcome,
    ResultsDoc,
    RunInfo,
    StackResult,
    Status,
    Verdict,
    capability_status,
    stack_verdict,
)

SCHEMA_ID = "pytest-stacks/results"
SCHEMA_VERSION = 4
MAX_BYTES = 16 * 1024 * 1024
REGENERATE = "Regenerate it with the pytest run that wrote it; results files are not edited."
#: What each pattern of the schema means, for the message of a value that misses it.
PATTERNS = {
    r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$": "{got!r} is not a capability name (lowercase "
                                               "words joined by dots, e.g. "
                                               "'outputs.repeatable').",
    r"^[0-9a-f]{64}$": "{got!r} is not a SHA-256 digest (64 lowercase hex digits).",
    r"^([0-9a-f]{40}([0-9a-f]{24})?|unknown)$": "{got!r} is not a git commit (40 or 64 "
                                                 "lowercase hex digits) or 'unknown'.",
}

class ResultsError(StacksError):
    """A results (or matrix) file cannot be used. ``problems``: one line per defect, each
    naming the file, the JSON path and what to do."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


# ---------------------------------------------------------------- validation


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema shipped in the package (``schema/results-v4.schema.json``)."""
    name = f"schema/results-v{SCHEMA_VERSION}.schema.json"
    text = resources.files("pytest_stacks").joinpath(name)
    return dict(json.loads(text.read_text(encoding="utf-8")))


def validate(doc: Any, source: str | Path = "<results>") -> None:
    """Raise :class:`ResultsError` unless ``doc`` is a valid, self-consistent v1 document.

    The header is checked before the schema so that a newer or foreign file gets one line
    saying so instead of dozens of schema complaints about fields it never meant to have.
    """
    src = str(source)
    if not isinstance(doc, dict):
        raise ResultsError([f"{src}: $: expected a JSON object, got {_kind(doc)}. Pass a "
                            f"results file written by pytest-stacks."])
    if doc.get("schema") != SCHEMA_ID:
        raise ResultsError([f"{src}: $.schema: {doc.get('schema')!r} is not a pytest-stacks "
                            f"results document (expected {SCHEMA_ID!r}). Is this the right "
                            f"file?"])
    version = doc.get("schema_version")
    if type(version) is not int or version != SCHEMA_VERSION:
        run = doc.get("run")
        writer = run.get("pytest_stacks_version") if isinstance(run, dict) else None
        hint = f" (the file was written by pytest-stacks {writer})" if writer else ""
        raise ResultsError([f"{src}: $.schema_version: {version!r} is not supported{hint}; "
                            f"this pytest-stacks reads version {SCHEMA_VERSION}. Report with "
                            f"the pytest-stacks version that wrote the file."])
    problems = [f"{src}: {p} {REGENERATE}" for p in _non_finite(doc, doc, [])]
    if problems:  # first: the schema would call infinity a number past its maximum
        raise ResultsError(_capped(problems))
    problems = [f"{src}: {p} {REGENERATE}" for p in _schema_problems(doc)]
    if not problems:
        problems = [f"{src}: {p}" for p in consistency.problems(doc)]
    if problems:
        raise ResultsError(_capped(problems))


def _capped(problems: list[str], limit: int = 20) -> list[str]:
    if len(problems) <= limit:
        return problems
    return [*problems[:limit], f"... and {len(problems) - limit} more problem(s)"]


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "true/false",
            int: "a number", float: "a number", type(None): "null"}.get(type(value), "a value")


def _non_finite(value: Any, doc: Any, at: list[str | int]) -> Iterable[str]:
    """Every number JSON cannot hold (``1e999`` reads as infinity; NaN): a table or a JSON
    report built on one would say ``Infinity``, which no JSON reader accepts."""
    if isinstance(value, float) and not math.isfinite(value):
        yield (f"{json_path(at, doc)}: {value!r} is not a finite number (JSON has none: a "
               f"number this large overflowed).")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _non_finite(item, doc, [*at, str(key)])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _non_finite(item, doc, [*at, index])


def _schema_problems(doc: dict[str, Any]) -> list[str]:
    import jsonschema  # costs more than the rest of a report; only paid when reading one

    validator = jsonschema.Draft202012Validator(schema())
    return [f"{json_path(error.absolute_path, doc)}: {_expected(error)}"
            for error in validator.iter_errors(doc)]


def _expected(error: Any) -> str:
    kind, value, got = error.validator, error.validator_value, error.instance
    if kind == "required":
        return f"missing key(s): {', '.join(k for k in value if k not in got)}."
    if kind == "additionalProperties":
        allowed = list(error.schema.get("properties", {}))
        extra = [k for k in got if k not in allowed]
        hint = did_you_mean(extra[0], allowed) if extra else ""
        return f"unknown key(s): {', '.join(extra)}. Expected: {', '.join(allowed)}.{hint}"
    if kind == "enum":
        return (f"{got!r} is not allowed. Expected one of: "
                f"{', '.join(json.dumps(v) for v in value)}.")
    if kind == "const":
        return f"{got!r} is not allowed. Expected {value!r}."
    if kind == "type":
        wanted = " or ".join(value) if isinstance(value, list) else value
        return f"expected {wanted}, got {_kind(got)}."
    if kind == "pattern":
        known = PATTERNS.get(value)
        return known.format(got=got) if known else f"{got!r} does not match {value}."
    if kind == "minLength":
        return "must not be empty."
    if kind in ("minimum", "maximum") and error.schema.get("type") == "integer":
        bound = ">=" if kind == "minimum" else "<="
        return f"{got!r} is out of range; expected a whole number {bound} {value}."
    if kind == "minimum":
        return f"{got!r} is negative; expected a number of seconds >= 0."
    if kind == "maximum":
        return f"{got!r} is past any real duration; expected a number of seconds <= {value:g}."
    if kind == "uniqueItems":
        return "lists a value twice."
    return f"{error.message}."


# ---------------------------------------------------------------- reading


def read_json(path: str | Path, fix: str) -> Any:
    """The parsed JSON of ``path``, or ResultsError saying what it is instead; ``fix`` says
    which file the caller wanted. Bounded before parsing: a FIFO would block the report and a
    huge file is a mistake, not a result."""
    src = str(path)
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ResultsError([f"{src}: $: cannot be read ({exc.strerror or exc}). {fix}"]) from None
    if not stat.S_ISREG(info.st_mode):
        what = "a directory" if stat.S_ISDIR(info.st_mode) else "not a regular file"
        raise ResultsError([f"{src}: $: is {what}. {fix}"])
    try:
        with open(path, "rb") as handle:
            raw = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise ResultsError([f"{src}: $: cannot be read ({exc.strerror or exc}). {fix}"]) from None
    if len(raw) > MAX_BYTES:
        raise ResultsError([f"{src}: $: is larger than {MAX_BYTES // 2**20} MiB, the most a "
                            f"results file may be. Is this the right file? {fix}"])
    try:
        text = raw.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as exc:
        raise ResultsError([f"{src}: $: is not UTF-8 (byte 0x{raw[exc.start]:02x} at offset "
                            f"{exc.start}). {fix}"]) from None
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, parse_constant=_no_constant)
    except json.JSONDecodeError as exc:
        raise ResultsError([f"{src}:{exc.lineno}:{exc.colno}: $: not valid JSON ({exc.msg}); "
                            f"truncated by an upload? {fix}"]) from None
    except ValueError as exc:
        raise ResultsError([f"{src}: $: not valid JSON ({exc}). {fix}"]) from None
    except RecursionError:
        raise ResultsError([f"{src}: $: nested too deeply to be a results file. {fix}"]) from None


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A key given twice is refused: JSON keeps the last silently, hiding a merged mess."""
    result: dict[str, Any] = {}
    for key, value in pairs:
        if key in result:
            raise ValueError(f"key {key!r} appears twice in one object")
        result[key] = value
    return result


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def load(path: str | Path) -> ResultsDoc:
    """Read, validate and type one results file; raise :class:`ResultsError` otherwise."""
    data = read_json(path, "Pass a results file that a pytest run with stacks wrote.")
    validate(data, path)
    return parse(data, str(path))


def parse(data: Mapping[str, Any], source: str) -> ResultsDoc:
    """The typed form of an already validated document."""
    run = data["run"]
    return ResultsDoc(
        source=source,
        run=RunInfo(run["run_id"], run["lane"], run["ci_lane"], run["started"],
                    run["finished"], run["manifest"], run["partial"],
                    tuple(run["partial_reasons"]), Scope.from_json(run["scope"]),
                    int(run["pytest_exit"]),
                    run["pytest_stacks_version"], tuple(run["collected"]),
                    int(run["deselected"]), run["commit"], run["manifest_digest"],
                    run["code_digest"],
                    None if run["plan"] is None else (tuple(run["plan"]["stacks"]),
                                                      run["plan"]["digest"])),
        stacks=tuple(_stack(s) for s in data["stacks"]))


def _stack(s: Mapping[str, Any]) -> StackResult:
    caps = {name: CapabilityResult(c["offered"], c["status"], tuple(c["passed"]),
                                   tuple(c["failed"]), tuple(c["skipped"]), tuple(c["infra"]))
            for name, c in s["capabilities"].items()}
    tests = tuple(CaseResult(t["nodeid"], t["outcome"], float(t["duration_s"]),
                             tuple(t["requires"]), tuple(t["identities"]), t["message"],
                             int(t["infra_retries"]))
                  for t in s["tests"])
    startup = s["startup_s"]
    return StackResult(
        name=s["name"], backend=s["backend"], version=s["version"], provider=s["provider"],
        transport=s["transport"], configuration=s["configuration"], role=s["role"],
        fake=s["fake"], pins=dict(s["pins"]), observed_daemon=s["observed"]["daemon"],
        observed_client=s["observed"]["client"],
        startup_s=None if startup is None else float(startup), verdict=s["verdict"],
        infra=s["infra"], problems=tuple(s["problems"]), capabilities=caps, tests=tests,
        parity=s.get("parity", ""), driver=s.get("driver", ""),
        inputs_digest=s["inputs_digest"],
        infra_retries=tuple(InfraRetry(int(r["attempt"]), r["fault"], tuple(r["tests"]))
                            for r in s["infra_retries"]))


# ---------------------------------------------------------------- writing


def to_json(doc: ResultsDoc) -> dict[str, Any]:
    """The JSON document of a typed one: the inverse of :func:`parse`, so the plugin writes
    the same model the report reads."""
    run = doc.run
    return {
        "schema": SCHEMA_ID, "schema_version": SCHEMA_VERSION,
        "run": {"run_id": run.run_id, "lane": run.lane, "ci_lane": run.ci_lane,
                "started": run.started, "finished": run.finished, "manifest": run.manifest,
                "partial": run.partial, "partial_reasons": list(run.partial_reasons),
                "scope": run.scope.to_json(), "pytest_exit": run.pytest_exit,
                "pytest_stacks_version": run.pytest_stacks_version,
                "collected": list(run.collected), "deselected": run.deselected,
                "commit": run.commit, "manifest_digest": run.manifest_digest,
                "code_digest": run.code_digest,
                "plan": None if run.plan is None else {"stacks": list(run.plan[0]),
                                                       "digest": run.plan[1]}},
        "stacks": [_stack_json(s) for s in doc.stacks],
    }


def _stack_json(s: StackResult) -> dict[str, Any]:
    return {
        "name": s.name, "backend": s.backend, "version": s.version, "provider": s.provider,
        "transport": s.transport, "configuration": s.configuration, "role": s.role,
        "fake": s.fake, "pins": dict(s.pins), "inputs_digest": s.inputs_digest,
        "observed": {"daemon": s.observed_daemon, "client": s.observed_client},
        "startup_s": s.startup_s, "verdict": s.verdict, "infra": s.infra,
        "problems": list(s.problems),
        "capabilities": {name: {"offered": c.offered, "status": c.status,
                                "passed": list(c.passed), "failed": list(c.failed),
                                "skipped": list(c.skipped), "infra": list(c.infra)}
                         for name, c in s.capabilities.items()},
        "tests": [{"nodeid": t.nodeid, "outcome": t.outcome, "duration_s": t.duration_s,
                   "requires": list(t.requires), "identities": list(t.identities),
                   "message": t.message, "infra_retries": t.infra_retries} for t in s.tests],
        "infra_retries": [{"attempt": r.attempt, "fault": r.fault, "tests": list(r.tests)}
                          for r in s.infra_retries],
        "parity": s.parity,
        **({"driver": s.driver} if s.driver else {}),
    }


def dump(doc: ResultsDoc | Mapping[str, Any], path: str | Path) -> None:
    """Validate ``doc`` and write it to ``path`` atomically (never a half-written file for a
    report to trip over); raise :class:`ResultsError` without writing anything otherwise."""
    if isinstance(doc, ResultsDoc):
        doc = to_json(doc)
    validate(doc, path)
    try:
        text = json.dumps(doc, indent=1, ensure_ascii=False, allow_nan=False) + "\n"
    except ValueError as exc:
        raise ResultsError([f"{path}: $: cannot be written as JSON ({exc})."]) from None
    size = len(text.encode("utf-8"))
    if size > MAX_BYTES:
        raise ResultsError([f"{path}: $: would be {size:,} bytes, over the {MAX_BYTES // 2**20} "
                            f"MiB a reader accepts. Shorten the test messages."])
    try:
        write_atomic(Path(path), text)
    except EvidenceError as exc:  # it names the path and the OS error already
        raise ResultsError([str(exc)]) from None


def write_atomic(path: Path, text: str, what: str = "results file") -> None:
    """Write ``text`` to ``path`` whole (:func:`pytest_stacks.evidence.write_whole`: a
    temporary file in the same folder, fsync, rename; a device or FIFO in place), so a reader
    never meets half a file; EvidenceError naming the path and the OS error otherwise."""
    write_whole(path, text, what=what)


__all__ = ["MAX_BYTES", "SCHEMA_ID", "SCHEMA_VERSION", "STATUSES", "VERDICTS", "CapabilityResult",
           "CaseResult", "InfraRetry", "Outcome", "ResultsDoc", "ResultsError", "RunInfo",
           "StackResult", "Status", "Verdict", "capability_status", "dump", "json_path", "load",
           "parse", "read_json", "schema", "stack_verdict", "to_json", "validate", "write_atomic"]
