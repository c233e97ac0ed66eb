"""What every provider offers, the per-run context it works in, and the typed facts about a
running stack that cross processes (:class:`StackInfo`)."""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pytest_stacks.backends.site_account import JobAccount
from pytest_stacks.contract import JobClient
from pytest_stacks.gobuild import GoModuleBuild
from pytest_stacks.manifest import Stack
from pytest_stacks.providers.labels import owner_labels, process_start_time
from pytest_stacks.transports import Transport


@dataclass(frozen=True)
class RunContext:
    """``keeps``: the run's stacks outlive it (``pytest-stacks up``); it borrows nothing."""

    run_id: str
    run_dir: Path
    owner_pid: int
    owner_start: str
    lane: str = "pinned"  # or "canary": float to the stack's canary references
    keeps: bool = False

    @classmethod
    def for_this_process(cls, run_id: str, run_dir: Path, lane: str = "pinned", *,
                         keeps: bool = False) -> RunContext:
        pid = os.getpid()
        return cls(run_id, run_dir, pid, process_start_time(pid), lane, keeps)

    def labels(self, stack: str) -> dict[str, str]:
        return owner_labels(self.run_id, stack, self.owner_pid, self.owner_start)


@dataclass
class StackInfo:
    """How any process of a run reaches one stack. Written to the run directory as JSON by the
    process that brought the stack up, read back by every other one.

    ``endpoints`` holds what users reach the stack by (a collector address, a token directory,
    a kubeconfig); ``env``, ``files`` and ``private`` are how the provider invokes its tools
    (the compose invocation, kind's wrapper, the kubectl it built) and are never shown.
    """

    provider: str
    project: str = ""
    files: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    ports: dict[str, int] = field(default_factory=dict)
    image: str = ""
    remove_image: bool = False
    built: bool | None = None
    build_s: float | None = None
    container: str = ""
    endpoints: dict[str, str] = field(default_factory=dict)
    private: dict[str, str] = field(default_factory=dict)
    kept: bool = False
    kept_run: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> StackInfo:
        known = {f.name for f in fields(cls)}
        unknown = set(data) - known
        if unknown:
            raise ValueError(f"unknown stack info field(s): {', '.join(sorted(unknown))}")
        values = dict(data)
        values["files"] = tuple(values.get("files", ()))
        return cls(**values)

    def public(self) -> dict[str, Any]:
        """What users see (``stack_info`` fixture, ``pytest_stacks_backend`` hook): flat, and
        without the compose invocation."""
        shown: dict[str, Any] = {"provider": self.provider}
        for name in ("project", "ports", "image", "container", "built", "build_s"):
            value = getattr(self, name)
            if value not in ("", {}, None):
                shown[name] = value
        if self.kept:
            shown.update(kept=True, kept_run=self.kept_run)
        shown.update(self.endpoints)
        return shown


@dataclass
class Attached:
    """A stack as one process uses it: the client, the proven versions, logs, and let go."""

    client: JobClient
    info: StackInfo
    logs: Callable[[], str]
    close: Callable[[], None] = field(default=lambda: None)
    observed_version: str = ""
    client_version: str = ""
    #: On a fake, the in-process double the client drives (``stack_fake`` hands it to users'
    #: own clients); None on a real stack, which is reached through its endpoints.
    double: object | None = None

    def public_info(self) -> dict[str, Any]:
        fake = {"fake": type(self.double).__name__} if self.double is not None else {}
        return {**self.info.public(), "observed_version": self.observed_version,
                "client_version": self.client_version, **fake}


@runtime_checkable
class Provider(Protocol):
    def preflight(self, stack: Stack, ctx: RunContext) -> None:
        """Refuse in seconds what cannot come up here (no engine, an image with no registry to
        pull it from, no toolchain), before anything slow. ``up`` starts with it; ``doctor``
        asks it alone. Raises StacksError naming the fix."""
        ...

    def programs(self, stack: Stack) -> list[GoModuleBuild]:
        """The Go programs its bring-up builds from their modules (no engine needed to build
        them: ``pytest-stacks build --programs-only`` starts them early)."""
        ...

    def build(self, stack: Stack, ctx: RunContext) -> None:
        """Make everything ``up`` would make before it starts anything (images, programs
        built on the host), and start nothing: ``pytest-stacks build`` prepares a machine
        ahead of a run. Raises InfrastructureError."""
        ...

    def up(self, stack: Stack, ctx: RunContext) -> StackInfo:
        """Bring the stack up and wait until its daemons serve. Returns what any process of the
        run can attach with. Raises InfrastructureError."""
        ...

    def attach(self, stack: Stack, info: StackInfo, ctx: RunContext) -> Attached: ...

    def down(self, stack: Stack, info: StackInfo, ctx: RunContext) -> list[str] | None:
        """Remove everything ``up`` created; raise InfrastructureError if that cannot be proven.
        May return lines a person should read about what it could not look for (a site's
        jobs it cannot see): said, never failing."""
        ...

    def is_current(self, stack: Stack, info: StackInfo) -> bool:
        """Whether a stack kept by ``pytest-stacks up`` was made from today's inputs, so a run
        may borrow it."""
        ...

    def sweep_run(self, ctx: RunContext, keep: Collection[str] = ()) -> list[str]:
        """The teardown's safety net: remove what an interrupted bring-up of this run created
        before it was recorded, except the stacks named in ``keep`` (kept for a person to
        look at). Returns what could not be removed."""
        ...

    def reach(self, stack: Stack, info: StackInfo) -> str:
        """How a person reaches a kept stack, as commands to paste (one line)."""
        ...

    def health(self, stack: Stack, info: StackInfo) -> tuple[str, str]:
        """("", "") while the stack's daemons can still serve; else (why not, their last
        logs), e.g. a container that was killed under the run."""
        ...


