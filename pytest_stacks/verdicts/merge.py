"""Many jobs' results -> one compatibility table, failing closed.

A table is only worth reading when it is complete and about the right thing: every expected job
reported exactly once, each about the stack the manifest pins, from a whole run (or exactly the
selection its plan row named, never a ``-k`` of its own) in the right lane, by that row's job
of this checkout's plan (:mod:`.provenance`), on a daemon version the stack allows, and every
stack passed. Anything else is one problem line naming the file and the stack, and the
aggregate is not green; the table is still built, because people need to see what there is.

What is expected comes from the manifest's lane (:func:`expected_from_lane`) or from the matrix
the jobs were planned with, checked to be that same lane (:func:`expected_from_matrix`). Fake
stacks are never matrix rows (see :mod:`pytest_stacks.ci.lanes`): their results are always
accepted as extra rows (the fake lane) without being required, and checked like every other
row (known to the manifest, its pins, a whole run, a pass). Any other stack the lane does not
hold is a problem.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_stacks import ci
from pytest_stacks.ci import scope
from pytest_stacks.manifest import Manifest, Stack
from pytest_stacks.verdicts import provenance
from pytest_stacks.verdicts.plans import FIELDS, expected_from_lane, expected_from_matrix
from pytest_stacks.verdicts.provenance import Checkout
from pytest_stacks.verdicts.results import (
    CapabilityResult,
    ResultsDoc,
    StackResult,
)
from pytest_stacks.verdicts.table import (
    Cell,
    Compatibility,
    Expected,
    Failure,
    Row,
)
from pytest_stacks.versions import release

SHOWN = 3  # node ids named in one problem line; the rest are counted
__all__ = ["Cell", "Compatibility", "Expected", "Failure", "Row", "expected_from_lane",
           "expected_from_matrix", "merge"]


# ---------------------------------------------------------------- merging


def merge(docs: Sequence[ResultsDoc], *, manifest: Manifest | None = None,
          expected: Expected | None = None, planned_tests: str | None = None,
          project: Path | None = None) -> Compatibility:
    """One table from ``docs``. With ``expected``, coverage must be exact (fakes aside);
    without it (one job's own summary) every reported stack is a row and nothing is missing,
    and ``planned_tests`` is the scope the job's plan named (its matrix row's ``tests``), so a
    job that ran exactly that is whole. With ``manifest``, every stack it knows is checked
    against its pins and capabilities, and every file against the checkout at ``project``
    (default: the current folder; :mod:`.provenance`)."""
    problems: list[str] = provenance.run_id_problems(docs)
    found = _index(docs, problems)
    checkout = Checkout.of(manifest, project or Path.cwd()) if manifest is not None else None
    columns = _columns(manifest, [s for _, s in found.values()])
    rows = _covered(expected, found, columns, manifest, checkout) \
        if expected is not None else []
    for doc, stack in found.values():
        known = _known(manifest, stack.name)
        pins_lane = "canary" if doc.run.lane == "canary" else "pr"
        want = ci.row(known, pins_lane) if known is not None else None
        if want is not None and planned_tests is not None:
            want = {**want, "tests": planned_tests}
        extra = []
        if expected is not None and not (known is not None and known.is_fake):
            extra.append(f"not in {expected.source}. Report only the lane's results, or plan "
                         f"the lane to hold it.")
        elif known is None:
            where = f"manifest {manifest.path}" if manifest is not None else "no manifest"
            extra.append(f"not in {where}, so its pins cannot be checked. Pass the manifest "
                         f"the run used (--manifest).")
        label = "fake" if known is not None and known.is_fake and expected is not None \
            else doc.run.ci_lane or doc.run.lane
        rows.append(_checked(doc, stack, want, None, columns, manifest, checkout, label,
                             extra))
    rows.sort(key=_order(manifest))
    problems += [p for row in rows for p in row.problems]  # in table order
    if not rows:
        problems.append("no stack results to report: the files name no stack.")
    return Compatibility(
        title=expected.title if expected is not None else "single job",
        lane=expected.lane if expected is not None else None, capabilities=columns,
        rows=tuple(rows), problems=tuple(problems), sources=tuple(d.source for d in docs))


def _covered(expected: Expected, found: dict[str, tuple[ResultsDoc, StackResult]],
             columns: Sequence[str], manifest: Manifest | None,
             checkout: Checkout | None) -> list[Row]:
    """The expected rows, each taken out of ``found`` (what is left over was not expected)."""
    rows = []
    for want in expected.rows:
        got = found.pop(want["stack"], None)
        if got is None:
            rows.append(_missing_row(want, expected, columns))
        else:
            rows.append(_checked(*got, want, expected.lane, columns, manifest, checkout))
    return rows


def _index(docs: Sequence[ResultsDoc],
           problems: list[str]) -> dict[str, tuple[ResultsDoc, StackResult]]:
    """Each stack's one result; every second report of a stack is a problem."""
    found: dict[str, tuple[ResultsDoc, StackResult]] = {}
    for doc in docs:
        if not doc.stacks:
            problems.append(f"{doc.source}: run {doc.run.run_id} reported no stack. Was pytest "
                            f"run with --stack?")
        if doc.run.pytest_exit != 0 and doc.stacks \
                and all(s.verdict == "pass" for s in doc.stacks):
            problems.append(f"{doc.source}: run {doc.run.run_id}: pytest exited "
                            f"{doc.run.pytest_exit} although every stack passed (a collection "
                            f"error, an interruption, or a failure outside the stacks).")
        for stack in doc.stacks:
            if stack.name in found:
                problems.append(f"{doc.source}: stack {stack.name}: also reported by "
                                f"{found[stack.name][0].source}; each stack must come from "
                                f"exactly one job.")
                continue
            found[stack.name] = (doc, stack)
    return found


