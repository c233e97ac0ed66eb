"""What the controller saw, per stack and test: each test's reports folded into one case, the
capabilities those cases proved, and what binds the results to the run. Pure bookkeeping over
pytest's reports; judging them into a results document is :mod:`.outcomes`."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

import pytest

from pytest_stacks.manifest import Stack
from pytest_stacks.plugin.props import (
    PROP_IDENTITY,
    PROP_INFRA,
    PROP_PARITY,
    PROP_REQUIRES,
    PROP_RETRIED,
    PROP_STACK,
    RETRIED,
)
from pytest_stacks.verdicts.results import CapabilityResult, capability_status


@dataclass
class Case:
    """One test on one stack, folded over its setup, call and teardown reports."""

    nodeid: str
    requires: tuple[str, ...] = ()
    outcome: str = "passed"
    duration_s: float = 0.0
    identities: list[str] = field(default_factory=list)
    message: str = ""
    called: bool = False
    parity: str = ""
    retries: int = 0  # attempts a fault broke, each run again on a fresh stack

    def add(self, report: pytest.TestReport, props: dict[str, Any]) -> None:
        self.duration_s += report.duration
        if PROP_RETRIED in props:  # an attempt the fault broke: its outcome is not the test's
            self.retries += report.outcome == RETRIED
            return
        self.identities += [str(v) for k, v in report.user_properties
                            if k == PROP_IDENTITY and str(v) not in self.identities]
        self.parity = str(props.get(PROP_PARITY, self.parity))
        if PROP_INFRA in props:
            self._set("infra", str(props[PROP_INFRA]))
        elif report.failed:
            self._set("failed", _first_lines(report.longreprtext))
        elif report.skipped:
            reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else ""
            self._set("skipped", str(reason))
        if report.when == "call":
            self.called = True

    def _set(self, outcome: str, message: str) -> None:
        rank = ("passed", "skipped", "failed", "infra")
        if rank.index(outcome) > rank.index(self.outcome):
            self.outcome, self.message = outcome, message[:2000]

    def final(self) -> str:
        return self.outcome if self.called or self.outcome != "passed" else "skipped"


def _first_lines(text: str, lines: int = 8) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


@dataclass
class Outcomes:
    """What the controller saw, per stack and test."""

    started: str = field(default_factory=lambda: datetime.now(UTC).isoformat())
    cases: dict[str, dict[str, Case]] = field(default_factory=dict)
    #: Per stack and broken attempt: the fault and the tests it hit (each run again).
    retries: dict[str, dict[int, tuple[str, list[str]]]] = field(default_factory=dict)

    def add(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        name = props.get(PROP_STACK)
        if not isinstance(name, str):
            return
        if PROP_RETRIED in props and report.outcome == RETRIED:
            retried = json.loads(str(props[PROP_RETRIED]))
            _, hit = self.retries.setdefault(name, {}).setdefault(
                int(retried["attempt"]), (str(retried["fault"]), []))
            hit.append(report.nodeid)
        cases = self.cases.setdefault(name, {})
        case = cases.get(report.nodeid)
        if case is None:
            requires = tuple(filter(None, str(props.get(PROP_REQUIRES, "")).split(",")))
            case = cases[report.nodeid] = Case(report.nodeid, requires)
        case.add(report, props)

    def capabilities(self, stack: Stack, names: list[str]) -> dict[str, CapabilityResult]:
        cases = list(self.cases.get(stack.name, {}).values())
        table: dict[str, CapabilityResult] = {}
        for name in names:
            buckets: dict[str, list[str]] = {"passed": [], "failed": [], "skipped": [],
                                             "infra": []}
            for case in cases:
                if name in case.requires:
                    buckets[case.final()].append(case.nodeid)
            offered = name in stack.capabilities
            status = capability_status(offered, len(buckets["passed"]),
                                       len(buckets["failed"]), len(buckets["infra"]))
            table[name] = CapabilityResult(offered, status, *(tuple(buckets[b]) for b in (
                "passed", "failed", "skipped", "infra")))
        return table


def unproven(stack: Stack, table: dict[str, CapabilityResult]) -> list[str]:
    """The capability lines of the summary, e.g. ``outputs.repeatable unproven (0 tests
    required it)``."""
    lines = []
    for name in sorted(stack.capabilities):
        cap = table[name]
        if cap.status != "unproven":
            continue
        required_by = len(cap.skipped)
        lines.append(f"{name} unproven (0 tests required it)" if not required_by else
                     f"{name} unproven (none of the {required_by} test(s) requiring it ran)")
    return lines


@dataclass(frozen=True)
class Binding:
    """What binds the run's results to what produced it (:mod:`pytest_stacks.ci.binding`),
    taken when the run starts collecting: the code and stack folders the tests ran with, not
    what the tests may have left behind."""

    commit: str
    manifest_digest: str
    code_digest: str
    inputs: dict[str, str]
