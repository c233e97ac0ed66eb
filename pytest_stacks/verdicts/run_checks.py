"""A results file's own story about its run, checked for contradictions: when it ran, what it
selected and whether it says so, and which tests it collected.

A file may only be whole (``partial: false``) when nothing in its own record narrows it: a
``-k``, ``-m`` or any other narrowing option in ``run.scope``, or tests something deselected,
all make a run partial, however the file came to say otherwise (an older writer, an edit, a
forgery). A test it reports for a stack must be one it collected. The schema cannot say any of
this; :func:`pytest_stacks.verdicts.results.validate` asks here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from pytest_stacks.ci.scope import Scope

INCONSISTENT = "Write it with pytest_stacks.verdicts.results, whose rules the report applies."


def run_problems(doc: dict[str, Any]) -> Iterable[str]:
    """One line per contradiction in ``doc["run"]`` (and between it and its stacks' tests)."""
    run = doc["run"]
    yield from _time_problems(run)
    if run["partial"] != bool(run["partial_reasons"]):
        yield (f"$.run.partial_reasons: partial is {json.dumps(run['partial'])} but "
               f"{len(run['partial_reasons'])} reason(s) are given; a partial run names what "
               f"selected its tests, a whole run names nothing.")
    if not run["partial"]:
        scope = Scope.from_json(run["scope"])
        if scope.narrowed_by_options:
            yield (f"$.run.partial: false, but $.run.scope narrows the run "
                   f"({scope.describe()}); a narrowed run is partial. {INCONSISTENT}")
        if run["deselected"]:
            yield (f"$.run.partial: false, but $.run.deselected says {run['deselected']} "
                   f"test(s) were deselected; such a run is partial. {INCONSISTENT}")
    collected = set(run["collected"])
    for i, stack in enumerate(doc["stacks"]):
        for j, test in enumerate(stack["tests"]):
            if test["nodeid"] not in collected:
                yield (f"$.stacks[{i}].tests[{j}].nodeid (stack {stack['name']}): "
                       f"{test['nodeid']!r} is not among $.run.collected; a run reports only "
                       f"tests it collected. {INCONSISTENT}")


def _time_problems(run: dict[str, Any]) -> Iterable[str]:
    times: dict[str, datetime] = {}
    for key in ("started", "finished"):
        try:
            when = datetime.fromisoformat(run[key])
        except ValueError:
            yield (f"$.run.{key}: {run[key]!r} is not an ISO 8601 date and time (e.g. "
                   f"'2025-01-31T12:00:00+00:00').")
            continue
        if when.tzinfo is None:
            yield (f"$.run.{key}: {run[key]!r} has no time zone; write it as UTC (e.g. "
                   f"'2025-01-31T12:00:00+00:00').")
            continue
        times[key] = when
    if len(times) == 2 and times["finished"] < times["started"]:
        yield (f"$.run.finished: {run['finished']!r} is before $.run.started "
               f"{run['started']!r}. {INCONSISTENT}")
