"""Allure support: what an Allure report needs to know about the stacks a run used.

Registered only when allure-pytest is installed and ``--alluredir`` is given, so a project
without Allure pays nothing (``allure`` is imported lazily, never at module import). The
terminal and junit reports already carry the stack, the infrastructure verdict and the
failure diagnostics (:mod:`.reporting`); this module translates the same facts into Allure's
vocabulary rather than collecting them a second time:

- per test: the stack as the ``stack`` parameter (its name, not the ``Stack`` repr), labels
  ``stack``/``backend``/``version``/``provider``/``capability``, tags for the backend, provider
  and required capabilities, and the stack as ``parentSuite``;
- on failure: the report's ``stack <name>: ...`` sections as text attachments;
- on an infrastructure error: status *broken* and a message that starts
  ``INFRASTRUCTURE ERROR (not a test failure)``, so Allure's categories keep it apart from
  product failures;
- at session end: ``environment.properties`` (the observed versions) and ``categories.json``
  merged into the results directory, an ``allurerc.mjs`` beside them for Allure 3 (its tree
  reads stack > test module > test, the categories included: ``allure generate DIR --config
  DIR/allurerc.mjs``), and fail-closed problems as Allure global errors.

Hook ordering matters: allure-pytest's listener decides a result's status in its own
``pytest_runtest_makereport`` hookwrapper, after the inner wrappers (``reporting``'s included)
have returned. Ours is ``tryfirst`` so it is the outermost wrapper and sees both the report as
``reporting`` left it and the status as Allure set it.
"""

from __future__ import annotations

import importlib.util
import os
from collections.abc import Generator, Mapping
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.errors import INFRA_PREFIX, Problem
from pytest_stacks.evidence import EvidenceError, write_whole
from pytest_stacks.manifest import Stack
from pytest_stacks.plugin.allure_files import (
    INFRA_CATEGORY,
    INFRA_REGEX,
    PRODUCT_CATEGORY,
    TEST_ERRORS_CATEGORY,
    categories,
    environment,
    write_categories,
    write_environment,
)
from pytest_stacks.plugin.props import PROP_INFRA, PROP_STACK, RETRIED_FAULTS
from pytest_stacks.plugin.state import item_stack, state
from pytest_stacks.verdicts.table import claimed

PLUGIN_NAME = "pytest-stacks-allure"
ALLURERC = "allurerc.mjs"
# Allure 3's Awesome report groups its tree by the package label unless told otherwise: every
# result under "tests". Grouped by the suite labels, the stack (parentSuite) comes first.
ALLURERC_TEXT = """// Written by pytest-stacks. Use: allure generate DIR --config DIR/allurerc.mjs
// The tree reads stack > test module > test (the suite labels pytest-stacks sets), and the
// categories keep infrastructure errors apart from product failures (categories.json, here).
import { readFileSync } from "node:fs";

const here = (name) => new URL(name, import.meta.url);

export default {
  name: "pytest-stacks",
  categories: JSON.parse(readFileSync(here("categories.json"), "utf8")),
  plugins: {
    awesome: { options: { singleFile: true, groupBy: ["parentSuite", "suite", "subSuite"] } },
  },
};
"""


def available() -> bool:
    """Whether allure-pytest can be imported, without importing it (it is optional)."""
    return (importlib.util.find_spec("allure") is not None
            and importlib.util.find_spec("allure_pytest") is not None)


def register(config: pytest.Config) -> None:
    """Register the Allure plugin when this run writes Allure results; otherwise nothing."""
    alluredir = getattr(config.option, "allure_report_dir", None)
    if not alluredir or not available() or config.pluginmanager.has_plugin(PLUGIN_NAME):
        return
    # The same resolution as allure-pytest's, now, before any test can change directory.
    config.pluginmanager.register(AllurePlugin(Path(os.path.abspath(alluredir))), PLUGIN_NAME)


