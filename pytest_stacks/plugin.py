"""The pytest glue: options, stack selection, parametrisation, capability dispatch, xdist
sharing, failure capture and fail-closed reporting. Everything else lives below it.
"""

from __future__ import annotations

import contextlib
import shutil
import signal
import sys
from collections import Counter
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_stacks import hookspecs
from pytest_stacks.contract import JobClient, JobHandle, JobSpec, SubmitResult
from pytest_stacks.errors import (
    InfrastructureError,
    ManifestError,
    StacksError,
    UnknownStackError,
)
from pytest_stacks.lifecycle import StackPool, new_run_id, runs_root
from pytest_stacks.manifest import Manifest, Stack
from pytest_stacks.manifest import load as load_manifest
from pytest_stacks.providers.base import RunContext
from pytest_stacks.selection import (
    missing_capabilities,
    parse_specifier,
    select,
    unknown_capabilities,
    version_matches,
)

PROP_STACK = "pytest-stacks:stack"
PROP_INFRA = "pytest-stacks:infra"
WORKERINPUT_KEY = "pytest_stacks_run"
DEFAULT_MANIFEST = "manifest.yaml"


# ---------------------------------------------------------------- options and hooks


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stacks", "pytest-stacks: run against pinned backend stacks")
    group.addoption("--stack", action="append", default=[], metavar="NAME",
                    help="Stack to run against (repeatable; shell globs such as 'slurm-*'). "
                         "Default: the fake stacks.")
    group.addoption("--stack-manifest", default=None, metavar="PATH",
                    help="Manifest to read (default: the 'stacks_manifest' ini option; with "
                         "--stack/--stacks and no ini option, manifest.yaml in the rootdir).")
    group.addoption("--stacks", action="store_true", default=False,
                    help="List the stacks of the manifest and exit.")
    group.addoption("--stack-lane", choices=("pinned", "canary"), default="pinned",
                    help="'canary' builds each stack from its floating reference; a version "
                         "other than the pin is then recorded, not an error.")
    parser.addini("stacks_manifest", "Path of the pytest-stacks manifest (relative to rootdir); "
                  "setting it turns pytest-stacks on for the project.", default="")


# ---------------------------------------------------------------- per-session state


@dataclass
class _State:
    manifest: Manifest | None
    selected: list[Stack]
    explicit: bool
    pool: StackPool | None = None
    owner: bool = True
    ran: Counter[str] = field(default_factory=Counter)
    seen: Counter[str] = field(default_factory=Counter)
    infra: dict[str, str] = field(default_factory=dict)
    closing_problems: list[str] = field(default_factory=list)

    def stack(self, name: str) -> Stack:
        assert self.manifest is not None
        return self.manifest.get(name)


_KEY = pytest.StashKey[_State]()


def _state(config: pytest.Config) -> _State:
    return config.stash[_KEY]


def _manifest_path(config: pytest.Config) -> Path:
    given = config.getoption("stack_manifest")
    if given:
        return Path(given).expanduser().absolute()
    return Path(config.rootpath, str(config.getini("stacks_manifest") or DEFAULT_MANIFEST))


