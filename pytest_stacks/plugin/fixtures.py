"""The fixtures users write tests with: ``stack``, ``backend``, ``stack_info``, ``stack_logs``,
``stack_fake``, ``stack_commands``.

Registered in every project that installs the plugin (a fixture costs nothing until a test asks
for it), so a test that asks for a stack without a manifest gets a clear message rather than
"fixture not found".
"""

from __future__ import annotations

import functools
import os
import re
import tempfile
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from packaging.version import Version

from pytest_stacks.contract import JobClient, JobHandle, JobSpec, SubmitResult
from pytest_stacks.errors import InfrastructureError, StacksError
from pytest_stacks.login.commands import LoginCommands, open_commands
from pytest_stacks.login.route import NoCommands
from pytest_stacks.manifest import Stack
from pytest_stacks.plugin.state import STATE, state
from pytest_stacks.providers import site_jobs
from pytest_stacks.providers.base import Attached
from pytest_stacks.selection import parse_specifier


class RecordingClient:
    """What the ``backend`` fixture hands a test: the client (the user's, from the hook
    ``pytest_stacks_backend``, or the reference driver), with the handles each test submits
    remembered, so a failing test's report can show the scheduler's view of its jobs, and
    (``submitted``: an existing deployment) every id written down for the run's teardown to
    look up (:mod:`pytest_stacks.providers.site_jobs`).

    Every attribute but ``submit``, ``handles`` and ``raw`` is the wrapped client's own, so a
    test uses it as that client; ``raw`` is the client itself, for code that checks its type
    or hands it on (its submissions then go unrecorded: a failure report shows none of them).
    """

    def __init__(self, inner: Any,
                 submitted: Callable[[list[str]], None] | None = None) -> None:
        self._inner = inner
        self._submitted = submitted
        self._made_for: Any = None  # the stack's client this was made for (its attach)
        self.handles: list[JobHandle] = []

    def _rebind(self, other: RecordingClient) -> None:
        """Talk to a fresh stack (an infra retry replaced the one this was made for)."""
        self._inner, self._submitted = other._inner, other._submitted
        self._made_for = other._made_for

    @property
    def raw(self) -> Any:
        """The client this wraps, unwrapped."""
        return self._inner

    def submit(self, specs: Sequence[JobSpec]) -> list[SubmitResult]:
        results = self._inner.submit(specs)
        handles = [r.handle for r in results if r.handle is not None]
        self.handles.extend(handles)
        if self._submitted is not None and handles:
            self._submitted([h.job_id for h in handles])
        return list(results)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


HANDLES = pytest.StashKey[RecordingClient]()


def _attached(request: pytest.FixtureRequest, stack: Stack) -> Attached:
    pool = state(request.config).pool
    assert pool is not None
    return pool.acquire(stack)  # InfrastructureError marks the test as infra


def not_on_message(test: pytest.Item | pytest.Session) -> str:
    """Why a test that asks for a stack cannot have one, naming the test (a session-scoped
    fixture's own node is the session, which has no name) and the exact line to add."""
    name = getattr(test, "nodeid", "") or "a test"
    return (f"pytest-stacks: {name} uses the 'stack' fixture but pytest-stacks is not on for "
            f"this project. Turn it on with one of: pick stacks on the command line "
            f"(--stack fake-slurm; `pytest --stacks` lists them); add `stacks_manifest = "
            f"manifest.yaml` under [pytest] in pytest.ini (or `stacks_manifest = "
            f"\"manifest.yaml\"` under [tool.pytest.ini_options] in pyproject.toml); or write "
            f"a pytest-stacks manifest.yaml (with a top-level `catalogue:` or `stacks:` key) "
            f"in the rootdir {test.config.rootpath}.")


