"""The model of a results document (``pytest-stacks/results``) and the two rules that turn
test outcomes into a capability status and a stack verdict: what the plugin writes and the
report reads, kept apart from the validator, reader and writer (:mod:`.results`, which
re-exports all of it) so each stays one job. Pure: no pytest, no files."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from pytest_stacks.ci.scope import Scope

Verdict = Literal["pass", "fail", "infra", "unproven", "not-run"]
Status = Literal["pass", "fail", "infra", "unproven", "not-offered"]
Outcome = Literal["passed", "failed", "skipped", "infra"]
VERDICTS: tuple[Verdict, ...] = ("pass", "fail", "infra", "unproven", "not-run")
STATUSES: tuple[Status, ...] = ("pass", "fail", "infra", "unproven", "not-offered")



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
    #: How many times a fault broke the stack under this test and the test ran again on a
    #: fresh one (``--stack-infra-retry``); its outcome is the last attempt's.
    infra_retries: int = 0


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
class InfraRetry:
    """One infra retry of a stack: the bring-up (``attempt``, 1 the first) that broke, the
    fault as the harness named it, and the tests that hit it and ran again on the fresh
    one."""

    attempt: int
    fault: str
    tests: tuple[str, ...]


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
    #: Each time the stack broke and was brought up fresh: a pass after one is never a clean
    #: pass (the report says so).
    infra_retries: tuple[InfraRetry, ...] = ()

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
