"""Reporting: what every test report says about its stack, the infra outcome, failure
diagnostics, and the fail-closed verdict at the end. Registered only when a manifest is in use."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pytest_stacks import progress, signals
from pytest_stacks.errors import INFRA_PREFIX, InfrastructureError, Problem
from pytest_stacks.evidence import EvidenceError
from pytest_stacks.manifest import Stack
from pytest_stacks.plugin import outcomes, summary, tally
from pytest_stacks.plugin.bringup import only_looking
from pytest_stacks.plugin.fixtures import HANDLES
from pytest_stacks.plugin.props import PROP_INFRA, PROP_REQUIRES, PROP_STACK, RETRIED
from pytest_stacks.plugin.state import (
    OWN_DESELECTION,
    State,
    choice_setting,
    item_stack,
    state,
)
from pytest_stacks.verdicts.table import claimed


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report: pytest.TestReport = yield
    stack = item_stack(item)
    if stack is None:
        return report
    report.user_properties.append((PROP_STACK, stack.name))
    report.user_properties.append((PROP_REQUIRES, ",".join(outcomes.required(item))))
    current = state(item.config)
    attached = current.pool.attached(stack.name) if current.pool is not None else None
    if attached is not None:
        # Every test's report (junit <properties> included) says what it really ran against;
        # a fake's version is what the double claims (it echoes its pin), never observed.
        for key, value in version_properties(stack, attached.observed_version,
                                             attached.client_version):
            report.user_properties.append((f"pytest-stacks:{key}", value))
    if call.when == "call":
        _record_identities(item, report)
    error = _infrastructure_error(item, stack, call, report)
    if error is not None:
        report.user_properties.append((PROP_INFRA, error.message))
        report.longrepr = f"{INFRA_PREFIX}: {error}"
        if error.logs:
            report.sections.append((f"stack {stack.name}: daemon logs", error.logs[-20000:]))
    elif report.failed and call.when == "call":
        _attach_diagnostics(item, stack, report)
    return report


def version_properties(stack: Stack, daemon: str, client: str) -> list[tuple[str, str]]:
    """What a test's report says of the versions it ran against: the daemon's and the
    client's as observed, or for a fake (a double echoing its pin) its claim only."""
    if stack.is_fake:
        return [("claimed_version", claimed(daemon))] if daemon else []
    return [(key, value) for key, value in (("observed_version", daemon),
                                            ("client_version", client)) if value]


def _infrastructure_error(item: pytest.Item, stack: Stack, call: pytest.CallInfo[None],
                          report: pytest.TestReport) -> InfrastructureError | None:
    """The infrastructure error behind this report: raised by the harness, or a stack that
    broke under the test (its failure is then not the product's). A failure is the
    product's only when the stack is healthy right after it; the stack is asked (its
    provider and its backend's words, with what the failure said), the plugin only reports."""
    if call.excinfo is not None and call.excinfo.errisinstance(InfrastructureError):
        raised = call.excinfo.value
        assert isinstance(raised, InfrastructureError)
        return raised
    pool = state(item.config).pool
    if not report.failed or pool is None or stack.is_fake or pool.attached(stack.name) is None:
        return None
    said = call.excinfo.exconly() if call.excinfo is not None else report.longreprtext
    return pool.check_health(stack, said)


def _record_identities(item: pytest.Item, report: pytest.TestReport) -> None:
    """What the API server assigned to this test's jobs (kind, name, UID, owner), in every
    report and junit file, for drivers that record identities (Kubernetes)."""
    client = item.stash.get(HANDLES, None)
    if client is None or not client.handles:
        return
    try:  # a user's client may answer even its attributes from a stack that went away
        identities = getattr(client, "identities", None)
        if identities is None:
            return
        found = identities(client.handles)
    except Exception as exc:  # a report must not fail because the API went away
        report.user_properties.append(("pytest-stacks:identities", f"(unavailable: {exc})"))
        return
    for ident in found:
        prop = ("pytest-stacks:identity",
                f"{ident.kind} {ident.namespace}/{ident.name} uid={ident.uid}"
                + (f" owner={ident.owner_uid}" if ident.owner_uid else ""))
        report.user_properties.append(prop)
        item.user_properties.append(prop)  # junit writes the teardown report's properties


