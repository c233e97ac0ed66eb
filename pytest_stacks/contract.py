"""The reference job contract: what a client library must do, independent of the backend.

Small Protocols rather than a base class, so a user's client implements only what it can and
the capability markers decide which tests apply. Every call is bulk and returns one result per
job, in order: a failure of one job is a value; an exception means the whole call failed
(daemon down, auth refused) and is raised as :class:`BackendCallError`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from pytest_stacks.errors import BackendCallError
from pytest_stacks.polling import poll_until

#: What a client library and its tests import; everything else here is the module's own.
__all__ = ["TERMINAL", "ActionResult", "BackendCallError", "ChannelTap", "Housekeeper",
           "JobClient", "JobHandle", "JobSpec", "JobState", "JobStatus", "Killer", "LiveQueue",
           "OutputResult", "OutputRetriever", "Purger", "StatusReporter", "SubmitResult",
           "Submitter", "Tappable", "submitted", "wait_for"]


class JobState(StrEnum):
    PENDING = "pending"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    HELD = "held"
    UNKNOWN = "unknown"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL


TERMINAL = frozenset({JobState.COMPLETED, JobState.FAILED, JobState.CANCELLED})


@dataclass(frozen=True)
class JobSpec:
    """One job. ``script`` is a bash script run in the job's working directory.

    The working directory holds ``inputs`` (name -> bytes) before the script starts; the files
    named in ``outputs`` are what the script leaves there for retrieval. ``backend_options``
    are knobs one driver reads and the others ignore (e.g. the Kubernetes driver's job shape,
    or the simulated outcome on a stack whose pods do not execute).

    ``container`` names an image the payload must run in. A backend that cannot run it there
    refuses the job at submit (a :class:`SubmitResult` with the reason), never runs it on the
    bare node instead.

    Staging on the resource side: ``remote_inputs`` (name -> ``s3://HOST[:PORT]/BUCKET/KEY``)
    are downloaded *by the resource* into the working directory before the script starts, and
    ``remote_outputs`` (name -> URL) are uploaded by it after the script ends; the client
    never holds the bytes. ``credentials`` is a reference, never the secret: the directory on
    the nodes that holds the key pair (``access_key``, ``secret_key``) to sign with.
    """

    script: str
    name: str = "job"
    args: tuple[str, ...] = ()
    inputs: Mapping[str, bytes] = field(default_factory=dict)
    outputs: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    cpus: int = 1
    walltime_s: int = 600
    backend_options: Mapping[str, Any] = field(default_factory=dict)
    container: str = ""
    remote_inputs: Mapping[str, str] = field(default_factory=dict)
    remote_outputs: Mapping[str, str] = field(default_factory=dict)
    credentials: str = ""

    @property
    def body(self) -> str:
        """The script without a ``#!`` line: drivers put their own interpreter line first."""
        if self.script.startswith("#!"):
            return self.script.split("\n", 1)[1] if "\n" in self.script else ""
        return self.script


@dataclass(frozen=True)
class JobHandle:
    """A submitted job: the stack it lives on and the backend's own id for it."""

    stack: str
    job_id: str


@dataclass(frozen=True)
class SubmitResult:
    handle: JobHandle | None
    error: str = ""

    @property
    def ok(self) -> bool:
        return self.handle is not None


@dataclass(frozen=True)
class JobStatus:
    handle: JobHandle
    state: JobState
    native_state: str
    exit_code: int | None = None
    reason: str = ""


@dataclass(frozen=True)
class OutputResult:
    handle: JobHandle
    files: Mapping[str, Path] = field(default_factory=dict)
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


@dataclass(frozen=True)
class ActionResult:
    handle: JobHandle
    error: str = ""

    @property
    def ok(self) -> bool:
        return not self.error


@runtime_checkable
class Submitter(Protocol):
    def submit(self, specs: Sequence[JobSpec]) -> list[SubmitResult]: ...


@runtime_checkable
class StatusReporter(Protocol):
    def status(self, handles: Sequence[JobHandle]) -> list[JobStatus]: ...


@runtime_checkable
class OutputRetriever(Protocol):
    def fetch_outputs(self, handles: Sequence[JobHandle], dest: Path) -> list[OutputResult]:
        """Copy each job's output files into ``dest / job_id``."""
        ...


@runtime_checkable
class Killer(Protocol):
    def kill(self, handles: Sequence[JobHandle]) -> list[ActionResult]: ...


@runtime_checkable
class Purger(Protocol):
    def purge(self, handles: Sequence[JobHandle]) -> list[ActionResult]:
        """Release a finished job; afterwards its outputs are gone and fetching them fails."""
        ...


@runtime_checkable
class Housekeeper(Protocol):
    """Optional: a scheduler with a periodic pass over its queue that decides, among other
    things, whether a finished job stays (HTCondor's periodic evaluation of ``LeaveJobInQueue``).
    A test that must see what that pass does waits on the pass itself, not on a clock sized
    for a slow machine."""

    def await_housekeeping(self, timeout: float) -> None:
        """Return once a periodic pass that began after this call has finished; raise
        TimeoutError if the scheduler ran none within ``timeout`` seconds."""
        ...


@runtime_checkable
class LiveQueue(Protocol):
    """Optional: a scheduler that keeps finished jobs in its live queue for a while and then
    only in a log (Slurm's ``MinJobAge``, then the completion log). A test that must see a job
    after it left waits on the queue itself, not on a clock sized for the ageing."""

    def in_live_queue(self, handles: Sequence[JobHandle]) -> list[bool]:
        """Whether the scheduler's live queue still lists each job, in order."""
        ...


class ChannelTap(Protocol):
    """Wraps the object a driver talks through (a transport, a schedd, an API) in one with the
    same interface that also sees every call; :mod:`pytest_stacks.parity` records with it."""

    def __call__(self, channel: Any) -> Any: ...


@runtime_checkable
class Tappable(Protocol):
    """Optional: a client whose exchanges with its daemons can be recorded, so its double can
    be checked against what the real daemons answered (``tests/parity``)."""

    def tapped(self, tap: ChannelTap) -> Any:
        """A new client of the same stack, talking through ``tap(channel)``."""
        ...


class JobClient(Submitter, StatusReporter, OutputRetriever, Killer, Purger, Protocol):
    """The whole contract, as the repo's reference drivers implement it."""

    def versions(self) -> dict[str, str]:
        """The versions this client observed: the daemon's and, where distinct, its own."""
        ...

    def describe_jobs(self, handles: Sequence[JobHandle]) -> str:
        """The scheduler's full view of these jobs, for failure reports."""
        ...

    def close(self) -> None: ...


def submitted(results: Sequence[SubmitResult]) -> list[JobHandle]:
    """The handles of a bulk submit, or a clear error naming every job that was refused."""
    refused = [f"job {i}: {r.error}" for i, r in enumerate(results) if not r.ok]
    if refused:
        raise BackendCallError("submit refused: " + "; ".join(refused))
    return [r.handle for r in results if r.handle is not None]


def wait_for(
    client: StatusReporter,
    handles: Sequence[JobHandle],
    until: frozenset[JobState] = TERMINAL,
    timeout: float = 120.0,
    poll: float = 0.25,
) -> list[JobStatus]:
    """Poll until every job is in one of ``until``; raise TimeoutError naming the stragglers.

    Polls quickly at first and backs off to ``poll``: fast fakes are not slowed down, real
    schedulers are not hammered. A job seen done is seen up to ``poll`` late; 0.5 s was a
    quarter of a short HTCondor job's whole turnaround (about 2 s), for four status queries a
    second at most, which a test's own scheduler answers from memory.
    """
    def ask() -> list[JobStatus]:
        statuses = client.status(handles)
        if len(statuses) != len(handles):
            raise BackendCallError(f"status() answered {len(statuses)} results for "
                                   f"{len(handles)} handles: one result per job is the contract")
        return statuses

    def late(statuses: list[JobStatus]) -> str:
        stragglers = ", ".join(f"{s.handle.job_id}={s.state}({s.native_state})"
                               for s in statuses if s.state not in until)
        return f"jobs not in {sorted(until)} after {timeout:.0f}s: {stragglers}"

    return poll_until(ask, lambda statuses: all(s.state in until for s in statuses),
                      timeout=timeout, interval=poll, first_interval=0.01, on_timeout=late)
