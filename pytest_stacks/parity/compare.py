"""What a fake answered that its daemon did not, field by field, after normalisation.

Only a declared difference (one place, with a reason) is excused; an extra field, a missing
one, a renamed state, another error text are each a difference. A step or a request that
differs (the driver asked the fake something else, because an earlier answer differed) is
one too.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_stacks.parity.fields import fields, label


@dataclasses.dataclass(frozen=True)
class Declared:
    """A difference on purpose: ``call`` and each of ``fields`` are patterns where only ``*``
    is a wildcard (field paths hold brackets: ``response.stdout.json.jobs[*].account``); a
    field pattern also covers everything under that field."""

    backend: str
    call: str
    fields: tuple[str, ...]
    reason: str
    step: str = "*"

    def excuses(self, backend: str, step: str, call: str, field: str) -> bool:
        return (backend == self.backend and _matches(self.step, step)
                and _matches(self.call, call)
                and any(_matches(f, field, below=True) for f in self.fields))


@dataclasses.dataclass(frozen=True)
class Difference:
    step: str
    call: str
    field: str
    real: str | None
    fake: str | None

    def render(self) -> str:
        def shown(value: str | None) -> str:
            return "(absent)" if value is None else repr(value)
        return f"    {self.field}: real {shown(self.real)}, fake {shown(self.fake)}"


@dataclasses.dataclass
class Comparison:
    differences: list[Difference]
    excused: int

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
        return "\n".join(lines)


def compare(backend: str, real: Sequence[Mapping[str, Any]], fake: Sequence[Mapping[str, Any]],
            declared: Sequence[Declared]) -> Comparison:
    """``real`` and ``fake`` are normalised steps (``{"name", "exchanges"}``), in order."""
    result = Comparison([], 0)

    def note(step: str, call: str, field: str, r: str | None, f: str | None) -> None:
        if any(d.excuses(backend, step, call, field) for d in declared):
            result.excused += 1
        else:
            result.differences.append(Difference(step, call, field, r, f))

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
            r_fields, f_fields = fields(r_one), fields(f_one)
            for path in sorted(set(r_fields) | set(f_fields)):
                if r_fields.get(path) != f_fields.get(path):
                    note(name, str(r_label), path, r_fields.get(path), f_fields.get(path))
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
