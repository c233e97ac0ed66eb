"""``--stack-infra-retry=N`` (issue 60 item 5): a stack that breaks under the run (an
infrastructure fault, never a product failure) is brought down and up fresh, at most N times in
the run, and the test the fault hit runs again on it; the tests after it then run on the fresh
stack, as they would have on the first.

Registered in every process that runs tests (the single pytest process, or each xdist worker).
A test on a real stack runs its protocol here instead of in pytest's runner: when one of its
reports is an infrastructure error, the stack is asked to replace itself
(:meth:`~pytest_stacks.lifecycle.StackPool.replace`, under the stack's lock, counted across
every process by the stack's record). If it did, that attempt's faulted report is
logged with the outcome ``infra-retried`` (what a terminal, junit and the results file see: a
retried pass is never a clean one) and the test runs again; the attempt's teardown report is
not logged, so junit and the early release see one test that ends once. If it did not (the
fault came at bring-up, the retries are spent, the broken stack's teardown was not proven), the
reports are logged as they are, with why not added to the infrastructure error.

A product failure is never retried: a report is retried only when it carries the harness's
infrastructure verdict (the stack's health check found it broken).
"""

from __future__ import annotations

import json
from typing import Any, cast

import pytest
from _pytest.runner import runtestprotocol  # what pytest-rerunfailures uses too

from pytest_stacks.errors import INFRA_PREFIX, said
from pytest_stacks.plugin.props import PROP_INFRA, PROP_RETRIED, RETRIED, RETRIED_FAULTS
from pytest_stacks.plugin.state import State, item_stack, setting

DEFAULT_RETRIES = 0
OPTION = "--stack-infra-retry"
INI = "stacks_infra_retry"


def add_option(group: pytest.OptionGroup, parser: pytest.Parser) -> None:
    """The option and its ini setting (the plugin's addoption would otherwise outgrow the
    house's function size)."""
    group.addoption(OPTION, default=None, metavar="N",
                    help="How many times in the run a stack found broken under its tests (an "
                         "infrastructure fault, never a product failure) is brought down and "
                         "up fresh, the test the fault hit then running again on it: a whole "
                         f"number >= 0. Default: the '{INI}' ini option, else 0 (the stack's "
                         "remaining tests end as infrastructure errors). A pass after a retry "
                         "is reported as one, never as a clean pass.")
    parser.addini(INI, f"Retries of a broken stack ({OPTION}).", default="")


def parse_retries(raw: str) -> int:
    """The number of retries a user wrote, or ValueError saying why not (a whole number >= 0;
    empty, negative, fractional and words are refused, not rounded or defaulted)."""
    text = raw.strip()
    if not text or not (text.isascii() and text.isdigit()):
        raise ValueError(f"must be a whole number >= 0 (got {raw!r})")
    if int(text) > MAX_RETRIES:
        raise ValueError(f"is {int(text)}, more than {MAX_RETRIES}: a stack that breaks that "
                         f"often is the finding, not noise to retry past")
    return int(text)


#: A bound on what a retry may cost (each is a teardown and a whole bring-up).
MAX_RETRIES = 10


def retry_setting(config: pytest.Config) -> int:
    """``--stack-infra-retry``, else the ``stacks_infra_retry`` ini value, else 0; bad input is
    a usage error (exit 4) naming the option and the fix, never a traceback."""
    given = config.getoption("stack_infra_retry")
    raw = setting(config, "stack_infra_retry", INI, str(DEFAULT_RETRIES))
    name = OPTION if given is not None else f"the ini option {INI}"
    try:
        return parse_retries(raw)
    except ValueError as exc:
        raise pytest.UsageError(
            f"pytest-stacks: {name} {exc}; use {OPTION}=N with N from 0 (the default: a "
            f"broken stack's tests end as infrastructure errors) to {MAX_RETRIES}, or leave "
            f"it out") from None


class InfraRetry:
    """Runs each test on a real stack, and again on a fresh stack when a fault broke it."""

    def __init__(self, state: State, retries: int) -> None:
        self._state = state
        self._retries = retries

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item: pytest.Item, nextitem: pytest.Item | None
                                ) -> bool | None:
        stack = item_stack(item)
        pool = self._state.pool
        if stack is None or stack.is_fake or pool is None:
            return None  # pytest's own runner: nothing here can break under it
        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        while True:
            reports = runtestprotocol(item, nextitem=nextitem, log=False)
            fault = _fault(reports)
            if fault is None:
                break
            try:
                replacement = pool.replace(stack, self._retries)
            except Exception as exc:  # the fresh bring-up failed: recorded for every process
                _say_why_not(fault, f"brought down, but the fresh bring-up failed: {said(exc)}")
                break
            if replacement.record is None:
                if replacement.why_not:
                    _say_why_not(fault, replacement.why_not)
                break
            fault_said = str(dict(fault.user_properties)[PROP_INFRA])
            if replacement.notes:  # what the broken stack's proven teardown could not remove
                fault_said += " (" + "; ".join(replacement.notes) + ")"
            item.stash.setdefault(RETRIED_FAULTS, []).append(fault_said)
            retried = json.dumps({"attempt": replacement.broken, "fault": fault_said})
            for report in reports:
                if report.when != "teardown":
                    _as_retried(report, retried, fault)
                    item.ihook.pytest_runtest_logreport(report=report)
            _forget_failed_fixtures(item)
        for report in reports:
            item.ihook.pytest_runtest_logreport(report=report)
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
        return True


def _fault(reports: list[pytest.TestReport]) -> pytest.TestReport | None:
    """The setup or call report the harness judged an infrastructure error (never a product
    failure: those carry no infrastructure verdict). A fault met only by a test's teardown
    is not retried there: the test ran, and the next test meets the broken stack at its
    setup, where it is retried."""
    return next((r for r in reports if r.failed and r.when != "teardown"
                 and any(k == PROP_INFRA for k, _ in r.user_properties)), None)


def _forget_failed_fixtures(item: pytest.Item) -> None:
    """A fixture whose setup raised keeps raising for the rest of its scope (pytest caches
    the exception: a session fixture that met the broken stack would fail the retry too);
    those are set up again on the fresh stack. Fixtures that succeeded stay: the stack's own
    re-attach themselves (:mod:`.fixtures`)."""
    info = getattr(item, "_fixtureinfo", None)
    for definitions in getattr(info, "name2fixturedefs", {}).values():
        for definition in definitions:
            cached = getattr(definition, "cached_result", None)
            if cached is not None and cached[2] is not None:
                definition.cached_result = None


def _as_retried(report: pytest.TestReport, retried: str, fault: pytest.TestReport) -> None:
    """An attempt's report as it is logged: the fault's own neither passed nor failed (one
    ``infra-retried`` per attempt), a setup that passed before it as it was; both name the
    fault, so the results never fold them into the test's outcome."""
    if report is fault:
        report.outcome = cast(Any, RETRIED)
        report.user_properties = [(k, v) for k, v in report.user_properties if k != PROP_INFRA]
    report.user_properties.append((PROP_RETRIED, retried))


def _say_why_not(report: pytest.TestReport, why_not: str) -> None:
    """Why the stack was not brought up again, in the infrastructure error itself (the
    summary, junit and the results file carry its words)."""
    props = report.user_properties
    for i, (key, value) in enumerate(props):
        if key == PROP_INFRA:
            props[i] = (key, f"{value}; {why_not}")
    text = report.longreprtext if report.longrepr is not None else ""
    report.longrepr = f"{text}\n{INFRA_PREFIX}: {why_not}" if text else \
        f"{INFRA_PREFIX}: {why_not}"