@runtime_checkable
class StackAdapter(Protocol):
    """The backend's half of a container stack; the provider owns the lifecycle and adapters
    never start or stop containers."""

    def host_programs(self, stack: Stack) -> list[GoModuleBuild]:
        """The Go programs :meth:`host_environment` builds (none for most backends)."""
        ...

    def host_environment(self, stack: Stack, timeout: float) -> dict[str, str]:
        """What the stack needs made on the host before it starts (e.g. pinned binaries built
        from their modules), as extra compose environment. Raises StacksError."""
        ...

    def wait_ready(self, transport: Transport, timeout: float) -> None:
        """Return once the daemons answer their own readiness query; raise TimeoutError."""
        ...

    def prepare(self, stack: Stack, transport: Transport, run_dir: Path,
                ports: dict[str, int]) -> dict[str, str]:
        """Per-run set-up after readiness (e.g. mint a token). Returns endpoints."""
        ...

    def client(self, stack: Stack, transport: Transport, endpoints: Mapping[str, str],
               run_dir: Path) -> JobClient: ...

    def daemon_logs(self, transport: Transport) -> str:
        """The daemons' own logs, for failure reports."""
        ...


@runtime_checkable
class SiteAdapter(Protocol):
    """The backend's half of a deployment that already exists (provider ``existing``): it
    checks the site, gives the run a place of its own and a client confined to it, and finds
    and removes runs' places. ``transport`` is the SSH route to the login node (None where the
    site is reached by kubeconfig, in ``endpoints``). Nothing here touches an object that no
    run of ours made."""

    def check(self, stack: Stack, transport: Transport | None,
              endpoints: Mapping[str, str]) -> dict[str, str]:
        """The preflight, creating nothing: reachable, authenticated, the observed versions
        inside what the manifest allows, each capability's prerequisites present. Returns the
        facts observed (versions). Raises InfrastructureError naming the check and the fix."""
        ...

    def open_run(self, stack: Stack, transport: Transport | None,
                 endpoints: Mapping[str, str], run_id: str, owner_record: str) -> None:
        """Make the run's own place (a working folder, a namespace) holding its owner record."""
        ...

    def client(self, stack: Stack, transport: Transport | None,
               endpoints: Mapping[str, str], run_dir: Path) -> JobClient:
        """A client whose every object is the run's (named, labelled, placed by its id)."""
        ...

    def runs(self, stack: Stack, transport: Transport | None,
             endpoints: Mapping[str, str]) -> dict[str, str]:
        """Every run's place on the site: run id -> its owner record as found ("" if none)."""
        ...

    def remove_run(self, stack: Stack, transport: Transport | None,
                   endpoints: Mapping[str, str], run_id: str) -> list[str]:
        """Remove one run's objects (its jobs ended, its place deleted) and look again;
        returns what is left, one line each ([] = proven gone)."""
        ...


@runtime_checkable
class JobAccounting(Protocol):
    """Optional, beside :class:`SiteAdapter`: the site looks up, by id, each job the run's
    client submitted, after the run's end (the jobs a rewritten tag hid from the sweep are
    found that way)."""

    def account_jobs(self, stack: Stack, transport: Transport | None,
                     endpoints: Mapping[str, str], run_id: str,
                     job_ids: Sequence[str]) -> JobAccount:
        ...


class FakeFactory(Protocol):
    """Builds a backend's in-process double wired to its real driver: (client, logs, close)."""

    def __call__(self, stack: Stack, run_dir: Path
                 ) -> tuple[JobClient, Callable[[], str], Callable[[], None]]: ...
