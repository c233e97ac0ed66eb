"""How the schedd double reads a query: its constraint and the attributes it projects.

Apart from the schedd so the queue, the history and the slots read a query one way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from pytest_stacks.backends.htcondor.api import ScheddError
from pytest_stacks.backends.htcondor.fake.classad import ClassAdSyntaxError, Expr


def constraint_of(text: str) -> Expr:
    """A query's constraint; a syntax error is the schedd's own refusal, not a crash."""
    try:
        return Expr(text or "true")
    except ClassAdSyntaxError as exc:
        raise ScheddError(f"Invalid constraint: {exc}") from exc


def projected(ad: Mapping[str, Any], projection: Sequence[str]) -> dict[str, Any]:
    """The ad as a query returns it: the projected attributes (all without one), private
    ones (a leading underscore) never, expressions as their text."""
    wanted = {p.lower() for p in projection}
    out: dict[str, Any] = {}
    for key, value in ad.items():
        if key.startswith("_") or (wanted and key.lower() not in wanted):
            continue
        out[key] = str(value) if isinstance(value, Expr) else value
    return out
