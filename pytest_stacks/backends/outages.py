"""What a scheduler's own words mean when a call fails: "the service is not there" (an
infrastructure fault: the daemon is down, unreachable, or stopped answering) or "the request
was refused" (the product's failure: a bad option, an unknown partition).

Each driver declares its daemon's words as data beside it (``backends/*/outages.py``) and the
registry names them; the lifecycle reads them when a test failed on a stack whose containers
still look healthy, so a schedd that was killed inside a live container is an infrastructure
error, not nineteen product failures. The declarations are tested against outputs recorded
from the real daemons (tests/data/outages).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal

Meaning = Literal["gone", "refused", "unknown"]


@dataclass(frozen=True)
class Phrase:
    """One way a daemon or its tool says something: ``pattern`` (a regular expression, matched
    case-insensitively anywhere in a line) and ``fault``, the fault it names for a person
    (``slurmctld not responding``)."""

    pattern: str
    fault: str

    def found(self, text: str) -> str | None:
        """The first line of ``text`` holding the phrase, stripped; None when none does."""
        expression = re.compile(self.pattern, re.IGNORECASE)
        for line in text.splitlines():
            if expression.search(line):
                return line.strip()[:500]
        return None


@dataclass(frozen=True)
class Reading:
    """What a failure's text means: ``fault`` names it, ``words`` is the daemon's own line."""

    meaning: Meaning
    fault: str = ""
    words: str = ""

    def __str__(self) -> str:
        return f"{self.fault} (the daemon said: {self.words})" if self.words else self.fault


@dataclass(frozen=True)
class OutageWords:
    """A backend's vocabulary. ``gone`` is read first: a refusal that says why
    (``Batch job submission failed: Unable to contact slurm controller``) is an outage."""

    backend: str
    gone: tuple[Phrase, ...]
    refused: tuple[Phrase, ...]

    def read(self, text: str) -> Reading:
        for meaning, phrases in (("gone", self.gone), ("refused", self.refused)):
            for phrase in phrases:
                line = phrase.found(text)
                if line is not None:
                    return Reading("gone" if meaning == "gone" else "refused",
                                   phrase.fault, line)
        return Reading("unknown")


#: A backend nothing is declared for: every failure is read as unknown (its verdict is then
#: decided by the stack's health alone).
NOTHING = OutageWords("", (), ())
