"""The CI job's word, read from the environment and checked where it enters.

A CI job says which lane it belongs to (``PYTEST_STACKS_CI_LANE``), which plan it answers
(``PYTEST_STACKS_CI_PLAN``) and which rows (``PYTEST_STACKS_CI_STACK``). Each lands in the
results file (``run.ci_lane``, ``run.plan``), so each is checked here by the very rule of the
results schema for that field (the schema shipped in the package, not a copy of its rules):
a value the file could not carry is refused when the run starts, naming the variable, the
value (shortened) and the fix, never written into evidence nor found out at the end.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

import jsonschema

from pytest_stacks.errors import StacksError
from pytest_stacks.verdicts.results import schema

CI_LANE_ENV = "PYTEST_STACKS_CI_LANE"
CI_STACK_ENV = "PYTEST_STACKS_CI_STACK"
CI_PLAN_ENV = "PYTEST_STACKS_CI_PLAN"
SHOWN = 60  # characters of a refused value that a message shows


def shorten(value: str, limit: int = SHOWN) -> str:
    """``value`` as a message shows it: quoted, at most ``limit`` characters of it."""
    return repr(value) if len(value) <= limit else f"{value[:limit]!r}... ({len(value)} chars)"


@cache
def _rule(*path: str) -> jsonschema.protocols.Validator:
    """A validator for the results schema's rule at ``path`` (``$defs`` resolvable)."""
    full = schema()
    node: Any = full
    for part in path:
        node = node[part]
    cls = jsonschema.validators.validator_for(full)
    return cls({"$defs": full.get("$defs", {}), **node})


def _check(variable: str, value: Any, shown: str, fix: str, *path: str) -> None:
    error = jsonschema.exceptions.best_match(_rule(*path).iter_errors(value))
    if error is not None:
        field = ".".join(p for p in path if p not in ("$defs", "properties"))
        raise StacksError(f"environment variable {variable}={shown}: not what the results "
                          f"file's {field} may hold ({error.message[:200]}). {fix}")


_RUN = ("$defs", "run", "properties")


def ci_lane(environ: Mapping[str, str]) -> str | None:
    """The job's lane, or None when unset (empty counts as unset)."""
    value = environ.get(CI_LANE_ENV) or None
    if value is not None:
        _check(CI_LANE_ENV, value, shorten(value),
               "Set it to pr, full or canary (the lanes of `pytest-stacks plan`), or unset it "
               "outside CI.", *_RUN, "ci_lane")
    return value


def ci_plan(environ: Mapping[str, str]) -> str | None:
    """The plan's digest the job answers, or None when unset."""
    value = environ.get(CI_PLAN_ENV) or None
    if value is not None:
        _check(CI_PLAN_ENV, value, shorten(value),
               "Set it to the 'plan' of the job's row (`pytest-stacks plan LANE`), or unset "
               "it.", *_RUN, "plan", "properties", "digest")
    return value


def ci_stacks(environ: Mapping[str, str]) -> tuple[str, ...]:
    """The rows' stacks the job names (comma-separated), in order, each once; () when unset."""
    raw = environ.get(CI_STACK_ENV, "")
    said = tuple(dict.fromkeys(s.strip() for s in raw.split(",") if s.strip()))
    if said:
        _check(CI_STACK_ENV, list(said), shorten(raw),
               "Name the row's stacks, comma-separated (the 'stack' of the job's row).",
               *_RUN, "plan", "properties", "stacks")
    return said


def check_all(environ: Mapping[str, str]) -> None:
    """Every CI variable checked at once, when a run starts (StacksError on the first)."""
    ci_lane(environ)
    ci_plan(environ)
    ci_stacks(environ)
