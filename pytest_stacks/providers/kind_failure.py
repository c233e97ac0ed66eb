"""What of ``kind create cluster``'s output says why it failed.

kind runs ``kubeadm init --v=6`` and, when it fails, prints kubeadm's whole output ending in a
Go stack trace; the last lines alone (what a report has room for) are that trace and never the
reason (seen in a CI window: two failed attempts reported as 20 lines of stack frames each). The
reason is in the lines that say "error" or "timed out" (kind's ``ERROR: failed to create
cluster: ...``, kubeadm's ``error execution phase ...``), so those come first.
"""

from __future__ import annotations

import re

#: A line that names a failure, as kind, kubeadm and the kubelet word them.
_REASON = re.compile(r"error|timed out|timeout|failed|unhealthy|not healthy", re.IGNORECASE)
#: A Go stack trace's lines: a function (``pkg.(*T).Method.func1``, one word with a dot) or
#: its file (``\tpath/file.go:12 +0x1f``).
_FRAME = re.compile(r"^(\s+\S+:\d+( \+0x[0-9a-f]+)?|[^\s.]+\.\S*)$")


def summary(output: str, reasons: int = 8, tail: int = 8) -> str:
    """The first ``reasons`` lines that name a failure (stack frames left out, each once),
    then the last ``tail`` lines that are not stack frames."""
    lines = [line.rstrip() for line in output.strip().splitlines() if line.strip()]
    prose = [line for line in lines if not _FRAME.match(line)]
    named: list[str] = []
    for line in prose:
        if _REASON.search(line) and line not in named:
            named.append(line[:400])
        if len(named) == reasons:
            break
    last = [line[:400] for line in prose[-tail:] if line[:400] not in named]
    return "\n".join(named + (["..."] if named and last else []) + last) or \
        "\n".join(lines[-tail:])
