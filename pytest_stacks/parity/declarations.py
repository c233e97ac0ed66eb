"""The ``declared:`` entries of the parity file, read into :class:`~.compare.Declared`.

An entry names where a difference is meant (backend, call, fields, optionally the step or
steps and the field they are all under), why (its reason), and optionally which values each
side may show there::

    - backend: htcondor
      step: [wait long ended, purge]
      call: "query: *"
      fields: ["response[0].ExitCode"]
      real: "*"                # any: the daemon races (or a list, where every value is known)
      fake: ["(absent)"]       # what the double answers, given its options
      reason: why

A scope has both sides, and ``*`` on one of them at most: a declaration that excuses any value
on both sides is one without a scope, and saying so twice would only hide that. Values are
written as a difference shows them (``'0'``, ``'true'``, ``'null'``, ``'(absent)'``), quoted.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_stacks.parity.compare import ABSENT, Declared

_REQUIRED = frozenset({"backend", "call", "fields", "reason"})
_OPTIONAL = frozenset({"step", "under", "real", "fake"})
#: A side of a scope that admits any value.
ANY = "*"


def read_declared(entries: Any, path: Path) -> tuple[list[Declared], list[str]]:
    """The declarations, and a problem (file, field, fix) for each malformed entry."""
    declared: list[Declared] = []
    problems: list[str] = []
    for index, entry in enumerate(entries or []):
        where = f"{path}: declared[{index}]"
        if not isinstance(entry, dict) or not set(entry) >= _REQUIRED or (
                set(entry) - _REQUIRED - _OPTIONAL):
            problems.append(f"{where} needs backend, call, fields and reason (and may name a "
                            f"step, the field all of its fields are under, and the values "
                            f"each side may show: real and fake)")
            continue
        if not str(entry["reason"]).strip():
            problems.append(f"{where}.reason is empty: say why the fake differs on purpose")
            continue
        fields = entry["fields"]
        if not isinstance(fields, list) or not fields or not all(
                isinstance(f, str) and f for f in fields):
            problems.append(f"{where}.fields must be a list of field paths ('*' matches "
                            f"anything), as a difference names them")
            continue
        steps = entry.get("step", ANY)
        steps = [steps] if isinstance(steps, str) else steps
        if not isinstance(steps, list) or not steps or not all(
                isinstance(s, str) and s for s in steps):
            problems.append(f"{where}.step must be a step's name or a list of them ('*' "
                            f"matches anything), as a difference names them")
            continue
        scope = _scope(entry, where)
        if isinstance(scope, str):
            problems.append(scope)
            continue
        under = str(entry.get("under", ""))
        declared.append(Declared(
            str(entry["backend"]), str(entry["call"]),
            tuple(f"{under}.{f}" if under else f for f in fields), str(entry["reason"]),
            tuple(steps), *scope, name=f"declared[{index}]"))
    return declared, problems


Scope = tuple[frozenset[str | None] | None, frozenset[str | None] | None]


def _scope(entry: dict[str, Any], where: str) -> Scope | str:
    """``(real, fake)`` (None: any value), or the problem with them."""
    given = [side for side in ("real", "fake") if side in entry]
    if not given:
        return None, None
    if len(given) == 1:
        other = "fake" if given[0] == "real" else "real"
        return (f"{where} names the values {given[0]} may show but not {other}'s: give both "
                f"({other}: '*' where any value is meant)")
    sides: list[frozenset[str | None] | None] = []
    for side in ("real", "fake"):
        value = entry[side]
        if value == ANY:
            sides.append(None)
        elif isinstance(value, list) and value and all(isinstance(v, str) for v in value):
            sides.append(frozenset(None if v == ABSENT else v for v in value))
        else:
            return (f"{where}.{side} must be '*' or a list of values as a difference shows "
                    f"them, each quoted ('0', 'true', '{ABSENT}')")
    if sides == [None, None]:
        return (f"{where} excuses any value on both sides: name the values one side may "
                f"show (the fake's: what the double answers), or drop real and fake")
    return sides[0], sides[1]