def _manifest_requested(config: pytest.Config) -> bool:
    """Whether this project uses pytest-stacks at all.

    Installing the plugin must not change unrelated projects: a file that happens to be called
    manifest.yaml is only read when the project says so (ini option) or the command line does.
    """
    return bool(config.getoption("stack_manifest") or config.getini("stacks_manifest")
                or config.getoption("stack") or config.getoption("stacks"))


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    config.addinivalue_line(
        "markers", "requires(*capabilities): run only on stacks that offer every capability; "
                   "skipped elsewhere, with the missing capabilities named.")
    config.addinivalue_line(
        "markers", "stack_version(specifier, backend=None): run only where the stack's version "
                   "matches the PEP 440 specifier (and its backend, if given).")
    config.addinivalue_line(
        "markers", "for_backend(*backends): the test is about these backends only; it is "
                   "deselected (not skipped) on stacks of other backends.")
    config.addinivalue_line(
        "markers", "client_version(specifier): run only where the client's observed version "
                   "(e.g. the HTCondor bindings) matches the PEP 440 specifier.")

    patterns: list[str] = config.getoption("stack")
    path = _manifest_path(config)
    manifest: Manifest | None = None
    if _manifest_requested(config):
        try:
            manifest = load_manifest(path)
        except ManifestError as exc:
            raise pytest.UsageError("pytest-stacks: invalid manifest:\n" + str(exc)) from None
    selected: list[Stack] = []
    if manifest is not None:
        try:
            selected = select(manifest, patterns)
        except UnknownStackError as exc:
            raise pytest.UsageError(f"pytest-stacks: {exc}") from None
    state = _State(manifest, selected, explicit=bool(patterns))
    config.stash[_KEY] = state
    if manifest is None or not selected:
        return

    workerinput = getattr(config, "workerinput", None)
    lane = config.getoption("stack_lane")
    if workerinput is not None and WORKERINPUT_KEY in workerinput:
        shared = workerinput[WORKERINPUT_KEY]
        ctx = RunContext(shared["run_id"], Path(shared["run_dir"]), shared["owner_pid"],
                         shared["owner_start"], shared["lane"])
        state.owner = False
    else:
        run_id = new_run_id()
        try:
            root = runs_root()
        except (StacksError, OSError) as exc:
            raise pytest.UsageError(f"pytest-stacks: cannot use the run directory: {exc}") \
                from None
        ctx = RunContext.for_this_process(run_id, root / run_id, lane)
        _install_sigterm_handler(config)
    state.pool = StackPool(ctx)
    config.pluginmanager.register(_Tracker(state), "pytest-stacks-tracker")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(_XdistBridge(state), "pytest-stacks-xdist")


class _XdistBridge:
    """Hands the controller's run to every worker, so they attach to the same stacks."""

    def __init__(self, state: _State) -> None:
        self._state = state

    def pytest_configure_node(self, node: Any) -> None:
        pool = self._state.pool
        if pool is None:
            return
        ctx = pool.ctx
        node.workerinput[WORKERINPUT_KEY] = {
            "run_id": ctx.run_id, "run_dir": str(ctx.run_dir), "owner_pid": ctx.owner_pid,
            "owner_start": ctx.owner_start, "lane": ctx.lane,
        }


def _install_sigterm_handler(config: pytest.Config) -> None:
    """SIGTERM unwinds like Ctrl-C, so session teardown still runs and nothing leaks.

    The previous handler comes back at unconfigure (pytester runs nest sessions in-process).
    """
    def _raise(signum: int, frame: object) -> None:
        raise KeyboardInterrupt(f"signal {signum}")

    with contextlib.suppress(ValueError):  # not in the main thread: leave it alone
        config.stash[_OLD_SIGTERM] = signal.signal(signal.SIGTERM, _raise)


_OLD_SIGTERM = pytest.StashKey[Any]()


def pytest_unconfigure(config: pytest.Config) -> None:
    previous = config.stash.get(_OLD_SIGTERM, None)
    if previous is not None:
        with contextlib.suppress(ValueError):
            signal.signal(signal.SIGTERM, previous)