def _attach_diagnostics(item: pytest.Item, stack: Stack, report: pytest.TestReport) -> None:
    """The scheduler's view of this test's jobs and the daemons' logs; never in the way of the
    real failure."""
    client = item.stash.get(HANDLES, None)
    if client is not None and client.handles:
        try:
            report.sections.append((f"stack {stack.name}: scheduler view of this test's jobs",
                                    client.describe_jobs(client.handles)))
        except Exception as exc:
            report.sections.append((f"stack {stack.name}: jobs", f"(unavailable: {exc})"))
    pool = state(item.config).pool
    attached = pool.attached(stack.name) if pool is not None else None
    if attached is not None and "logs" in stack.capabilities:
        try:
            logs = attached.logs()[-60000:]
        except Exception as exc:
            logs = f"(unavailable: {exc})"
        report.sections.append((f"stack {stack.name}: daemon logs", logs))


def pytest_report_teststatus(report: pytest.TestReport,
                             config: pytest.Config) -> tuple[str, str, Any] | None:
    props = getattr(report, "user_properties", ())
    if report.failed and any(k == PROP_INFRA for k, _ in props):
        return "infra", "I", ("INFRA", {"red": True, "bold": True})
    if report.outcome == RETRIED:
        return RETRIED, "R", ("INFRA-RETRIED", {"yellow": True})
    return None


class Tracker:
    """Counts, per stack, what ran. Registered per config, so nested sessions stay apart;
    under xdist it runs on the controller, which receives every worker's reports."""

    def __init__(self, state: State) -> None:
        self._state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        name = props.get(PROP_STACK)
        if not isinstance(name, str):
            return
        self._state.seen[name] += 1
        if self._state.outcomes is not None:
            self._state.outcomes.add(report)
        if PROP_INFRA in props:
            self._state.infra.setdefault(name, str(props[PROP_INFRA]))
        if report.when == "call" and report.outcome in ("passed", "failed"):
            self._state.ran[name] += 1

    def pytest_deselected(self, items: list[pytest.Item]) -> None:
        own = sum(1 for i in items if i.stash.get(OWN_DESELECTION, False))
        self._state.own_deselected += own
        self._state.deselected += len(items) - own

    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """The stack tests collected (parametrised with a stack, never a test whose own
        parameter merely starts with a stack's name): each needs an outcome in its stack's
        results, which the report checks."""
        self._state.collected = [item.nodeid for item in session.items
                                 if item_stack(item) is not None]

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node: Any, error: Any) -> None:
        """A worker's deselections and collected stack tests, which only it saw (it collected,
        the controller did not; every worker collects the same tests)."""
        output = getattr(node, "workeroutput", None) or {}
        self._state.deselected = max(self._state.deselected,
                                     int(output.get(WORKER_DESELECTED, 0)))
        self._state.own_deselected = max(self._state.own_deselected,
                                         int(output.get(WORKER_OWN_DESELECTED, 0)))
        collected = output.get(WORKER_COLLECTED)
        if isinstance(collected, list) and self._state.collected is None:
            self._state.collected = [str(nodeid) for nodeid in collected]
        lost = output.get(WORKER_LOST_WRITES)  # a worker's timings lines that did not land
        for line in lost if isinstance(lost, list) else []:
            problem = Problem(None, "timings", str(line))
            if problem not in self._state.closing_problems:
                self._state.closing_problems.append(problem)


#: What a worker tells the controller it deselected and collected (xdist's ``workeroutput``).
WORKER_DESELECTED = "pytest_stacks_deselected"
WORKER_COLLECTED = "pytest_stacks_collected"
WORKER_LOST_WRITES = "pytest_stacks_lost_writes"
WORKER_OWN_DESELECTED = "pytest_stacks_own_deselected"


