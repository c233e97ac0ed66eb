"""What a site's teardown can say of the jobs a run submitted, each by the backend's own answer
to a look-up by its id after the run's end: ``gone`` (the backend holds no such job, or none
still pending or running) or ``left`` (one line each: what it still holds). Only ids the run's
client returned are looked up; a site adapter without such a look-up says nothing per job,
and its teardown claims no more than its run tag's sweep proved.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_NUMBERED = re.compile(r"(.*?)(\d+)")


@dataclass(frozen=True)
class JobAccount:
    """``where``: what was asked, in words (``alice's jobs in squeue``, ``namespace team``)."""

    gone: tuple[str, ...] = ()
    left: tuple[str, ...] = ()
    where: str = ""


def shown(ids: Iterable[str]) -> str:
    """Ids as a person reads them, every one accounted for: consecutive numbers under one
    prefix as ``first..last`` (``101..130``, ``pst-a1b2c3-9f0e-1..12``)."""
    numbered: dict[str, list[int]] = {}
    plain = []
    for job_id in dict.fromkeys(ids):
        found = _NUMBERED.fullmatch(job_id)
        if found and str(int(found.group(2))) == found.group(2):  # no leading zero to lose
            numbered.setdefault(found.group(1), []).append(int(found.group(2)))
        else:
            plain.append(job_id)
    parts = []
    for prefix, numbers in sorted(numbered.items()):
        numbers.sort()
        start = previous = numbers[0]
        for number in [*numbers[1:], None]:
            if number is not None and number == previous + 1:
                previous = number
                continue
            parts.append(f"{prefix}{start}" + (f"..{previous}" if previous != start else ""))
            if number is not None:
                start = previous = number
    return ", ".join([*parts, *sorted(plain)])