@contextlib.contextmanager
def _signals_deferred() -> Generator[None, None, None]:
    """Hold SIGINT and SIGTERM while stacks come down: a second Ctrl-C must not cut
    `docker compose down` in half. They are delivered (and act) once teardown is done."""
    mask = {signal.SIGINT, signal.SIGTERM}
    try:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, mask)
    except (ValueError, OSError):
        yield
        return
    try:
        yield
    finally:
        # A Ctrl-C that arrived meanwhile has been answered by finishing teardown: consume it
        # rather than let it interrupt the cleanup of the run directory that follows.
        with contextlib.suppress(ValueError, OSError):
            for signum in signal.sigpending() & mask:
                signal.sigtimedwait([signum], 0)
        signal.pthread_sigmask(signal.SIG_SETMASK, old)


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """``pytest --stacks``: runs before configure, so it reads the manifest itself."""
    if not config.getoption("stacks"):
        return None
    from pytest_stacks.report import stacks_table

    try:
        manifest = load_manifest(_manifest_path(config))
    except ManifestError as exc:
        print(f"pytest-stacks: invalid manifest:\n{exc}", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    print(stacks_table(manifest))
    return 0


# ---------------------------------------------------------------- collection


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "stack" not in metafunc.fixturenames:
        return
    for mark in metafunc.definition.iter_markers("parametrize"):
        argnames = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
        if isinstance(argnames, str):
            argnames = [a.strip() for a in argnames.split(",")]
        if "stack" in argnames:
            return  # the test parametrizes 'stack' itself: its values win
    state = _state(metafunc.config)
    if state.manifest is None:
        pytest.fail(
            f"pytest-stacks: {metafunc.function.__name__} uses the 'stack' fixture but no "
            f"manifest is configured. Set the 'stacks_manifest' ini option (e.g. "
            f"stacks_manifest = manifest.yaml) or pass --stack-manifest PATH.", pytrace=False)
    if not state.selected:
        pytest.fail(
            f"pytest-stacks: {metafunc.function.__name__} needs a stack but none is selected: "
            f"the manifest {state.manifest.path} has no fake stacks to run by default. Pass "
            f"--stack NAME (known: {', '.join(state.manifest.names())}).", pytrace=False)
    metafunc.parametrize("stack", state.selected, ids=[s.name for s in state.selected],
                         indirect=True, scope="session")


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str,
                              obj: object) -> Generator[None, Any, Any]:
    """A capability that does not exist is a collection error: a typo must not skip a test."""
    result = yield
    state = _state(collector.config)
    if state.manifest is None or result is None:
        return result
    items = result if isinstance(result, list) else [result]
    for item in items:
        if not isinstance(item, pytest.Function):
            continue
        for mark in item.iter_markers("requires"):
            bad = unknown_capabilities(state.manifest, [str(a) for a in mark.args])
            if bad:
                text = "; ".join(
                    f"{n!r}" + (f" (did you mean {c!r}?)" if c else "") for n, c in bad)
                raise collector.CollectError(
                    f"{item.nodeid}: @pytest.mark.requires names unknown capability {text}. "
                    f"Known: {', '.join(state.manifest.capabilities)}")
        for mark in item.iter_markers("for_backend"):
            unknown = [b for b in mark.args if b not in state.manifest.backends]
            if unknown or not mark.args:
                raise collector.CollectError(
                    f"{item.nodeid}: @pytest.mark.for_backend names unknown backend(s) "
                    f"{unknown or '(none)'}; known: {', '.join(state.manifest.backends)}")
        for mark in item.iter_markers("client_version"):
            if len(mark.args) != 1:
                raise collector.CollectError(
                    f"{item.nodeid}: @pytest.mark.client_version takes one specifier string")
            try:
                parse_specifier(str(mark.args[0]))
            except ValueError as exc:
                raise collector.CollectError(f"{item.nodeid}: {exc}") from None
        for mark in item.iter_markers("stack_version"):
            if len(mark.args) != 1:
                raise collector.CollectError(
                    f"{item.nodeid}: @pytest.mark.stack_version takes one specifier string, "
                    f"e.g. stack_version('>=24.11')")
            try:
                parse_specifier(str(mark.args[0]))
            except ValueError as exc:
                raise collector.CollectError(f"{item.nodeid}: {exc}") from None
    return result


def _item_stack(item: pytest.Item) -> Stack | None:
    callspec = getattr(item, "callspec", None)
    if callspec is None:
        return None
    value = callspec.params.get("stack")
    return value if isinstance(value, Stack) else None


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept: list[pytest.Item] = []
    other_backend: list[pytest.Item] = []
    for item in items:
        stack = _item_stack(item)
        wanted = {b for m in item.iter_markers("for_backend") for b in m.args}
        if stack is not None and wanted and stack.backend not in wanted:
            other_backend.append(item)
        else:
            kept.append(item)
    if other_backend:
        config.hook.pytest_deselected(items=other_backend)
        items[:] = kept
    for item in items:
        stack = _item_stack(item)
        if stack is None:
            continue
        required: list[str] = []
        for mark in item.iter_markers("requires"):
            required.extend(str(a) for a in mark.args)
        missing = missing_capabilities(stack, required)
        if missing:
            item.add_marker(pytest.mark.skip(
                reason=f"stack {stack.name} lacks capability: {', '.join(missing)}"))
            continue
        for mark in item.iter_markers("stack_version"):
            backend = mark.kwargs.get("backend")
            if not version_matches(stack, str(mark.args[0]), backend):
                where = f"{backend} " if backend else ""
                item.add_marker(pytest.mark.skip(
                    reason=f"stack {stack.name} ({stack.backend} {stack.version}) is outside "
                           f"stack_version({where}{mark.args[0]!r})"))
                break


# ---------------------------------------------------------------- fixtures