@pytest.hookimpl(tryfirst=True)
def pytest_collection(session: pytest.Session) -> None:
    """A run that is about to collect and run tests first takes away the results file a
    previous run left: a run that then ends early (Ctrl-C, a crash, a collection error) must
    never leave that older file standing as if it were its own."""
    current = state(session.config)
    if not current.owner or current.pool is None or session.config.getoption("collectonly"):
        return
    current.collecting = True
    current.binding = outcomes.binding_now(session.config, current)
    target = outcomes.results_path(session.config)
    if target is not None:
        try:
            target.unlink(missing_ok=True)
        except NotADirectoryError:
            pass  # nothing there to remove; writing it fails at the end, naming why
        except OSError as exc:
            current.closing_problems.append(Problem(
                None, "results", f"cannot remove the previous results file {target}: {exc}"))


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    current = state(session.config)
    if current.pool is None:
        return
    if not current.owner:
        workeroutput = getattr(session.config, "workeroutput", None)
        if workeroutput is not None:
            workeroutput[WORKER_DESELECTED] = current.deselected
            workeroutput[WORKER_OWN_DESELECTED] = current.own_deselected
            workeroutput[WORKER_COLLECTED] = list(current.collected or ())
            workeroutput[WORKER_LOST_WRITES] = progress.lost_writes()
        current.pool.release()
        return
    if only_looking(session.config) and not current.pool.records():
        # --co, --fixtures: nothing was brought up, so nothing to tear down or judge, and the
        # last real run's results file stays as it is.
        current.pool.release()
        current.pool.run_dir.remove()
        return
    selected = {s.name: s for s in current.selected}
    with signals.deferred():
        current.pool.settle()  # stacks ended early are finished before anything is read
        current.records = {r.stack: r for r in current.pool.records()}
        try:
            kept = current.pool.keep(selected, _to_keep(session.config, current),
                                     "a test failed on it or it hit an infrastructure error "
                                     "(--stack-keep=on-failure)")
        except EvidenceError as exc:  # unrecorded, a kept stack is a leak: brought down
            kept = {}
            current.closing_problems.append(Problem(None, "kept", f"{exc}; the stacks "
                                                    f"were brought down instead of kept"))
        for problem in current.pool.teardown(selected, keep=kept):
            (current.closing_problems if problem.failing else current.notes).append(problem)
    current.notes += [Problem(name, "kept", line, failing=False) for name, line in kept.items()]
    for line in progress.lost_writes():
        if Problem(None, "timings", line) not in current.closing_problems:
            current.closing_problems.append(Problem(None, "timings", line))
    if not current.closing_problems and not kept:
        current.pool.run_dir.remove()
    if not current.collecting or exitstatus == pytest.ExitCode.USAGE_ERROR:
        return  # nothing was meant to run (--collect-only, --fixtures, a usage error)
    if exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR):
        # Ended early: its results say so (the report refuses them as a cell), and no older
        # file stands in their place.
        if _judged(current):
            _write_results(session, current)
        return
    current.closing_problems.extend(_nothing_ran(current))
    if _judged(current):
        _judge_capabilities(session.config, current)
    if current.closing_problems or current.infra:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    if _judged(current):
        _write_results(session, current)


def _write_results(session: pytest.Session, current: State) -> None:
    if current.outcomes is None:
        return
    target = outcomes.results_path(session.config)
    document = outcomes.results(session.config, current, current.outcomes,
                                session.exitstatus, str(target or "<results>"))
    path, problem = outcomes.write(session.config, document)
    if problem:
        current.closing_problems.append(Problem(None, "results", problem))
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
    elif path is not None:
        current.notes.append(Problem(None, "results", f"results: {path}", failing=False))


KEEP_POLICIES = ("never", "on-failure")


