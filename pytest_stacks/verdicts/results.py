"""The results document one pytest run with stacks writes (``pytest-stacks/results`` v1).

The plugin writes it at the end of a run and ``pytest-stacks report`` reads many of them, often
in another job on another machine. So the two rules that turn test outcomes into a capability
status and a stack verdict live here, once, and :func:`validate` re-derives them: a writer and a
reader that disagreed would make the table lie. A file is refused whole (:class:`ResultsError`
naming the file, the JSON path and the fix), never half-read, because a report that skipped
what it could not parse would be green by omission.

Long because the rules, the validator that re-derives them, the reader and the writer are one
contract: the plugin imports this one module, and a writer that could pick up a rule without
the check of it (or the reader's limits) could write files the report refuses.
"""

from __future__ import annotations

import json
import math
import os
import re
import stat
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from pytest_stacks.ci.scope import Scope
from pytest_stacks.errors import StacksError
from pytest_stacks.evidence import EvidenceError, write_whole
from pytest_stacks.suggest import did_you_mean
from pytest_stacks.verdicts import run_checks
from pytest_stacks.verdicts.run_checks import INCONSISTENT

SCHEMA_ID = "pytest-stacks/results"
SCHEMA_VERSION = 3
MAX_BYTES = 16 * 1024 * 1024
REGENERATE = "Regenerate it with the pytest run that wrote it; results files are not edited."
BUCKETS = (("passed", "passed"), ("failed", "failed"), ("skipped", "skipped"), ("infra", "infra"))
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
#: What each pattern of the schema means, for the message of a value that misses it.
PATTERNS = {
    r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$": "{got!r} is not a capability name (lowercase "
                                               "words joined by dots, e.g. "
                                               "'outputs.repeatable').",
    r"^[0-9a-f]{64}$": "{got!r} is not a SHA-256 digest (64 lowercase hex digits).",
    r"^([0-9a-f]{40}([0-9a-f]{24})?|unknown)$": "{got!r} is not a git commit (40 or 64 "
                                                 "lowercase hex digits) or 'unknown'.",
}

Verdict = Literal["pass", "fail", "infra", "unproven", "not-run"]
Status = Literal["pass", "fail", "infra", "unproven", "not-offered"]
Outcome = Literal["passed", "failed", "skipped", "infra"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "infra", "unproven", "not-run")
STATUSES: tuple[Status, ...] = ("pass", "fail", "infra", "unproven", "not-offered")


class ResultsError(StacksError):
    """A results (or matrix) file cannot be used. ``problems``: one line per defect, each
    naming the file, the JSON path and what to do."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


# ---------------------------------------------------------------- the rules


def capability_status(offered: bool, passed: int, failed: int, infra: int) -> Status:
    """One capability on one stack, from the number of tests requiring it per outcome.

    A failure outranks an infrastructure error because it is evidence about the product; an
    infrastructure error outranks a pass because the proof is incomplete; no run test at all is
    "unproven", never a pass.
    """
    if not offered:
        return "not-offered"
    if failed:
        return "fail"
    if infra:
        return "infra"
    return "pass" if passed else "unproven"


def stack_verdict(outcomes: Iterable[str], statuses: Iterable[str] = (),
                  infra: str | None = None) -> Verdict:
    """One stack, from its tests' outcomes, its capabilities' statuses and its infrastructure
    error: infra > not-run > fail > unproven > pass.

    "not-run" (no test passed or failed) ranks above "fail" only because nothing can have
    failed then; infra ranks first because a stack that never came up explains everything else.
    """
    outcomes, statuses = list(outcomes), list(statuses)
    if infra or "infra" in outcomes or "infra" in statuses:
        return "infra"
    if "passed" not in outcomes and "failed" not in outcomes:
        return "not-run"
    if "failed" in outcomes or "fail" in statuses:
        return "fail"
    return "unproven" if "unproven" in statuses else "pass"


# ---------------------------------------------------------------- the model


@dataclass(frozen=True)
class CaseResult:
    """One test on one stack."""

    nodeid: str
    outcome: Outcome
    duration_s: float
    requires: tuple[str, ...]
    identities: tuple[str, ...]
    message: str


@dataclass(frozen=True)
class CapabilityResult:
    offered: bool
    status: Status
    passed: tuple[str, ...]
    failed: tuple[str, ...]
    skipped: tuple[str, ...]
    infra: tuple[str, ...]

    @property
    def ran(self) -> int:
        return len(self.passed) + len(self.failed) + len(self.infra)


@dataclass(frozen=True)
class StackResult:
    name: str
    backend: str
    version: str
    provider: str
    transport: str
    configuration: str
    role: str
    fake: bool
    pins: Mapping[str, str]
    observed_daemon: str
    observed_client: str
    startup_s: float | None
    verdict: Verdict
    infra: str | None
    problems: tuple[str, ...]
    capabilities: Mapping[str, CapabilityResult]
    tests: tuple[CaseResult, ...]
    #: For a fake: the recording it was checked against, when that was made, and the outcome.
    parity: str = ""
    #: What the reference driver adds beyond the backend's documented use (a workaround).
    driver: str = ""
    #: :func:`pytest_stacks.ci.binding.inputs_digest` of the stack the run used.
    inputs_digest: str = ""

    def test(self, nodeid: str) -> CaseResult | None:
        return next((t for t in self.tests if t.nodeid == nodeid), None)


@dataclass(frozen=True)
class RunInfo:
    run_id: str
    lane: Literal["pinned", "canary"]
    ci_lane: str | None
    started: str
    finished: str
    manifest: str
    partial: bool
    partial_reasons: tuple[str, ...]
    scope: Scope
    pytest_exit: int
    pytest_stacks_version: str
    #: The node ids the run collected after deselection, sorted: what a plan's suite is
    #: checked against (a narrowing no option names still shows as missing ids).
    collected: tuple[str, ...] = ()
    #: Tests deselected by anything but the plugin's own backend filter.
    deselected: int = 0
    #: What binds the file to what produced it (:mod:`pytest_stacks.ci.binding`).
    commit: str = "unknown"
    manifest_digest: str = ""
    code_digest: str = ""
    #: The rows of a plan the run answers: (their stacks, the plan's digest); None outside a
    #: lane's plan.
    plan: tuple[tuple[str, ...], str] | None = None


@dataclass(frozen=True)
class ResultsDoc:
    """``source``: the file it was read from, as given (every message names it)."""

    source: str
    run: RunInfo
    stacks: tuple[StackResult, ...]


# ---------------------------------------------------------------- validation


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema shipped in the package (``schema/results-v3.schema.json``)."""
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
        problems = [f"{src}: {p}" for p in _consistency_problems(doc)]
    if problems:
        raise ResultsError(_capped(problems))


def _capped(problems: list[str], limit: int = 20) -> list[str]:
    if len(problems) <= limit:
        return problems
    return [*problems[:limit], f"... and {len(problems) - limit} more problem(s)"]


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "true/false",
            int: "a number", float: "a number", type(None): "null"}.get(type(value), "a value")