class _RecordingClient:
    """The user's client, with the handles each test submits remembered for failure reports."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self.handles: list[JobHandle] = []

    def submit(self, specs: Sequence[JobSpec]) -> list[SubmitResult]:
        results = self._inner.submit(specs)
        self.handles.extend(r.handle for r in results if r.handle is not None)
        return list(results)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


@pytest.fixture(scope="session")
def stack(request: pytest.FixtureRequest) -> Stack:
    """The stack a test runs on (tests using it are parametrised over the selected stacks)."""
    param = getattr(request, "param", None)
    if not isinstance(param, Stack):
        raise pytest.UsageError("pytest-stacks: no stack selected for this test")
    state = _state(request.config)
    if state.pool is None or param not in state.selected:
        raise pytest.UsageError(
            f"pytest-stacks: stack {param.name!r} is not selected for this run; select it with "
            f"--stack {param.name} instead of parametrizing 'stack' with it")
    # A test on a stack runs with the stack up and proven, even if it never submits a job:
    # otherwise a stack that cannot come up could count as having run tests.
    state.pool.acquire(param)
    return param


@pytest.fixture(scope="session")
def _stack_client(request: pytest.FixtureRequest, stack: Stack) -> _RecordingClient:
    state = _state(request.config)
    assert state.pool is not None
    attached = state.pool.acquire(stack)  # InfrastructureError marks the test as infra
    user = request.config.hook.pytest_stacks_backend(stack=stack, default=attached.client,
                                                     info=dict(attached.info))
    return _RecordingClient(user if user is not None else attached.client)


@pytest.fixture
def stack_info(request: pytest.FixtureRequest, stack: Stack,
               _stack_client: _RecordingClient) -> dict[str, Any]:
    """How the stack is reached (ports, token directory, container, observed versions)."""
    state = _state(request.config)
    assert state.pool is not None
    return dict(state.pool.acquire(stack).info)


@pytest.fixture
def backend(request: pytest.FixtureRequest, stack: Stack,
            _stack_client: _RecordingClient) -> Generator[JobClient, None, None]:
    """The client the tests talk to: the user's (hook ``pytest_stacks_backend``) or ours."""
    for mark in request.node.iter_markers("client_version"):
        state = _state(request.config)
        assert state.pool is not None
        client = str(state.pool.acquire(stack).info.get("client_version") or "")
        if not client:
            pytest.skip(f"stack {stack.name} has no client version of its own "
                        f"(client_version({mark.args[0]!r}))")
        if Version(client) not in parse_specifier(str(mark.args[0])):
            pytest.skip(f"stack {stack.name}: client {client} is outside "
                        f"client_version({mark.args[0]!r})")
    _stack_client.handles = []
    request.node.stash[_HANDLES] = _stack_client
    yield _stack_client


_HANDLES = pytest.StashKey[_RecordingClient]()


# ---------------------------------------------------------------- reporting


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item,
                              call: pytest.CallInfo[None]) -> Generator[None, Any, Any]:
    report: pytest.TestReport = yield
    stack = _item_stack(item)
    if stack is None:
        return report
    report.user_properties.append((PROP_STACK, stack.name))
    state = _state(item.config)
    attached = state.pool.attached(stack.name) if state.pool is not None else None
    if attached is not None:
        # Every test's report (junit <properties> included) says what it really ran against.
        for key in ("observed_version", "client_version"):
            if attached.info.get(key):
                report.user_properties.append((f"pytest-stacks:{key}", attached.info[key]))
    if call.excinfo is not None and call.excinfo.errisinstance(InfrastructureError):
        error = call.excinfo.value
        assert isinstance(error, InfrastructureError)
        report.user_properties.append((PROP_INFRA, error.message))
        report.longrepr = f"INFRASTRUCTURE ERROR (not a test failure): {error}"
        if error.logs:
            report.sections.append((f"stack {stack.name}: daemon logs", error.logs[-20000:]))
    elif report.failed and call.when == "call":
        _attach_diagnostics(item, stack, report)
    return report


def _attach_diagnostics(item: pytest.Item, stack: Stack, report: pytest.TestReport) -> None:
    state = _state(item.config)
    client = item.stash.get(_HANDLES, None)
    if client is not None and client.handles:
        try:
            report.sections.append((f"stack {stack.name}: scheduler view of this test's jobs",
                                    client.describe_jobs(client.handles)))
        except Exception as exc:  # diagnostics must never replace the real failure
            report.sections.append((f"stack {stack.name}: jobs", f"(unavailable: {exc})"))
    if state.pool is not None and "logs" in stack.capabilities:
        attached = state.pool.attached(stack.name)
        if attached is not None:
            try:
                report.sections.append((f"stack {stack.name}: daemon logs",
                                        attached.logs()[-60000:]))
            except Exception as exc:
                report.sections.append((f"stack {stack.name}: daemon logs",
                                        f"(unavailable: {exc})"))


