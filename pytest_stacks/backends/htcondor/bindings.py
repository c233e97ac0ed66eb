"""The real schedd behind the :class:`~pytest_stacks.backends.htcondor.api.Schedd` interface,
through the ``htcondor2`` bindings.

This is the only code that touches ``htcondor2``, an optional dependency (the ``htcondor``
extra), and it imports the bindings only when a pool is actually reached, so the driver and
the fake lane run without them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_stacks.backends.htcondor.api import ScheddError, Submitted
from pytest_stacks.errors import BackendCallError


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


class BindingsSchedd:
    """A thin wrapper over ``htcondor2.Schedd`` that speaks the :class:`Schedd` interface."""

    def __init__(self, htcondor2: Any, schedd_ad: Any, token_dir: Path | None = None,
                 collector: str | None = None) -> None:
        self._h = htcondor2
        self._ad = schedd_ad
        self._token_dir = token_dir
        self._collector = collector
        self._schedd = htcondor2.Schedd(schedd_ad)

    @classmethod
    def connect(cls, collector: str, token_dir: Path, schedd_name: str | None = None,
                ) -> BindingsSchedd:
        """Configure the bindings for IDTOKENS against ``collector`` and locate the schedd."""
        settings = {
            "COLLECTOR_HOST": collector,
            "SEC_TOKEN_DIRECTORY": str(Path(token_dir).resolve()),
            "SEC_CLIENT_AUTHENTICATION_METHODS": "IDTOKENS",
        }
        # The bindings read the environment when first imported; param covers a later stack.
        for key, value in settings.items():
            os.environ[f"_CONDOR_{key}"] = value
        try:
            import htcondor2
        except ImportError as exc:
            raise BackendCallError(
                "the HTCondor driver needs the 'htcondor' package (module htcondor2): "
                "pip install 'pytest-stacks[htcondor]'") from exc
        for key, value in settings.items():
            htcondor2.param[key] = value
        try:
            ads = htcondor2.Collector(collector).locateAll(htcondor2.DaemonType.Schedd)
        except Exception as exc:
            raise BackendCallError(f"cannot reach the collector at {collector}: {exc}") from exc
        if schedd_name:
            ads = [a for a in ads if str(a.get("Name", "")) == schedd_name]
        if len(ads) != 1:
            names = [str(a.get("Name", "?")) for a in ads]
            raise BackendCallError(
                f"expected exactly one schedd at {collector}"
                f"{f' named {schedd_name!r}' if schedd_name else ''}, found {names or 'none'}")
        return cls(htcondor2, ads[0], Path(token_dir), collector)

    def _call(self, what: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
        if self._token_dir is not None:  # another stack in this process may have moved it
            wanted = str(self._token_dir.resolve())
            if self._h.param.get("SEC_TOKEN_DIRECTORY") != wanted:
                self._h.param["SEC_TOKEN_DIRECTORY"] = wanted
        try:
            return fn(*args, **kwargs)
        except Exception as exc:  # HTCondorException and friends
            raise ScheddError(f"{what}: {str(exc).strip()}") from exc

    def submit(self, description: Mapping[str, str], *, spool: bool = True,
               count: int = 1) -> Submitted:
        result = self._call("submit", self._schedd.submit, self._h.Submit(dict(description)),
                            spool=spool, count=count)
        return Submitted(int(result.cluster()), int(result.first_proc()),
                         int(result.num_procs()), result)

    def spool(self, submitted: Submitted) -> None:
        self._call("spool", self._schedd.spool, submitted.native)

    def retrieve(self, job_id: str) -> None:
        self._call("retrieve", self._schedd.retrieve, [job_id])

    def act(self, action: str, job_ids: Sequence[str], reason: str = "") -> dict[str, Any]:
        if action.lower() != "remove":
            raise ScheddError(f"unsupported action {action!r}")
        # A plain-string reason is dropped by the 25.14 bindings (only None or a
        # (text, code) tuple reach the schedd), so it travels as a tuple.
        result = self._call("remove", self._schedd.act, self._h.JobAction.Remove,
                            list(job_ids), reason=(reason, 0) if reason else None)
        return {k: _plain(v) for k, v in result.items()}

    def edit(self, job_ids: Sequence[str], attribute: str, value: str) -> int:
        return int(self._call("edit", self._schedd.edit, list(job_ids), attribute, value) or 0)

    def query(self, constraint: str = "true",
              projection: Sequence[str] = ()) -> list[dict[str, Any]]:
        ads = self._call("query", self._schedd.query, constraint, list(projection))
        return [{k: _plain(v) for k, v in ad.items()} for ad in ads]

    def history(self, constraint: str = "true", projection: Sequence[str] = (),
                match: int = -1) -> list[dict[str, Any]]:
        ads = self._call("history", self._schedd.history, constraint, list(projection),
                         match=match)
        return [{k: _plain(v) for k, v in ad.items()} for ad in ads]

    def slot_ads(self, constraint: str = "true",
                 projection: Sequence[str] = ()) -> list[dict[str, Any]]:
        collector = self._h.Collector(self._collector) if self._collector else self._h.Collector()
        ads = self._call("slot query", collector.query, self._h.AdType.Startd, constraint,
                         list(projection))
        return [{k: _plain(v) for k, v in ad.items()} for ad in ads]

    def daemon_version(self) -> str:
        return str(self._ad.get("CondorVersion", ""))

    def client_version(self) -> str:
        return str(self._h.version())

