"""Every call a driver makes through its channel, with what came back, grouped by step.

A wait that polls keeps only its last round (:meth:`Recorder.round`): how many rounds a real
daemon needs is timing, not behaviour, and would make every recording differ.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping
from pathlib import PurePath
from typing import Any

#: Bytes up to this size are kept as text when they decode; larger or binary ones by digest.
TEXT_LIMIT = 4096


@dataclasses.dataclass
class Exchange:
    call: str
    request: dict[str, Any]
    response: Any = None
    error: str = ""

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {"call": self.call, "request": self.request}
        if self.error:
            data["error"] = self.error
        else:
            data["response"] = self.response
        return data


@dataclasses.dataclass
class Step:
    name: str
    exchanges: list[Exchange] = dataclasses.field(default_factory=list)


class Recorder:
    """Collects the exchanges of one scenario run; the scenario names each step."""

    def __init__(self) -> None:
        self.steps: list[Step] = []
        self.job_ids: list[str] = []

    def step(self, name: str) -> None:
        self.steps.append(Step(name))

    def round(self) -> None:
        """A new polling round of the current step: the previous round's exchanges go."""
        if self.steps:
            self.steps[-1].exchanges.clear()

    def own_jobs(self, job_ids: list[str]) -> None:
        """Job ids the scenario created, in order (they become ``<job1>``, ``<job2>``...)."""
        self.job_ids.extend(j for j in job_ids if j not in self.job_ids)

    def add(self, exchange: Exchange) -> None:
        """A driver's own retry of the very same request (waiting for a default
        ServiceAccount, say) keeps only its last answer, as a wait of the scenario does."""
        if not self.steps:
            self.step("start")
        exchanges = self.steps[-1].exchanges
        if exchanges and (exchanges[-1].call, exchanges[-1].request) == (
                exchange.call, exchange.request):
            exchanges.pop()
        exchanges.append(exchange)

    def tap(self, channel: Any) -> Any:
        """``channel`` seen by this recorder (a :class:`~pytest_stacks.contract.ChannelTap`)."""
        return _Tapped(channel, self)


class _Tapped:
    def __init__(self, channel: Any, recorder: Recorder) -> None:
        self._channel = channel
        self._recorder = recorder

    def __getattr__(self, name: str) -> Any:
        target = getattr(self._channel, name)
        if not callable(target) or name.startswith("_"):
            return target
        return _recording(name, target, self._recorder)


def _recording(name: str, target: Callable[..., Any], recorder: Recorder) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        request = {"args": [as_data(a) for a in args],
                   **{k: as_data(v) for k, v in sorted(kwargs.items())}}
        if not request["args"]:
            del request["args"]
        exchange = Exchange(name, request)
        recorder.add(exchange)
        try:
            result = target(*args, **kwargs)
        except Exception as exc:
            exchange.error = f"{type(exc).__name__}: {exc}"
            raise
        response = as_data(result)
        if isinstance(response, dict) and args and response.get("argv") == as_data(args[0]):
            del response["argv"]  # a command's result repeats its command line
        exchange.response = response
        return result
    return call


def as_data(value: Any) -> Any:
    """A JSON value for ``value``: bytes as text (or their size and digest), dataclasses as
    their fields, objects that cannot be shown (a bindings handle) as their type's name."""
    if value is None or isinstance(value, bool):
        return value
    for plain in (int, float, str):  # an IntEnum or a str subclass as its plain value
        if isinstance(value, plain):
            return plain(value)
    if isinstance(value, bytes | bytearray):
        return _bytes(bytes(value))
    if isinstance(value, PurePath):
        return str(value)
    if isinstance(value, Mapping):
        return {str(k): as_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        items = [as_data(v) for v in value]
        return sorted(items, key=repr) if isinstance(value, set | frozenset) else items
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: as_data(getattr(value, f.name)) for f in dataclasses.fields(value)
                if f.name != "native"}
    return f"<{type(value).__name__}>"


def _bytes(data: bytes) -> str:
    if len(data) <= TEXT_LIMIT:
        try:
            return data.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return f"<{len(data)} bytes sha256:{hashlib.sha256(data).hexdigest()[:16]}>"