def json_path(at: Iterable[str | int], doc: Any = None) -> str:
    """``$.stacks[0].capabilities["outputs.repeatable"]``, plus ``(stack NAME)`` when ``doc``
    says which stack ``stacks[i]`` is: an index alone sends people counting."""
    parts = list(at)
    text = "$" + "".join(f"[{p}]" if isinstance(p, int)
                         else f".{p}" if _IDENT.fullmatch(p) else f"[{json.dumps(p)}]"
                         for p in parts)
    if len(parts) >= 2 and parts[0] == "stacks" and isinstance(parts[1], int) \
            and isinstance(doc, dict) and isinstance(doc.get("stacks"), list) \
            and parts[1] < len(doc["stacks"]) and isinstance(doc["stacks"][parts[1]], dict):
        name = doc["stacks"][parts[1]].get("name")
        if isinstance(name, str):
            text += f" (stack {name})"
    return text


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
    if kind == "minimum":
        return f"{got!r} is negative; expected a number of seconds >= 0."
    if kind == "maximum":
        return f"{got!r} is past any real duration; expected a number of seconds <= {value:g}."
    if kind == "uniqueItems":
        return "lists a value twice."
    return f"{error.message}."


def _consistency_problems(doc: dict[str, Any]) -> Iterable[str]:
    """What the schema cannot say: the rules re-derived, the run's own story (timestamps,
    scope, collected ids; :mod:`.run_checks`), one entry per name."""
    yield from run_checks.run_problems(doc)
    names: set[str] = set()
    for i, stack in enumerate(doc["stacks"]):
        if stack["name"] in names:
            yield f"{json_path(['stacks', i, 'name'], doc)}: the stack is listed twice."
        names.add(stack["name"])
        if stack["fake"] != (stack["provider"] == "fake"):
            yield (f"{json_path(['stacks', i, 'fake'], doc)}: {json.dumps(stack['fake'])} "
                   f"contradicts provider {stack['provider']!r}.")
        yield from _stack_problems(stack, lambda *at, i=i: json_path(["stacks", i, *at], doc))