def _checked(doc: ResultsDoc, stack: StackResult, want: Mapping[str, Any] | None,
             lane: str | None, columns: Sequence[str], manifest: Manifest | None,
             checkout: Checkout | None, label: str | None = None,
             extra: Sequence[str] = ()) -> Row:
    """The row of one reported stack, with what is wrong with it (one line each)."""
    where = f"{doc.source}: stack {stack.name}"
    found: list[str] = list(extra)
    known = _known(manifest, stack.name)
    if checkout is not None:
        found += provenance.stack_problems(doc, stack, doc.stacks.index(stack), checkout,
                                           known, want if lane is not None else None)
    if want is not None:
        found += _pin_problems(want.get("inputs", {}), stack.pins)
        found += [f"{key} is {getattr(stack, key)!r}, expected {want[key]!r}"
                  for key in FIELDS if key in want and want[key] != getattr(stack, key)]
    if lane is not None:
        found += _lane_problems(doc, lane)
    narrowed = scope.merge_problem(doc.run.scope, doc.run.partial_reasons,
                                   want.get("tests") if want is not None else None)
    if narrowed:
        found.append(narrowed)
    if known is not None:
        found += _offer_problems(stack, known)
        found += _version_problems(doc, stack, known)
    verdict = _verdict_problem(stack)
    found += [verdict] if verdict and not _said_by_its_problems(stack) else []
    found += [_line(p) for p in stack.problems]
    return Row(stack=stack.name, backend=stack.backend, version=stack.version, role=stack.role,
               lane=label or lane or "", provider=stack.provider, transport=stack.transport,
               configuration=stack.configuration, fake=stack.fake, verdict=stack.verdict,
               source=doc.source, run_id=doc.run.run_id, observed_daemon=stack.observed_daemon,
               observed_client=stack.observed_client, startup_s=stack.startup_s,
               infra=stack.infra, cells={c: _cell(stack, c) for c in columns},
               problems=tuple(f"{where}: {p}" for p in found), parity=stack.parity,
               driver=stack.driver, scope=doc.run.scope.describe(),
               deselected=doc.run.deselected,
               retries=tuple(f"attempt {r.attempt}: {r.fault} (hit {len(r.tests)} test(s), "
                             f"run again on a fresh stack)" for r in stack.infra_retries))


def _pin_problems(expected: Mapping[str, str], got: Mapping[str, str]) -> list[str]:
    def show(value: str | None) -> str:
        return "(absent)" if value is None else repr(value)

    return [f"pin {key} differs from the manifest's: expected {show(expected.get(key))}, got "
            f"{show(got.get(key))}"
            for key in sorted({*expected, *got}) if expected.get(key) != got.get(key)]


def _lane_problems(doc: ResultsDoc, lane: str) -> list[str]:
    found = []
    pinned = "canary" if lane == "canary" else "pinned"
    if doc.run.lane != pinned:
        found.append(f"ran with the {doc.run.lane} references, but the {lane} lane runs the "
                     f"{pinned} ones")
    if doc.run.ci_lane is not None and doc.run.ci_lane != lane:
        found.append(f"came from the {doc.run.ci_lane} lane, not the {lane} lane")
    return found


