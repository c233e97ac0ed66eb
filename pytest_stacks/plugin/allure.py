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
import json
import os
import platform
import re
from collections.abc import Generator, Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.errors import INFRA_PREFIX, Problem
from pytest_stacks.evidence import EvidenceError, write_whole
from pytest_stacks.manifest import Stack
from pytest_stacks.plugin.state import (
    PROP_INFRA,
    PROP_STACK,
    RETRIED_FAULTS,
    State,
    item_stack,
    state,
)
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
# reporting.py starts an infrastructure error's longrepr with this; INFRA_REGEX matches it,
# and tests/plugin/test_allure.py checks both against a real infrastructure error.
INFRA_CATEGORY = "Infrastructure errors (not product failures)"
PRODUCT_CATEGORY = "Product failures"
TEST_ERRORS_CATEGORY = "Test errors (broken tests, not infrastructure)"
# Allure 2 full-matches with DOTALL, Allure 3 searches (with or without the s flag): these
# two patterns mean the same under all three.
INFRA_REGEX = INFRA_PREFIX.replace("(", r"\(").replace(")", r"\)") + ".*"
NOT_INFRA_REGEX = rf"^(?!{INFRA_PREFIX.split(' (')[0]}).*"

# First: it must win where Allure assigns only the first matching category (Allure 3).
LEADING_CATEGORIES: tuple[dict[str, Any], ...] = (
    {"name": INFRA_CATEGORY,
     "description": "A stack could not come up, reported another version than its pin, failed "
                    "its probe job or died under the test. Not a verdict on the code under test.",
     "messageRegex": INFRA_REGEX,
     "matchedStatuses": ["broken", "failed"]},
)
# Last: catch-alls, after any categories of the project's own, which would never match in
# Allure 3 if these came first.
TRAILING_CATEGORIES: tuple[dict[str, Any], ...] = (
    {"name": PRODUCT_CATEGORY,
     "description": "An assertion about the code under test failed on a stack that was healthy.",
     "messageRegex": NOT_INFRA_REGEX,
     "matchedStatuses": ["failed"]},
    {"name": TEST_ERRORS_CATEGORY,
     "description": "The test itself raised an unexpected exception (a bug in the test or its "
                    "client), on a stack that was healthy.",
     "messageRegex": NOT_INFRA_REGEX,
     "matchedStatuses": ["broken"]},
)
OUR_CATEGORY_NAMES = frozenset(c["name"] for c in LEADING_CATEGORIES + TRAILING_CATEGORIES)


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


# -------------------------------------------------------------------- session files


def environment(current: State, observed: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """What ran where: per stack the pin and what the daemon (and client) reported.

    Stacks no test used are left out: the default fake selection of a run that never asked
    for a stack would otherwise fill the widget with stacks that were never started.
    """
    env: dict[str, str] = {}
    for stack in current.selected:
        record = current.records.get(stack.name)
        seen = observed.get(stack.name, {})
        if record is None and not seen and stack.name not in current.infra \
                and not current.seen[stack.name]:
            continue
        key = f"stack.{stack.name}"
        env[f"{key}.backend"] = stack.backend
        env[f"{key}.provider"] = stack.provider
        env[f"{key}.pinned_version"] = stack.version
        daemon = (record.observed_version if record else "") or seen.get("observed_version", "")
        client = (record.client_version if record else "") or seen.get("client_version", "")
        if stack.is_fake:  # a double echoes its pin: what it claims, never observed
            daemon = (claimed(record.observed_version) if record and record.observed_version
                      else seen.get("claimed_version", ""))
            if daemon:
                env[f"{key}.claimed_version"] = daemon
        else:
            if daemon:
                env[f"{key}.observed_version"] = daemon
            if client:
                env[f"{key}.client_version"] = client
        if stack.name in current.infra:
            env[f"{key}.infrastructure_error"] = current.infra[stack.name]
    if current.pool is not None:
        env["pytest-stacks.lane"] = current.pool.ctx.lane
    env["pytest-stacks.version"] = _version("pytest-stacks")
    env["pytest.version"] = pytest.__version__
    env["python.version"] = platform.python_version()
    return env


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


_PROPERTY_KEY = re.compile(r"^\s*((?:\\.|[^=:\s\\])+)")


def write_environment(path: Path, values: Mapping[str, str]) -> None:
    """Merge into an existing environment.properties: other keys (the project's own, or other
    runs' into the same directory) are kept verbatim; ours are replaced."""
    kept: list[str] = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            match = _PROPERTY_KEY.match(line)
            stripped = line.strip()
            key = _unescape(match.group(1)) if match and not stripped.startswith(("#", "!")) \
                else None
            if key not in values:
                kept.append(line)
    ours = [f"{_escape(k, key=True)}={_escape(v)}" for k, v in values.items()]
    write_whole(path, "\n".join(kept + ours) + "\n", what="Allure environment file")


def _escape(text: str, *, key: bool = False) -> str:
    """Java properties escaping, as Allure's readers parse it; separators only in keys."""
    out = []
    for i, ch in enumerate(text):
        if ch in "\\\n\r\t":
            out.append({"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif (key and ch in "=:#! ") or (i == 0 and ch == " "):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: m.group(1), text)


def categories(existing: Iterable[Any] = ()) -> list[Any]:
    """Ours merged with a project's categories by name: ours replace same-named entries, the
    infrastructure category first, the catch-alls last, the project's in between."""
    theirs = [c for c in existing
              if not (isinstance(c, dict) and c.get("name") in OUR_CATEGORY_NAMES)]
    return [*LEADING_CATEGORIES, *theirs, *TRAILING_CATEGORIES]


def write_categories(path: Path) -> str | None:
    """Write or merge categories.json; a file we cannot read is left alone (returns why)."""
    existing: list[Any] = []
    if path.is_file():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError) as exc:
            return f"{path} is not valid JSON ({exc}); left as it is, without our categories"
        if not isinstance(loaded, list):
            return f"{path} is not a JSON list; left as it is, without our categories"
        existing = loaded
    write_whole(path, json.dumps(categories(existing), indent=2) + "\n",
                what="Allure categories file")
    return None
