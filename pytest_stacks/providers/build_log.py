"""Reading an image build's log: the step that failed, the last lines, and the stack
Dockerfiles' own words when a pinned Debian version has left its suite."""

from __future__ import annotations

import re


def tail(text: str, lines: int = 30) -> str:
    return "\n".join(text.strip().splitlines()[-lines:])


def failed_step(output: str) -> str:
    """The BuildKit/classic step that was running when a build failed."""
    steps = re.findall(r"^#\d+ \[[^\]]+\] (.+)$|^Step \d+/\d+ : (.+)$", output, re.MULTILINE)
    if not steps:
        return "(step unknown)"
    last: str = steps[-1][0] or steps[-1][1]
    return last[:200]


def pin_gone(output: str) -> str:
    """The stack Dockerfiles' own words when a pinned Debian version has left its suite
    (``PIN-GONE: ...``, with the version the suite has now and the fix); "" otherwise."""
    said = [m.strip() for m in re.findall(r"PIN-GONE: ([^\n\x1b]+)", output)
            if "${" not in m]  # not the RUN line echoed in the builder's failure message
    return said[0] if said else ""