def _version_problems(doc: ResultsDoc, stack: StackResult, known: Stack) -> list[str]:
    """The daemon version the run observed must be one the stack allows: the pin (or an
    existing site's range); for a canary run, the pin's series or a later one."""
    at = f"$.stacks[{doc.stacks.index(stack)}].observed.daemon"
    observed = stack.observed_daemon
    if stack.verdict == "infra" and not observed:
        return []  # it never came up: its infra problem says so
    if not observed:
        return [f"{at} is empty: the run did not say which daemon it tested; re-run pytest "
                f"--stack={stack.name} with a pytest-stacks that records it"]
    if doc.run.lane == "canary":
        if known.accepts_floated(observed):
            return []
        return [f"{at} is {observed!r}, older than the pin's series ({known.pin_series}): a "
                f"canary floats forward from its pin, never back; fix its canary reference"]
    if known.accepts_version(observed):
        return []
    return [f"{at} is {observed!r}, but the manifest allows {known.allowed_versions}: the run "
            f"tested another daemon; re-run pytest --stack={stack.name} against the pinned one"]


def _offer_problems(stack: StackResult, known: Stack) -> list[str]:
    offered = {name for name, cap in stack.capabilities.items() if cap.offered}
    return ([f"capability {c} is offered in the manifest but not in the results"
             for c in sorted(known.capabilities - offered)]
            + [f"capability {c} is offered in the results but not in the manifest"
               for c in sorted(offered - known.capabilities)])


def _verdict_problem(stack: StackResult) -> str | None:
    if stack.verdict == "pass":
        return None
    if stack.verdict == "fail":
        return f"fail: {_some([t.nodeid for t in stack.tests if t.outcome == 'failed'])} failed"
    if stack.verdict == "infra":
        hit = [t.nodeid for t in stack.tests if t.outcome == "infra"]
        why = _line(stack.infra) if stack.infra else f"{_some(hit)} hit infrastructure errors"
        return f"infra: {why}"
    if stack.verdict == "unproven":
        open_ = [n for n, c in stack.capabilities.items() if c.status == "unproven"]
        return f"unproven: no test proved {', '.join(open_) or 'its capabilities'}"
    return f"{stack.verdict}: no test ran on this stack"


def _said_by_its_problems(stack: StackResult) -> bool:
    """An unproven stack whose results already carry a line per unproven capability (as
    the run's summary printed them): its verdict line would count each one a second time."""
    if stack.verdict != "unproven":
        return False
    open_ = [n for n, c in stack.capabilities.items() if c.status == "unproven"]
    return bool(open_) and all(any(p.startswith(f"{name} unproven") for p in stack.problems)
                               for name in open_)


def _some(nodeids: Sequence[str]) -> str:
    named = ", ".join(nodeids[:SHOWN])
    more = f" and {len(nodeids) - SHOWN} more" if len(nodeids) > SHOWN else ""
    return f"{len(nodeids)} test(s) ({named}{more})"


def _line(text: str, limit: int = 300) -> str:
    """The first non-empty line, shortened: a problem is one line."""
    first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
    return first if len(first) <= limit else first[: limit - 3] + "..."


def _cell(stack: StackResult, capability: str) -> Cell:
    cap: CapabilityResult | None = stack.capabilities.get(capability)
    if cap is None:
        return Cell("unreported")
    failures: tuple[Failure, ...] = ()
    if cap.status in ("fail", "infra"):
        failures = tuple(Failure(n, o, t.message if (t := stack.test(n)) else "")
                         for o, ids in (("failed", cap.failed), ("infra", cap.infra))
                         for n in ids)
    return Cell(cap.status, len(cap.passed), len(cap.failed), len(cap.skipped), len(cap.infra),
                failures)


def _missing_row(want: Mapping[str, Any], expected: Expected, columns: Sequence[str]) -> Row:
    def get(key: str) -> str:
        return str(want.get(key, "?"))

    return Row(stack=want["stack"], backend=get("backend"), version=get("version"),
               role=get("role"), lane=expected.lane, provider=get("provider"),
               transport=get("transport"), configuration=get("configuration"), fake=False,
               verdict="missing", cells={c: Cell("missing") for c in columns},
               problems=(f"{expected.source}: stack {want['stack']}: no results. Did its job "
                         f"run and upload its results file?",))


def _known(manifest: Manifest | None, name: str) -> Stack | None:
    if manifest is None:
        return None
    return next((s for s in manifest.stacks if s.name == name), None)


def _columns(manifest: Manifest | None, stacks: Iterable[StackResult]) -> tuple[str, ...]:
    """The union of reported capabilities: manifest order, then the others alphabetically."""
    names = {c for s in stacks for c in s.capabilities}
    order = list(manifest.capabilities) if manifest is not None else []
    return (*(c for c in order if c in names), *sorted(names - set(order)))


def _order(manifest: Manifest | None) -> Any:
    """Backends (manifest order), then versions in window order (anchor .. leading edge by
    release), real before fake, then by name."""
    backends = list(manifest.backends) if manifest is not None else []

    def key(row: Row) -> tuple[int, str, tuple[int, ...], bool, str]:
        at = backends.index(row.backend) if row.backend in backends else len(backends)
        return (at, row.backend, release(row.version), row.fake, row.stack)

    return key