@pytest.fixture(scope="session")
def stack(request: pytest.FixtureRequest) -> Stack:
    """The stack a test runs on (tests using it are parametrised over the selected stacks)."""
    current = request.config.stash.get(STATE, None)
    if current is None or current.manifest is None:
        # Once for the run, not a traceback per test: every other stack test would say the same.
        pytest.exit(not_on_message(getattr(request, "_pyfuncitem", request.node)),
            returncode=int(pytest.ExitCode.USAGE_ERROR))
    param = getattr(request, "param", None)
    if not isinstance(param, Stack):
        raise pytest.UsageError("pytest-stacks: no stack selected for this test")
    if current.pool is None or param not in current.selected:
        raise pytest.UsageError(
            f"pytest-stacks: stack {param.name!r} is not selected for this run; select it with "
            f"--stack {param.name} instead of parametrizing 'stack' with it")
    # A test on a stack runs with the stack up and proven, even if it never submits a job:
    # otherwise a stack that cannot come up could count as having run tests.
    current.pool.acquire(param)
    # Finalized when this process moves on to another stack (or at its end): from then on the
    # run's owner may end the stack once its last test is over (plugin.release).
    request.addfinalizer(functools.partial(current.pool.let_go, param))
    return param


@pytest.fixture(scope="session")
def _stack_client(request: pytest.FixtureRequest, stack: Stack) -> RecordingClient:
    return _client_of(request.config, stack, _attached(request, stack))


def _client_of(config: pytest.Config, stack: Stack, attached: Attached) -> RecordingClient:
    """The client a test gets for the stack as attached: the user's (hook), else ours."""
    user = config.hook.pytest_stacks_backend(stack=stack, default=attached.client,
                                             info=attached.public_info())
    client = user if user is not None else attached.client
    pool = state(config).pool
    if not stack.is_site or pool is None:
        made = RecordingClient(client)
    else:
        # Ours: pytest-stacks' client, which tags each job with the run; anything else the
        # suite's own, whose jobs a site's teardown cannot find and does not vouch for.
        made = RecordingClient(client, functools.partial(
            site_jobs.note, pool.ctx.run_dir, stack.name, ours=client is attached.client))
    made._made_for = attached
    return made


def _current(request: pytest.FixtureRequest, stack: Stack,
             recording: RecordingClient) -> RecordingClient:
    """The session's client, made anew (the user's hook asked again) when an infra retry
    replaced the stack it was made for: a test never talks to the broken stack's endpoints."""
    attached = _attached(request, stack)  # a stack broken and not replaced raises here
    if recording._made_for is not attached:
        recording._rebind(_client_of(request.config, stack, attached))
    return recording


@pytest.fixture
def stack_info(request: pytest.FixtureRequest, stack: Stack,
               _stack_client: RecordingClient) -> dict[str, Any]:
    """How the stack is reached (ports, token directory, container, observed versions)."""
    return _attached(request, stack).public_info()


@pytest.fixture
def stack_fake(request: pytest.FixtureRequest, stack: Stack,
               _stack_client: RecordingClient) -> Any:
    """On a fake stack, the in-process double itself, for a user's own client to drive:
    fake-slurm's host (``run(argv, user=..., stdin=..., cwd=...)`` answers sbatch, squeue,
    scontrol, sacct and scancel as the pinned version does; ``put_files``/``get_files`` reach
    its filesystem), fake-htcondor's schedd (the Schedd interface of
    ``pytest_stacks.backends.htcondor.api``), fake-mpi-operator's API server
    (``pytest_stacks.backends.kubernetes.api.KubeApi``).

    The schedulers' command line is ``stack_fake.commands`` on both fake-slurm (the host
    itself) and fake-htcondor (``condor_submit``, ``condor_q``, ``condor_history``,
    ``condor_rm``, ``condor_transfer_data``, ``condor_version``): ``commands.run(argv, *,
    user=None, timeout=60.0, stdin="", cwd=None) -> CommandResult`` and
    ``commands.share(host_dir)``, which makes an absolute host folder the same path on the
    fake's side (a script or submit file named there is read there; job outputs written
    there land there); other paths stay in the fake's private root. On fake-mpi-operator
    ``commands`` is a ``kubectl`` against its API server (``run(argv, *, user=None,
    timeout=60.0, stdin="", cwd=None)``, the ``kubectl`` of ``stack_commands`` there).
    ``stack_info["fake"]`` names its type. A real stack has no double: the test is skipped,
    saying so; reach a real stack through ``stack_info`` (endpoints, token directory), or its
    commands through ``stack_commands``."""
    double = _attached(request, stack).double
    if double is None:
        pytest.skip(f"stack {stack.name} is not an in-process fake: reach it through "
                    f"stack_info (its endpoints and credentials)")
    return double