def pytest_report_teststatus(report: pytest.TestReport,
                             config: pytest.Config) -> tuple[str, str, Any] | None:
    props = getattr(report, "user_properties", ())
    if report.failed and any(k == PROP_INFRA for k, _ in props):
        return "infra", "I", ("INFRA", {"red": True, "bold": True})
    return None


class _Tracker:
    """Counts, per stack, what ran. Registered per config, so nested sessions stay apart;
    under xdist it runs on the controller, which receives every worker's reports."""

    def __init__(self, state: _State) -> None:
        self._state = state

    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        props = dict(report.user_properties)
        name = props.get(PROP_STACK)
        if not isinstance(name, str):
            return
        self._state.seen[name] += 1
        if PROP_INFRA in props:
            self._state.infra.setdefault(name, str(props[PROP_INFRA]))
        if report.when == "call" and report.outcome in ("passed", "failed"):
            self._state.ran[name] += 1


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    state = _state(session.config)
    if state.pool is None:
        return
    if not state.owner:
        state.pool.release()
        return
    known = {s.name: s for s in state.selected}
    session.config.stash[_RECORDS] = {r.stack: r for r in state.pool.records()}
    with _signals_deferred():
        state.closing_problems.extend(state.pool.teardown(known))
    if not state.closing_problems:
        shutil.rmtree(state.pool.ctx.run_dir, ignore_errors=True)
    if exitstatus in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.USAGE_ERROR,
                      pytest.ExitCode.INTERNAL_ERROR):
        return
    any_stack_test = sum(state.seen.values()) > 0
    for stack in state.selected:
        if state.ran[stack.name] == 0 and stack.name not in state.infra and (
                state.explicit or any_stack_test):
            state.closing_problems.append(
                f"{stack.name}: no test ran on this stack (all skipped or deselected). "
                f"A selected stack must run at least one test.")
    if state.closing_problems or state.infra:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


_RECORDS = pytest.StashKey[dict[str, Any]]()


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int,
                            config: pytest.Config) -> None:
    state = config.stash.get(_KEY, None)
    if state is None or not state.selected or not state.owner:
        return
    if not state.explicit and not sum(state.seen.values()):
        return  # the default fake selection, and no test used a stack: nothing to report
    records = config.stash.get(_RECORDS, {})
    tr = terminalreporter
    infra_reports = tr.stats.get("infra", [])
    if infra_reports:
        tr.section("stack infrastructure errors (not test failures)", red=True)
        shown: set[str] = set()
        for rep in infra_reports:
            name = dict(rep.user_properties).get(PROP_STACK, "?")
            tr.write_line(f"{rep.nodeid}: {rep.longrepr}")
            if name in shown:
                continue
            shown.add(name)
            for title, content in rep.sections:
                if title.startswith(f"stack {name}"):
                    tr.write_sep("-", title)
                    tr.write_line(content[-8000:])
    tr.section("pytest-stacks")
    for stack in state.selected:
        record = records.get(stack.name)
        versions = ""
        if record is not None and record.observed_version:
            versions = f" daemon {record.observed_version}"
            if state.pool is not None and state.pool.ctx.lane == "canary":
                versions += (" (canary: as pinned)" if record.observed_version == stack.version
                             else f" (canary: floated from pin {stack.version})")
            if record.client_version:
                versions += f", client {record.client_version}"
            if record.info.get("kept"):
                versions += ", borrowed from `pytest-stacks up`"
            else:
                versions += f", up in {record.startup_s:.1f}s"
        line = (f"{stack.name} ({stack.backend} {stack.version}, {stack.provider}):{versions} "
                f"{state.ran[stack.name]} test(s) ran")
        if stack.name in state.infra:
            tr.write_line(f"{line} INFRASTRUCTURE ERROR: {state.infra[stack.name]}", red=True)
        else:
            tr.write_line(line)
    for problem in state.closing_problems:
        tr.write_line(f"FAIL-CLOSED: {problem}", red=True, bold=True)