def keep_policy(config: pytest.Config) -> str:
    return choice_setting(config, "stack_keep", "stacks_keep", KEEP_POLICIES)


def _to_keep(config: pytest.Config, current: State) -> list[str]:
    """Under ``--stack-keep=on-failure``: the stacks on which a test failed or an
    infrastructure error happened (a person looks at them; ``pytest-stacks down`` ends them)."""
    if keep_policy(config) != "on-failure":
        return []
    failing = set(current.infra)
    if current.outcomes is not None:
        failing |= {name for name, cases in current.outcomes.cases.items()
                    if any(c.final() in ("failed", "infra") for c in cases.values())}
    return sorted(failing)


def _judged(current: State) -> bool:
    """Stacks are judged when the run asked for them or a test used one (not when a project's
    unrelated tests ran with the default fake selection)."""
    return current.explicit or sum(current.seen.values()) > 0


def _judge_capabilities(config: pytest.Config, current: State) -> None:
    """Unproven capabilities are reported (the default, warn); under --stack-unproven=auto
    they fail a whole run and a partial run only reports them; under fail they always fail."""
    assert current.manifest is not None
    if current.outcomes is None:
        return
    policy = outcomes.unproven_policy(config)
    reasons = outcomes.partial_reasons(config, pytest.ExitCode.OK)
    failing = policy == "fail" or (policy == "auto" and not reasons)
    for stack in current.selected:
        if stack.name in current.infra or current.ran[stack.name] == 0:
            continue  # already failing for a reason that explains this one
        table = current.outcomes.capabilities(stack, list(current.manifest.capabilities))
        for line in tally.unproven(stack, table):
            found = Problem(stack.name, "unproven", line, failing=failing)
            (current.closing_problems if failing else current.notes).append(found)
    if not failing and any(n.kind == "unproven" for n in current.notes):
        if policy == "warn":
            text = ("unproven capabilities are not failing this run: --stack-unproven=warn "
                    "(the default); --stack-unproven=fail fails on them")
        else:
            text = ("unproven capabilities are not failing this run: a partial run ("
                    + "; ".join(reasons) + "); the whole suite fails on them")
        current.notes.append(Problem(None, "unproven", text, failing=False))


def _nothing_ran(current: State) -> list[Problem]:
    """A selected stack on which no test ran fails the session (fail closed)."""
    any_stack_test = sum(current.seen.values()) > 0
    return [Problem(stack.name, "nothing-ran", "no test ran on this stack (all skipped or "
                    "deselected). A selected stack must run at least one test.")
            for stack in current.selected
            if current.ran[stack.name] == 0 and stack.name not in current.infra
            and (current.explicit or any_stack_test)]


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    current = state(config)
    if not current.selected or not current.owner:
        return
    if not current.explicit and not sum(current.seen.values()):
        return  # the default fake selection, and no test used a stack: nothing to report
    tr = terminalreporter
    said_above = summary.infra_section(tr)
    tr.section("pytest-stacks")
    for stack in current.selected:
        line = summary.stack_line(current, stack)
        retried = summary.retries(current, stack)
        line += f", {retried}" if retried else ""
        if stack.name in said_above:
            tr.write_line(f"{line} INFRASTRUCTURE ERROR (above)", red=True)
        elif stack.name in current.infra:
            tr.write_line(f"{line} INFRASTRUCTURE ERROR: {current.infra[stack.name]}", red=True)
        else:
            tr.write_line(line, yellow=bool(retried))
    # What ran, as the results file and the compatibility table say it.
    tr.write_line(f"run scope: {outcomes.run_scope(config).describe()}, "
                  f"{summary.deselected(current)}")
    summary.notes(tr, current)
    summary.fail_closed(tr, current)
    if current.closing_problems:
        # The closing line ("5 passed, 1 fail-closed in 0.3s") says why the run failed.
        tr.stats.setdefault("fail-closed", []).extend(current.closing_problems)