@pytest.fixture
def stack_logs(request: pytest.FixtureRequest, stack: Stack,
               _stack_client: RecordingClient) -> Callable[[], str]:
    """Reads the stack's daemon logs as they are now (what failure reports attach), for
    tests of the ``logs`` capability and for users' own diagnostics."""
    attached = _attached(request, stack)
    return attached.logs


@pytest.fixture
def backend(request: pytest.FixtureRequest, stack: Stack,
            _stack_client: RecordingClient) -> Generator[JobClient, None, None]:
    """The client the tests talk to: the user's (hook ``pytest_stacks_backend``) or ours.

    Asked of the pool for every test, not only once per session: a stack found broken under
    an earlier test (in any process) ends this one as that infrastructure error at once,
    instead of its client being used on a stack that can no longer serve (a compute node
    down leaves the other node running the jobs that still fit)."""
    _attached(request, stack)
    for mark in request.node.iter_markers("client_version"):
        version = _attached(request, stack).client_version
        if not version:
            pytest.skip(f"stack {stack.name} has no client version of its own "
                        f"(client_version({mark.args[0]!r}))")
        if Version(version) not in parse_specifier(str(mark.args[0])):
            pytest.skip(f"stack {stack.name}: client {version} is outside "
                        f"client_version({mark.args[0]!r})")
    client = _current(request, stack, _stack_client)
    client.handles = []
    request.node.stash[HANDLES] = client
    yield client


@dataclass(frozen=True)
class StackCommands:
    """What ``stack_commands`` gives a test: the scheduler's commands on PATH.

    ``env`` is this process's environment with ``bin`` first on PATH (pass it as ``env=``, or
    ``monkeypatch.setenv("PATH", env["PATH"])``); ``shared`` is a folder of this test's that
    is the same path on this machine and on the login host (None on an existing site, which
    shares no folder with this machine); ``commands`` are those the login host has;
    ``user`` the login user they run as."""

    stack: str
    bin: Path
    env: dict[str, str]
    shared: Path | None
    commands: tuple[str, ...]
    user: str


class _Logins:
    """One stack's bin folder in this process, opened for the stack as attached (again, in a
    new folder, when an infra retry replaced it), removed when the session lets it go."""

    def __init__(self, stack: Stack, base: Path) -> None:
        self._stack, self._base = stack, base
        self._open: LoginCommands | None = None
        self._made_for: Attached | None = None
        self._opened = 0

    def current(self, attached: Attached) -> LoginCommands:
        if self._open is not None and self._made_for is attached:
            return self._open
        self.close()
        self._opened += 1
        folder = self._base if self._opened == 1 else Path(f"{self._base}-{self._opened}")
        try:
            self._open = open_commands(self._stack, attached.info, attached.double, folder)
        except NoCommands as exc:
            pytest.skip(str(exc))
        except StacksError as exc:
            raise InfrastructureError(self._stack.name, f"its commands cannot be put on PATH: "
                                                        f"{exc}") from None
        self._made_for = attached
        return self._open

    def close(self) -> None:
        if self._open is not None:
            self._open.close()
            self._open = None


@pytest.fixture(scope="session")
def _stack_login(request: pytest.FixtureRequest, stack: Stack,
                 _stack_client: RecordingClient) -> Generator[_Logins, None, None]:
    pool = state(request.config).pool
    assert pool is not None
    logins = _Logins(stack, pool.ctx.run_dir / "login" / f"{stack.name}-{os.getpid()}")
    yield logins
    logins.close()


@pytest.fixture
def stack_commands(request: pytest.FixtureRequest, stack: Stack, _stack_login: _Logins
                   ) -> StackCommands:
    """The stack's own commands (``sbatch``, ``squeue``, ``condor_submit``, ...) forwarded to
    its login host as its login user: ``subprocess.run(["sbatch", "job.sh"],
    env=stack_commands.env, cwd=stack_commands.shared)``. See docs/your-own-client.md."""
    login = _stack_login.current(_attached(request, stack))
    shared = None
    if login.shared is not None:
        name = re.sub(r"[^A-Za-z0-9_.-]+", "_", request.node.name)[:48]
        shared = Path(tempfile.mkdtemp(prefix=f"{name}-", dir=login.shared))
        shared.chmod(0o777)  # the login user (another uid in a container) writes there too
    return StackCommands(login.stack, login.bin, login.environment(),
                         shared, login.commands, login.route.user)
