"""What a fake answered that its daemon did not, field by field, after normalisation.

Only a declared difference (one place, with a reason, and where it names them, the values each
side may show there) is excused; an extra field, a missing one, a renamed state, another error
text are each a difference. A step or a request that differs (the driver asked the fake
something else, because an earlier answer differed) is one too.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_stacks.parity.fields import fields, label

#: How a field that one side does not have is shown, and named in a declaration's values.
ABSENT = "(absent)"


@dataclasses.dataclass(frozen=True)
class Declared:
    """A difference on purpose: ``call``, each of ``steps`` and each of ``fields`` are patterns
    where only ``*`` is a wildcard (field paths hold brackets:
    ``response.stdout.json.jobs[*].account``); a field pattern also covers everything under
    that field.

    ``real`` and ``fake`` scope it by value: the values each side may show there (None: any
    value; ``None`` in the set: the field is absent). A scoped declaration excuses a
    difference only when both values are in its scope, so a fake cannot hide a wrong answer
    under a race of the real side: the fake's side is what the double answers, which is
    deterministic, and the real side stays open where the daemon races."""

    backend: str
    call: str
    fields: tuple[str, ...]
    reason: str
    steps: tuple[str, ...] = ("*",)
    real: frozenset[str | None] | None = None
    fake: frozenset[str | None] | None = None
    #: How a report names it: ``declared[3]``, its place in the parity file.
    name: str = "a declaration"

    def at(self, backend: str, step: str, call: str) -> bool:
        """The exchange is one this declaration is about."""
        return (backend == self.backend and any(_matches(s, step) for s in self.steps)
                and _matches(self.call, call))

    def covers(self, backend: str, step: str, call: str, field: str) -> bool:
        """The difference is where this declaration is (whatever its values)."""
        return (self.at(backend, step, call)
                and any(_matches(f, field, below=True) for f in self.fields))

    def admits(self, real: str | None, fake: str | None) -> bool:
        """Both values are in the scope (a side without one admits any)."""
        return ((self.real is None or real in self.real)
                and (self.fake is None or fake in self.fake))

    def describe(self) -> str:
        """``declared[14] (response.stdout.record[2].ExitCode)``: its place in the file, and
        its field (a report names the step and the call beside it)."""
        more = len(self.fields) - 1
        return f"{self.name} ({self.fields[0]}{f' and {more} more' if more else ''})"

    def scope(self) -> str:
        """``real (any), fake (absent)``."""
        return f"real {_values(self.real)}, fake {_values(self.fake)}"


def _values(values: frozenset[str | None] | None) -> str:
    if values is None:
        return "(any)"
    return " or ".join(sorted(ABSENT if v is None else repr(v) for v in values))


@dataclasses.dataclass(frozen=True)
class Difference:
    step: str
    call: str
    field: str
    real: str | None
    fake: str | None
    #: The declarations that are at this place but do not name these values.
    outside: tuple[Declared, ...] = ()

    def render(self) -> str:
        def shown(value: str | None) -> str:
            return ABSENT if value is None else repr(value)
        line = f"    {self.field}: real {shown(self.real)}, fake {shown(self.fake)}"
        for declared in self.outside:
            line += (f"\n      not excused by {declared.describe()}: its values are "
                     f"{declared.scope()}")
        return line


@dataclasses.dataclass
class Comparison:
    differences: list[Difference]
    excused: int
    #: The declarations about exchanges compared here that excused nothing. Information,
    #: never a failure: a declared race need not happen in one run (the fake and this
    #: recording may agree), so a stale declaration is for a person to review, not for a
    #: window to fail. One about calls this comparison never made (another release's
    #: commands) is not stale here.
    stale: list[Declared] = dataclasses.field(default_factory=list)

    @property
    def same(self) -> bool:
        return not self.differences

    def render(self, title: str) -> str:
        lines = [title]
        where = None
        for diff in self.differences:
            if (diff.step, diff.call) != where:
                where = (diff.step, diff.call)
                lines.append(f"  step {diff.step!r}, {diff.call}")
            lines.append(diff.render())
        lines.append(f"  ({len(self.differences)} difference(s); {self.excused} declared "
                     f"difference(s) excused, see the declarations file)")
        if self.stale:
            lines.append(self.stale_note())
        return "\n".join(lines)

    def stale_note(self) -> str:
        """What the report says of the declarations that excused nothing, "" when none."""
        if not self.stale:
            return ""
        return (f"  information: {len(self.stale)} declaration(s) excused nothing in this "
                f"comparison (a race may not happen in one run; review them if they never "
                f"do): " + "; ".join(d.describe() for d in self.stale))


def compare(backend: str, real: Sequence[Mapping[str, Any]], fake: Sequence[Mapping[str, Any]],
            declared: Sequence[Declared]) -> Comparison:
    """``real`` and ``fake`` are normalised steps (``{"name", "exchanges"}``), in order."""
    result = Comparison([], 0)
    ours = [d for d in declared if d.backend == backend]
    used: set[int] = set()
    about: set[int] = set()  # about an exchange compared here, and never outside its values
    outside: set[int] = set()

    def note(step: str, call: str, field: str, r: str | None, f: str | None) -> None:
        here = [i for i, d in enumerate(ours) if d.covers(backend, step, call, field)]
        admitting = [i for i in here if ours[i].admits(r, f)]
        if admitting:
            result.excused += 1
            used.update(admitting)
        else:
            result.differences.append(
                Difference(step, call, field, r, f, tuple(ours[i] for i in here)))
            outside.update(here)  # reported with the difference: not stale

    for index in range(max(len(real), len(fake))):
        r_step = real[index] if index < len(real) else None
        f_step = fake[index] if index < len(fake) else None
        name = str((r_step or f_step or {}).get("name"))
        if r_step is None or f_step is None or r_step.get("name") != f_step.get("name"):
            note(name, "(scenario)", "step", _name(r_step), _name(f_step))
            continue
        r_ex, f_ex = list(r_step["exchanges"]), list(f_step["exchanges"])
        for position in range(max(len(r_ex), len(f_ex))):
            r_one = r_ex[position] if position < len(r_ex) else None
            f_one = f_ex[position] if position < len(f_ex) else None
            r_label = label(r_one) if r_one is not None else None
            f_label = label(f_one) if f_one is not None else None
            if r_one is None or f_one is None or r_label != f_label:
                note(name, f"exchange {position + 1}", "request", r_label, f_label)
                continue
            about.update(i for i, d in enumerate(ours) if d.at(backend, name, str(r_label)))
            r_fields, f_fields = fields(r_one), fields(f_one)
            for path in sorted(set(r_fields) | set(f_fields)):
                if r_fields.get(path) != f_fields.get(path):
                    note(name, str(r_label), path, r_fields.get(path), f_fields.get(path))
    result.stale = [d for i, d in enumerate(ours)
                    if i in about and i not in used and i not in outside]
    return result


def _name(step: Mapping[str, Any] | None) -> str | None:
    return None if step is None else str(step.get("name"))


def _matches(pattern: str, text: str, *, below: bool = False) -> bool:
    """``pattern`` (``*`` a wildcard) matches ``text``; ``below``: or anything under it (a
    field names its whole subtree: ``...jobs[*].job_resources`` holds its nested fields)."""
    return _regex(pattern, below).fullmatch(text) is not None


@functools.cache
def _regex(pattern: str, below: bool) -> re.Pattern[str]:
    regex = ".*".join(re.escape(part) for part in pattern.split("*"))
    return re.compile(regex + (r"(?:[.\[].*)?" if below else ""), flags=re.DOTALL)
