"""Which tests a run covered, as recorded in its results and as a CI plan names it.

A compatibility table is only as good as the runs behind it: a ``-k`` that keeps one passing
test per capability would make every cell green. So every run records its scope exactly as it
was selected (paths, ``-k``, ``-m`` and every other narrowing option), and the merge accepts a
narrowed run only when the plan itself named that scope (the matrix row's ``tests``), never
because a policy option said the selection should count as the suite.

A plan may name paths (or node ids), one ``-k`` and one ``-m`` expression. The other ways of
narrowing a run (``--deselect``, ``--ignore``, ``--ignore-glob``, ``--lf``, ``--sw``, an early
stop with ``--maxfail``/``-x``) depend on the state of one checkout or one run, so they are
recorded but can never be planned.
"""

from __future__ import annotations

import posixpath
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_stacks.errors import StacksError

ENDED_EARLY = "the run ended early"
#: How a partial reason ends when a plugin or conftest deselected tests: no plan names that.
DESELECTED_BY_PLUGIN = "deselected by a plugin or conftest"


class ScopeError(StacksError):
    """A planned scope that cannot be planned (an option other than -k and -m)."""


def normalised_path(arg: str) -> str:
    """A path or node id as the same text however it was typed (``./tests/`` -> ``tests``)."""
    path, sep, rest = arg.partition("::")
    return posixpath.normpath(path.replace("\\", "/")) + sep + rest


@dataclass(frozen=True)
class Scope:
    """``paths``: as given, relative to the project root (empty: none given, the project's
    default); ``other``: narrowing options a plan cannot name, each as typed (``--lf``)."""

    paths: tuple[str, ...] = ()
    keyword: str = ""
    markexpr: str = ""
    other: tuple[str, ...] = ()

    @property
    def narrowed_by_options(self) -> bool:
        return bool(self.keyword or self.markexpr or self.other)

    def describe(self) -> str:
        """The scope as a command line would say it; "the default tests" for none."""
        words = [*self.paths]
        if self.keyword:
            words += ["-k", self.keyword]
        if self.markexpr:
            words += ["-m", self.markexpr]
        words += self.other
        return shlex.join(words) if words else "the default tests"

    def same_as(self, other: Scope) -> bool:
        """The same tests selected (path order does not matter, spelling of paths neither)."""
        return (sorted(map(normalised_path, self.paths))
                == sorted(map(normalised_path, other.paths))
                and (self.keyword, self.markexpr, sorted(self.other))
                == (other.keyword, other.markexpr, sorted(other.other)))

    def to_json(self) -> dict[str, Any]:
        return {"paths": list(self.paths), "keyword": self.keyword, "markexpr": self.markexpr,
                "other": list(self.other)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Scope:
        return cls(tuple(data["paths"]), str(data["keyword"]), str(data["markexpr"]),
                   tuple(data["other"]))


def planned(text: str) -> Scope:
    """The scope a plan names, from the text the job will pass to pytest
    (``tests/contract tests/backend -k "not slow"``). Raises ScopeError for anything else."""
    try:
        words = shlex.split(text)
    except ValueError as exc:
        raise ScopeError(f"the planned tests {text!r} cannot be read as a command line: "
                         f"{exc}") from None
    paths: list[str] = []
    found = {"-k": "", "-m": ""}
    i = 0
    while i < len(words):
        word = words[i]
        flag = next((f for f in found if word == f or (word.startswith(f) and len(word) > 2
                     and not word.startswith("--"))), None)
        if flag is not None:
            value = word[2:] if word != flag else (words[i + 1] if i + 1 < len(words) else "")
            i += 1 if word != flag else 2
            if not value:
                raise ScopeError(f"the planned tests {text!r}: {flag} needs an expression")
            if found[flag]:
                raise ScopeError(f"the planned tests {text!r} give {flag} twice; join the "
                                 f"expressions with 'and'")
            found[flag] = value
            continue
        if word.startswith("-"):
            raise ScopeError(
                f"the planned tests {text!r} hold {word!r}: a plan may name paths (or node "
                f"ids), -k and -m only; other options narrow a run in ways no table can check "
                f"(pass them another way, or drop them)")
        paths.append(normalised_path(word))
        i += 1
    return Scope(tuple(paths), found["-k"], found["-m"])


def merge_problem(ran: Scope, partial_reasons: Sequence[str], plan_text: str | None) -> str:
    """Why a run's scope cannot stand in a table ('' when it can): a whole run always can; a
    narrowed one only when the plan named exactly that scope."""
    if not partial_reasons:
        return ""
    early = [r for r in partial_reasons if r.startswith(ENDED_EARLY)]
    if early:
        return f"{early[0]}: its tests did not all run, whatever was planned"
    unplanned = [r for r in partial_reasons if r.endswith(DESELECTED_BY_PLUGIN)]
    if unplanned:
        return (f"{unplanned[0]}: no plan names such a narrowing (run the planned tests "
                f"without it)")
    if plan_text:
        try:
            plan = planned(plan_text)
        except ScopeError as exc:
            return f"the plan's tests cannot be checked: {exc}"
        if ran.same_as(plan) and not ran.other:
            return ""
        return (f"ran {ran.describe()} ({'; '.join(partial_reasons)}), but the plan named "
                f"{plan.describe()}: run exactly the planned tests")
    return (f"partial run: {ran.describe()} ({'; '.join(partial_reasons)}), and the plan named "
            f"no selection; a table needs the whole suite, or a plan that names the selection "
            f"(pytest-stacks matrix --tests)")
