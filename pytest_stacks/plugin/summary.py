"""The lines of the pytest-stacks section of the terminal summary: a line per stack (its
observed or claimed versions, its start-up, how many tests ran), the infrastructure errors said
once per stack, and the fail-closed problems (counted under ``-q``)."""

from __future__ import annotations

from typing import Any

from pytest_stacks.errors import INFRA_PREFIX
from pytest_stacks.lifecycle import StackRecord
from pytest_stacks.manifest import Stack
from pytest_stacks.plugin import outcomes
from pytest_stacks.plugin.props import PROP_INFRA, PROP_STACK
from pytest_stacks.plugin.state import State
from pytest_stacks.verdicts.table import claimed


def fail_closed(tr: Any, current: State) -> None:
    """Each problem that fails the run closed, a line each; under ``-q`` their count and
    where to read them (the results file lists every one), so a quiet run stays short."""
    problems = current.closing_problems
    if tr.config.get_verbosity() < 0 and len(problems) > 1:
        path = outcomes.results_path(tr.config)
        where = f", or read each stack's \"problems\" in {path}" if path is not None else ""
        tr.write_line(f"FAIL-CLOSED: {len(problems)} problems; run without -q to see "
                      f"them{where}", red=True, bold=True)
        return
    for problem in problems:
        tr.write_line(f"FAIL-CLOSED: {problem}", red=True, bold=True)


def notes(tr: Any, current: State) -> None:
    """What the run says but does not fail on, a line each; under ``-q`` the unproven
    capabilities (a line per stack and capability) are counted instead, with where to read
    them, as the fail-closed lines are."""
    said = current.notes
    unproven = [n for n in said if n.kind == "unproven" and n.stack is not None]
    if tr.config.get_verbosity() < 0 and len(unproven) > 1:
        path = outcomes.results_path(tr.config)
        where = f", or read each stack's \"problems\" in {path}" if path is not None else ""
        tr.write_line(f"{len(unproven)} unproven capabilities; run without -q to see them"
                      f"{where}", yellow=True)
        said = [n for n in said if n not in unproven]
    for note in said:
        tr.write_line(str(note), yellow=note.kind == "unproven")


def infra_section(tr: Any) -> set[str]:
    """One paragraph per broken stack: its reason and its logs once, how many tests it cost
    (listed under -v), never the same error once per test. Returns the stacks said, so the
    summary below points here instead of saying it again."""
    infra_reports = tr.stats.get("infra", [])
    if not infra_reports:
        return set()
    tr.section("stack infrastructure errors (not test failures)", red=True)
    by_stack: dict[str, list[Any]] = {}
    for rep in infra_reports:
        by_stack.setdefault(str(dict(rep.user_properties).get(PROP_STACK, "?")), []).append(rep)
    for name, reports in by_stack.items():
        reasons = dict.fromkeys(str(dict(r.user_properties).get(PROP_INFRA, r.longrepr))
                                for r in reports)
        tr.write_sep("-", f"stack {name}: {len(reports)} test(s) hit an infrastructure error")
        for reason in reasons:
            tr.write_line(f"{INFRA_PREFIX}: stack {name!r}: {reason}", red=True)
        if tr.config.get_verbosity() > 0:
            for rep in reports:
                tr.write_line(f"  {rep.nodeid}")
        first = reports[0]
        for title, content in first.sections:
            if title.startswith(f"stack {name}"):
                tr.write_sep("-", title)
                tr.write_line(content[-8000:])
    return set(by_stack)


def _components(stack: Stack, record: StackRecord) -> str:
    """Each component's version as the stack reported it (a canary may float it), where the
    provider recorded one (``<component>_version`` among the endpoints)."""
    said = ""
    for component, pinned in sorted(stack.components.items()):
        observed = record.info.endpoints.get(f"{component}_version", "")
        if observed:
            said += f", {component} {observed}" + ("" if observed == pinned
                                                  else f" (pinned {pinned})")
    return said


def stack_line(current: State, stack: Stack) -> str:
    record = current.records.get(stack.name)
    versions = ""
    if record is not None and record.observed_version and stack.is_fake:
        versions = f" {claimed(record.observed_version)}"
        versions += f", up in {record.startup_s:.1f}s" if not record.info.kept else ""
    elif record is not None and record.observed_version:
        versions = f" daemon {record.observed_version}"
        if current.pool is not None and current.pool.ctx.lane == "canary":
            versions += (" (canary: as pinned)" if record.observed_version == stack.version
                         else f" (canary: floated from pin {stack.version})")
        if record.client_version:
            versions += f", client {record.client_version}"
        versions += _components(stack, record)
        if record.info.kept:
            versions += ", borrowed from `pytest-stacks up`"
        else:
            versions += f", up in {record.startup_s:.1f}s"
    return (f"{stack.name} ({stack.backend} {stack.version}, {stack.provider}):{versions} "
            f"{current.ran[stack.name]} test(s) ran")


def retries(current: State, stack: Stack) -> str:
    """What the stack's infra retries cost, for its summary line: "" without any, else e.g.
    ``passed after 1 infra retry (attempt 1: FAULT)`` when every test that ran passed (a
    retried pass is said as one, never shown as a clean pass), ``after 1 infra retry (...)``
    otherwise."""
    if current.outcomes is None or not current.outcomes.retries.get(stack.name):
        return ""
    broken = sorted(current.outcomes.retries[stack.name].items())
    count = len(broken)
    said = "; ".join(f"attempt {attempt}: {fault}" for attempt, (fault, _) in broken)
    words = f"after {count} infra {'retry' if count == 1 else 'retries'} ({said})"
    cases = current.outcomes.cases.get(stack.name, {}).values()
    clean = stack.name not in current.infra and all(c.final() in ("passed", "skipped")
                                                    for c in cases)
    return f"passed {words}" if clean else words


def deselected(current: State) -> str:
    """One deselected count, as pytest's closing line has it, with what deselected them: the
    plugin's own filter (a test about another backend, transport or provider is deselected,
    not skipped, there) and everything else (-k, -m, --deselect, a conftest or plugin)."""
    total = current.deselected + current.own_deselected
    if not current.own_deselected:
        return f"{total} test(s) deselected"
    by = [f"{current.own_deselected} by for_backend/for_transport/for_provider (about "
          f"another stack's backend, transport or provider)"]
    if current.deselected:
        by.append(f"{current.deselected} by -k, -m, --deselect, a conftest or a plugin")
    return f"{total} test(s) deselected: {'; '.join(by)}"