def _stack_problems(stack: dict[str, Any], at: Any) -> Iterable[str]:
    tests, caps = stack["tests"], stack["capabilities"]
    nodeids = [t["nodeid"] for t in tests]
    for j, nodeid in enumerate(nodeids):
        if nodeid in nodeids[:j]:
            yield f"{at('tests', j, 'nodeid')}: {nodeid!r} is listed twice."
        for name in tests[j]["requires"]:
            if name not in caps:
                yield (f"{at('tests', j, 'requires')}: {name!r} has no entry in this stack's "
                       f"capabilities; every required capability needs one.")
    for name, cap in caps.items():
        for bucket, outcome in BUCKETS:
            listed = set(cap[bucket])
            derived = {t["nodeid"] for t in tests if name in t["requires"]
                       and t["outcome"] == outcome}
            if listed != derived:
                yield (f"{at('capabilities', name, bucket)}: must list exactly the tests that "
                       f"require {name!r} and {outcome}; unlisted: "
                       f"{sorted(derived - listed)[:3]}, listed but not such a test: "
                       f"{sorted(listed - derived)[:3]}.")
        if not cap["offered"] and (cap["passed"] or cap["failed"]):
            yield (f"{at('capabilities', name, 'offered')}: false, yet tests requiring {name!r} "
                   f"ran; they must be skipped on a stack that does not offer it.")
        status = capability_status(cap["offered"], len(cap["passed"]), len(cap["failed"]),
                                   len(cap["infra"]))
        if cap["status"] != status:
            yield (f"{at('capabilities', name, 'status')}: {cap['status']!r}, but "
                   f"capability_status() gives {status!r} for it. {INCONSISTENT}")
    verdict = stack_verdict([t["outcome"] for t in tests],
                            [c["status"] for c in caps.values()], stack["infra"])
    if stack["verdict"] != verdict:
        yield (f"{at('verdict')}: {stack['verdict']!r}, but stack_verdict() gives {verdict!r} "
               f"for its tests and capabilities. {INCONSISTENT}")


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
                             tuple(t["requires"]), tuple(t["identities"]), t["message"])
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
        inputs_digest=s["inputs_digest"])


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
                   "message": t.message} for t in s.tests],
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
           "CaseResult", "Outcome", "ResultsDoc", "ResultsError", "RunInfo", "StackResult",
           "Status", "Verdict", "capability_status", "dump", "json_path", "load", "parse",
           "read_json", "schema", "stack_verdict", "to_json", "validate", "write_atomic"]