class AllurePlugin:
    """One per config, so pytester's nested sessions never share results."""

    def __init__(self, alluredir: Path) -> None:
        self.alluredir = alluredir
        # stack -> {"observed_version": ..., "client_version": ...}, from every report seen
        # here (under xdist the controller sees the workers' reports, with their properties).
        self._observed: dict[str, dict[str, str]] = {}

    # ---------------------------------------------------------------- per test

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_runtest_makereport(self, item: pytest.Item,
                                  call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
        stack = item_stack(item)
        result = _open_result(item.config) if stack is not None else None
        earlier_status = getattr(result, "status", None)
        report: pytest.TestReport = yield
        if stack is None or result is None:
            return report  # no open result: allure.dynamic would fail, not just do nothing
        if call.when == "setup":
            _describe(item, stack)
        _attach_sections(stack, report)
        infra = dict(report.user_properties).get(PROP_INFRA)
        # A product failure in the call phase stays the verdict over a later teardown problem.
        if infra is not None and not (
                call.when == "teardown" and earlier_status in ("failed", "broken")):
            _mark_infrastructure(item, result, report, call)
        if call.when == "teardown":
            _stable_history_id(item, stack, result)
            _mark_retried(item, result)
        return report

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        name = props.get(PROP_STACK)
        if not isinstance(name, str):
            return
        seen = self._observed.setdefault(name, {})
        for key in ("observed_version", "client_version", "claimed_version"):
            value = props.get(f"pytest-stacks:{key}")
            if value:
                seen[key] = str(value)

    # ---------------------------------------------------------------- session end

    @pytest.hookimpl(trylast=True)  # after reporting's, which records versions and problems
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        config = session.config
        if hasattr(config, "workerinput") or config.option.collectonly:
            return  # the controller (or the single process) writes the run's files once
        current = state(config)
        try:  # evidence: lands whole, or the run fails naming the path and the OS error
            write_environment(self.alluredir / "environment.properties",
                              environment(current, self._observed))
            problem = write_categories(self.alluredir / "categories.json")
            if problem:
                _warn(config, problem)
            write_whole(self.alluredir / ALLURERC, ALLURERC_TEXT, what="Allure file")
        except EvidenceError as exc:
            current.closing_problems.append(Problem(None, "allure", str(exc)))
            session.exitstatus = pytest.ExitCode.TESTS_FAILED
        for text in current.closing_problems:
            _allure().global_error(f"FAIL-CLOSED: {text}")


# -------------------------------------------------------------------- per-test helpers


def _allure() -> Any:
    """allure-pytest's public API, imported only once a run writes Allure results. Typed Any:
    its annotations are partial, and mypy must pass with or without it installed."""
    import allure

    return allure


def _describe(item: pytest.Item, stack: Stack) -> None:
    """Labels and the parameter, through allure's public API while the result is open."""
    allure = _allure()
    allure.dynamic.parameter("stack", stack.name)
    for name, value in (("stack", stack.name), ("backend", stack.backend),
                        ("version", stack.version), ("provider", stack.provider)):
        allure.dynamic.label(name, value)
    required = sorted({str(a) for mark in item.iter_markers("requires") for a in mark.args})
    for capability in required:
        allure.dynamic.label("capability", capability)
    allure.dynamic.tag(f"backend:{stack.backend}", f"provider:{stack.provider}",
                       *(f"requires:{c}" for c in required))
    pool = state(item.config).pool
    attached = pool.attached(stack.name) if pool is not None else None
    if attached is not None and attached.observed_version:
        # A fake (a double echoing its pin) claims a version; nothing was observed.
        key = "claimed_version" if stack.is_fake else "observed_version"
        allure.dynamic.label(key, claimed(attached.observed_version) if stack.is_fake
                             else attached.observed_version)
    # The Suites tab groups by stack first, unless the test chose its own parent suite.
    own = any(m.kwargs.get("label_type") == "parentSuite"
              for m in item.iter_markers("allure_label"))
    if not own:
        allure.dynamic.parent_suite(stack.name)


def _attach_sections(stack: Stack, report: pytest.TestReport) -> None:
    """Every ``stack <name>: ...`` section reporting added (scheduler view, daemon logs)."""
    allure = _allure()
    prefix = f"stack {stack.name}: "
    for title, content in report.sections:
        if title.startswith(prefix):
            allure.attach(content, name=title[len(prefix):],
                          attachment_type=allure.attachment_type.TEXT)


def _open_result(config: pytest.Config) -> Any:
    """The test result allure-pytest has open for the running test, or None.

    No public API sets a result's status or history id; ``allure.dynamic`` itself reaches the
    result the same way (the reporter's last test result).
    """
    listener = config.pluginmanager.get_plugin("allure_listener")
    reporter = getattr(listener, "allure_logger", None)
    get_test = getattr(reporter, "get_test", None)
    return get_test(None) if callable(get_test) else None


def _mark_infrastructure(item: pytest.Item, result: Any, report: pytest.TestReport,
                         call: pytest.CallInfo[None]) -> None:
    """Status *broken* with reporting's message: a stack that died under an assertion must not
    count as a product failure. The traceback, which reporting's one-line verdict replaces in
    the terminal, stays in the trace for whoever debugs the harness."""
    from allure_commons.model2 import Status, StatusDetails

    trace = None
    if call.excinfo is not None:
        try:
            trace = str(item.repr_failure(call.excinfo))
        except Exception:  # a report must not fail because a traceback cannot be drawn
            trace = call.excinfo.exconly()
    result.status = Status.BROKEN
    result.statusDetails = StatusDetails(message=str(report.longrepr), trace=trace)


def _mark_retried(item: pytest.Item, result: Any) -> None:
    """A test an infra retry ran again is *flaky* in Allure, its details saying after which
    faults: a retried pass is never shown as a clean one."""
    faults = item.stash.get(RETRIED_FAULTS, [])
    if not faults:
        return
    from allure_commons.model2 import StatusDetails

    count = len(faults)
    said = (f"after {count} infra {'retry' if count == 1 else 'retries'} (a broken stack "
            f"brought up fresh): " + "; ".join(faults))
    details = result.statusDetails or StatusDetails()
    details.flaky = True
    details.message = f"{details.message}\n{said}" if details.message else said
    result.statusDetails = details
    _allure().dynamic.label("infra_retries", str(count))


def _stable_history_id(item: pytest.Item, stack: Stack, result: Any) -> None:
    """Allure keys a test's history (and retries) on its parameters' values; allure-pytest
    hashes the ``Stack``'s repr, which changes with any manifest field and with the checkout's
    absolute path. The stack's name is its identity across runs and machines."""
    from allure_pytest.utils import get_history_id

    params: Mapping[str, Any] = getattr(getattr(item, "callspec", None), "params", {})
    if result.fullName is None:
        return
    result.historyId = get_history_id(result.fullName, result.parameters,
                                      original_values={**params, "stack": stack.name})


def _warn(config: pytest.Config, message: str) -> None:
    reporter = config.pluginmanager.get_plugin("terminalreporter")
    if reporter is not None:
        reporter.write_line(f"pytest-stacks: {message}", yellow=True)


#: What tests and users read here; the session files live in :mod:`.allure_files`.
__all__ = ["ALLURERC", "INFRA_CATEGORY", "INFRA_PREFIX", "INFRA_REGEX", "PLUGIN_NAME",
           "PRODUCT_CATEGORY", "TEST_ERRORS_CATEGORY", "AllurePlugin", "available",
           "categories", "environment", "register", "write_categories", "write_environment"]
