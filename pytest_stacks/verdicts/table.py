"""The compatibility table as data: a row per stack, a cell per capability, the problems that
keep it from being green. :mod:`.merge` builds it from results files; :mod:`.render` writes it
as Markdown, HTML or JSON."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class Failure:
    nodeid: str
    outcome: str
    message: str


@dataclass(frozen=True)
class Cell:
    """One capability on one stack. ``status``: a capability status, or ``missing`` (no
    results for the stack) or ``unreported`` (results without this capability)."""

    status: str
    passed: int = 0
    failed: int = 0
    skipped: int = 0
    infra: int = 0
    failures: tuple[Failure, ...] = ()

    @property
    def ran(self) -> int:
        return self.passed + self.failed + self.infra

    @property
    def text(self) -> str:
        """``pass 3``, ``fail 1/4``, ``pass 2 · 1 skipped``: the status, how many tests the
        claim rests on, and how many tests requiring it were skipped at run time (on an
        offered capability those prove nothing, and a cell must not hide them)."""
        shown = {"pass": f"pass {self.passed}", "fail": f"fail {self.failed}/{self.ran}",
                 "infra": f"infra {self.infra}/{self.ran}", "unproven": "unproven",
                 "not-offered": "not offered", "missing": "no result",
                 "unreported": "not reported"}.get(self.status, self.status)
        if self.skipped and self.status in ("pass", "fail", "infra", "unproven"):
            shown += f" · {self.skipped} skipped"
        return shown


@dataclass(frozen=True)
class Row:
    """One stack. ``verdict``: the stack verdict, or ``missing`` when no job reported it."""

    stack: str
    backend: str
    version: str
    role: str
    lane: str
    provider: str
    transport: str
    configuration: str
    fake: bool
    verdict: str
    source: str | None = None
    run_id: str | None = None
    observed_daemon: str = ""
    observed_client: str = ""
    startup_s: float | None = None
    infra: str | None = None
    cells: Mapping[str, Cell] = field(default_factory=dict)
    problems: tuple[str, ...] = ()
    parity: str = ""
    driver: str = ""
    #: What the run selected (``tests/contract -k x``; "the default tests") and how many tests
    #: it deselected: a planned narrowing stands in the table, and the table says so.
    scope: str = ""
    deselected: int = 0
    #: Each time the stack broke under its run and was brought up fresh: "attempt 1: FAULT".
    retries: tuple[str, ...] = ()

    @property
    def verdict_text(self) -> str:
        """The verdict as every rendering shows it: a pass after an infra retry says so,
        never shown as a clean pass (``pass after 1 infra retry``)."""
        if not self.retries:
            return self.verdict
        count = len(self.retries)
        return f"{self.verdict} after {count} infra {'retry' if count == 1 else 'retries'}"

    @property
    def ran(self) -> str:
        """The row's scope and deselected count, as every rendering shows them."""
        if not self.scope:
            return "no run"
        return f"{self.scope} · {self.deselected} deselected"

    @property
    def observed(self) -> str:
        """The daemon version the stack reported, and for a fake what that is worth: a double
        echoes its pin, so it claims a version and nothing was observed."""
        if not self.observed_daemon:
            return ""
        return claimed(self.observed_daemon) if self.fake else f"observed {self.observed_daemon}"

    @property
    def version_text(self) -> str:
        """The version cell: what the run saw and through which client (``22.05.11 observed
        via the ssh client 22.05.11 (pin 24.11.5)``), never the pin alone when a daemon
        answered; a fake's claim as a claim; the pin for a row that never ran."""
        if self.fake:
            return f"{self.version} ({claimed(self.observed_daemon or self.version)})"
        if self.verdict == "missing":
            return self.version
        if not self.observed_daemon:
            return f"{self.version} (pin; no daemon version observed)"
        client = f" {self.observed_client}" if self.observed_client else ""
        text = f"{self.observed_daemon} observed via the {self.transport} client{client}"
        return text if self.observed_daemon == self.version else f"{text} (pin {self.version})"


def claimed(version: str) -> str:
    """A fake's version, as what it is: a double echoes its pin, it observes nothing."""
    return f"fake, claims {version}"


@dataclass(frozen=True)
class Expected:
    """The rows a lane must cover (``ci.row`` dicts) and where they came from."""

    lane: str
    rows: tuple[Mapping[str, Any], ...]
    source: str
    #: What part of the lane the rows are, when not all of it (a ``--runnable-here`` plan):
    #: the table's title says so, so a subset is never read as the lane.
    subset: str = ""

    @property
    def title(self) -> str:
        return f"{self.lane} lane" + (f" ({self.subset})" if self.subset else "")


@dataclass(frozen=True)
class Compatibility:
    title: str
    lane: str | None
    capabilities: tuple[str, ...]
    rows: tuple[Row, ...]
    problems: tuple[str, ...]
    sources: tuple[str, ...]

    @property
    def green(self) -> bool:
        """Exact coverage, every row passed, nothing else wrong; an empty table never is."""
        return bool(self.rows) and not self.problems
