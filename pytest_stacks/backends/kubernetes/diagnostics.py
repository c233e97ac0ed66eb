"""What a failure report shows of a Kubernetes job: its object as the API server holds it, its
launcher pod, and the events about both."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, Protocol

from pytest_stacks.backends.kubernetes.api import KubeApi, Obj, meta
from pytest_stacks.contract import JobHandle


class Submitted(Protocol):
    """The driver's record of a job it submitted."""

    name: str
    kind: str
    uid: str


def describe(api: KubeApi, namespace: str, rec: Submitted | None, handle: JobHandle,
             launcher_pod: Callable[[str], Obj | None]) -> str:
    if rec is None:
        return f"== {handle.job_id}: not submitted by this client"
    lines = [f"== {rec.kind} {namespace}/{rec.name} (submitted uid {rec.uid})"]
    obj = api.get(rec.kind, namespace, rec.name)
    launcher = launcher_pod(rec.name) if rec.kind == "MPIJob" else None
    lines.append(dump(obj) if obj is not None else "(object gone)")
    if launcher is not None:
        lines.append(f"-- launcher pod\n{dump(launcher)}")
    for name in [rec.name, *([meta(launcher)["name"]] if launcher else [])]:
        for event in api.events(namespace, name):
            lines.append(f"event {name}: {event.get('type')} {event.get('reason')}: "
                         f"{event.get('message')} (x{event.get('count', 1)})")
    return "\n".join(lines)


def dump(obj: Obj) -> str:
    shown: dict[str, Any] = {k: v for k, v in obj.items() if k != "metadata"}
    shown["metadata"] = {k: v for k, v in meta(obj).items() if k != "managedFields"}
    return json.dumps(shown, indent=1, sort_keys=True, default=str)[:8000]
