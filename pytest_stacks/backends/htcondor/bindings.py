"""The real schedd behind the :class:`~pytest_stacks.backends.htcondor.api.Schedd` interface,
through the ``htcondor2`` bindings, every call with a deadline.

The bindings run in a worker process of their own (:mod:`.bindings_worker`, through
:mod:`.bounded`): they hold the GIL for a whole call and a schedd that went away can keep a
call for 20 s to forever, so a call ends after 12 s with the worker killed, and every later
call on this schedd fails at once with the same words (the stack is broken; the health check
names why). The worker imports the bindings, an optional dependency (the ``htcondor`` extra),
only when a pool is actually reached, so the driver and the fake lane run without them; one
worker per schedd also keeps each stack's token directory its own.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_stacks.backends.htcondor.api import ScheddError, Submitted
from pytest_stacks.backends.htcondor.bounded import (
    CALL_DEADLINE_S,
    START_DEADLINE_S,
    BoundedCalls,
    WorkerError,
)
from pytest_stacks.errors import BackendCallError


class BindingsSchedd:
    """A thin wrapper over ``htcondor2.Schedd`` (in its worker) that speaks the
    :class:`Schedd` interface."""

    def __init__(self, calls: BoundedCalls, schedd_ad: Mapping[str, Any],
                 client_version: str) -> None:
        self._calls = calls
        self._ad = dict(schedd_ad)
        self._client_version = client_version

    @classmethod
    def connect(cls, collector: str, token_dir: Path, schedd_name: str | None = None, *,
                deadline: float = CALL_DEADLINE_S,
                first_deadline: float = START_DEADLINE_S) -> BindingsSchedd:
        """Configure the bindings for IDTOKENS against ``collector`` and locate the schedd.
        ``first_deadline`` bounds the worker's start (importing the bindings) and the
        collector's answer; ``deadline`` each later call."""
        settings = {
            "COLLECTOR_HOST": collector,
            "SEC_TOKEN_DIRECTORY": str(Path(token_dir).resolve()),
            "SEC_CLIENT_AUTHENTICATION_METHODS": "IDTOKENS",
        }
        # Also this process's: a user's own client (the pytest_stacks_backend hook) imports
        # the bindings here and reads the environment then.
        for key, value in settings.items():
            os.environ[f"_CONDOR_{key}"] = value
        calls = BoundedCalls(deadline=deadline)
        try:
            found = calls.call("connect", deadline=first_deadline, collector=collector,
                               token_dir=settings["SEC_TOKEN_DIRECTORY"],
                               schedd_name=schedd_name or "")
        except WorkerError as exc:
            calls.close()
            raise BackendCallError(f"cannot reach the collector at {collector}: {exc}") from exc
        if "ad" in found:
            return cls(calls, found["ad"], str(found["client_version"]))
        calls.close()
        if "missing" in found:
            raise BackendCallError(
                "the HTCondor driver needs the 'htcondor' package (module htcondor2): "
                f"pip install 'pytest-stacks[htcondor]' ({found['missing']})")
        if "unreachable" in found:
            raise BackendCallError(f"cannot reach the collector at {collector}: "
                                   f"{found['unreachable']}")
        names = found.get("names") or []
        raise BackendCallError(
            f"expected exactly one schedd at {collector}"
            f"{f' named {schedd_name!r}' if schedd_name else ''}, found {names or 'none'}")

    def _call(self, what: str, op: str, **args: Any) -> Any:
        try:
            return self._calls.call(op, **args)
        except WorkerError as exc:  # HTCondorException and friends, or no answer in time
            raise ScheddError(f"{what}: {exc}") from exc

    def submit(self, description: Mapping[str, str], *, spool: bool = True,
               count: int = 1) -> Submitted:
        cluster, first, num = self._call("submit", "submit", description=dict(description),
                                         spool=spool, count=count)
        return Submitted(int(cluster), int(first), int(num), int(cluster))

    def spool(self, submitted: Submitted) -> None:
        self._call("spool", "spool", cluster=int(submitted.native))

    def retrieve(self, job_id: str) -> None:
        self._call("retrieve", "retrieve", job_id=job_id)

    def act(self, action: str, job_ids: Sequence[str], reason: str = "") -> dict[str, Any]:
        if action.lower() != "remove":
            raise ScheddError(f"unsupported action {action!r}")
        return dict(self._call("remove", "remove", job_ids=list(job_ids), reason=reason))

    def edit(self, job_ids: Sequence[str], attribute: str, value: str) -> int:
        return int(self._call("edit", "edit", job_ids=list(job_ids), attribute=attribute,
                              value=value) or 0)

    def query(self, constraint: str = "true",
              projection: Sequence[str] = ()) -> list[dict[str, Any]]:
        return list(self._call("query", "query", constraint=constraint,
                               projection=list(projection)))

    def history(self, constraint: str = "true", projection: Sequence[str] = (),
                match: int = -1) -> list[dict[str, Any]]:
        return list(self._call("history", "history", constraint=constraint,
                               projection=list(projection), match=match))

    def slot_ads(self, constraint: str = "true",
                 projection: Sequence[str] = ()) -> list[dict[str, Any]]:
        return list(self._call("slot query", "slot_ads", constraint=constraint,
                               projection=list(projection)))

    def daemon_version(self) -> str:
        return str(self._ad.get("CondorVersion", ""))

    def client_version(self) -> str:
        return self._client_version

    def close(self) -> None:
        """End the bindings' worker process."""
        self._calls.close()
