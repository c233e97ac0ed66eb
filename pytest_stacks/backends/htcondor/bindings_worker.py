"""The process that makes the ``htcondor2`` calls for :class:`.bindings.BindingsSchedd`, so
that each call has a deadline the caller can keep.

Why a process and not a thread: the 25.14 bindings hold the GIL for the whole of a call
(measured: a schedd that accepts the connection and never answers froze every other thread of
the process for 20 s on ``query``/``act``/``retrieve``, 60 s on a collector query, and without
end on ``edit``, ``submit`` and ``history``), so no thread can even notice a deadline. A call
that runs out of time here is ended by killing this process.

Protocol: one JSON request a line on stdin (``{"op": ..., "args": {...}}``), one JSON answer a
line on the protocol pipe (the original stdout; what the bindings print goes to stderr):
``{"ok": value}`` or ``{"error": text, "type": exception class}``. Standard library and
``htcondor2`` only, so it starts fast; it ends when stdin closes (its parent went away).
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import Any

#: The bindings' own deadlines, below the caller's (each of its calls has 12 s): where the
#: bindings can end a call themselves, HTCondor's own words say why (a collector that went
#: away: 60 s by default). Measured on 25.14.1: QUERY_TIMEOUT bounds collector queries;
#: schedd calls stop at 20 s (query, act, retrieve) or never (edit, submit, history), which
#: only the caller's deadline ends.
BOUNDED_PARAMS = {"QUERY_TIMEOUT": "10"}


def _plain(value: Any) -> Any:
    # classad2.Value (Undefined, Error) is an IntEnum: asked after int, an undefined
    # HoldReason read as the number 2 (found by tests/parity).
    if type(value).__name__ == "Value":
        return None
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return str(value)


def _ads(ads: Any) -> list[dict[str, Any]]:
    return [{k: _plain(v) for k, v in ad.items()} for ad in ads]


class Calls:
    """The calls a :class:`BindingsSchedd` makes, on the one schedd this process serves."""

    def __init__(self) -> None:
        self.h: Any = None
        self.schedd: Any = None
        self.collector = ""
        self.submitted: dict[int, Any] = {}

    def connect(self, collector: str, token_dir: str, schedd_name: str = "") -> dict[str, Any]:
        settings = {"COLLECTOR_HOST": collector, "SEC_TOKEN_DIRECTORY": token_dir,
                    "SEC_CLIENT_AUTHENTICATION_METHODS": "IDTOKENS", **BOUNDED_PARAMS}
        # The bindings read the environment when first imported.
        for key, value in settings.items():
            os.environ[f"_CONDOR_{key}"] = value
        try:
            import htcondor2  # type: ignore[import-not-found,unused-ignore]
        except ImportError as exc:
            return {"missing": str(exc)}
        for key, value in settings.items():
            htcondor2.param[key] = value
        self.h, self.collector = htcondor2, collector
        try:
            ads = htcondor2.Collector(collector).locateAll(htcondor2.DaemonType.Schedd)
        except Exception as exc:
            return {"unreachable": str(exc).strip()}
        if schedd_name:
            ads = [a for a in ads if str(a.get("Name", "")) == schedd_name]
        if len(ads) != 1:
            return {"names": [str(a.get("Name", "?")) for a in ads]}
        self.schedd = htcondor2.Schedd(ads[0])
        return {"ad": {k: _plain(v) for k, v in ads[0].items()},
                "client_version": str(htcondor2.version())}

    def submit(self, description: dict[str, str], spool: bool, count: int) -> list[int]:
        result = self.schedd.submit(self.h.Submit(description), spool=spool, count=count)
        cluster = int(result.cluster())
        self.submitted[cluster] = result  # what spool needs; it stays in this process
        return [cluster, int(result.first_proc()), int(result.num_procs())]

    def spool(self, cluster: int) -> None:
        self.schedd.spool(self.submitted.pop(cluster))

    def retrieve(self, job_id: str) -> None:
        self.schedd.retrieve([job_id])

    def remove(self, job_ids: list[str], reason: str) -> dict[str, Any]:
        # A plain-string reason is dropped by the 25.14 bindings (only None or a
        # (text, code) tuple reach the schedd), so it travels as a tuple.
        result = self.schedd.act(self.h.JobAction.Remove, job_ids,
                                 reason=(reason, 0) if reason else None)
        return {k: _plain(v) for k, v in result.items()}

    def edit(self, job_ids: list[str], attribute: str, value: str) -> int:
        return int(self.schedd.edit(job_ids, attribute, value) or 0)

    def query(self, constraint: str, projection: list[str]) -> list[dict[str, Any]]:
        return _ads(self.schedd.query(constraint, projection))

    def history(self, constraint: str, projection: list[str], match: int,
                ) -> list[dict[str, Any]]:
        return _ads(self.schedd.history(constraint, projection, match=match))

    def slot_ads(self, constraint: str, projection: list[str]) -> list[dict[str, Any]]:
        collector = self.h.Collector(self.collector) if self.collector else self.h.Collector()
        return _ads(collector.query(self.h.AdType.Startd, constraint, projection))


def serve(lines: Any, answer: Callable[[str], None]) -> None:
    """Answer each request line until the input ends."""
    calls = Calls()
    for line in lines:
        if not line.strip():
            continue
        try:
            request = json.loads(line)
            reply: dict[str, Any] = {"ok": getattr(calls, request["op"])(**request["args"])}
        except Exception as exc:  # HTCondorException and friends: the caller words it
            reply = {"error": str(exc).strip(), "type": type(exc).__name__}
        answer(json.dumps(reply) + "\n")


def main() -> None:
    protocol = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever the bindings print must not corrupt the answers

    def answer(text: str) -> None:
        protocol.write(text)
        protocol.flush()

    serve(sys.stdin, answer)


if __name__ == "__main__":
    main()
