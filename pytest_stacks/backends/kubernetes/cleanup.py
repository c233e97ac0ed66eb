"""Proof that a run left nothing behind, and reaping of the namespaces of runs that died.

A run's objects live in namespaces labelled ``pytest-stacks.io/run=<run id>``. After deletion
every recorded uid must be gone (404, or the name now holds an object with another uid) and a
label-selected list across the kinds a run creates must be empty. A namespace whose run is no
longer alive is deleted (foreground) and a tombstone, one JSON line, records what went.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Mapping
from datetime import UTC, datetime
from pathlib import Path

from pytest_stacks.backends.kubernetes.api import (
    LABEL_RUN,
    RUN_KINDS,
    KubeApi,
    label_selector,
    meta,
)
from pytest_stacks.backends.kubernetes.identities import Identity
from pytest_stacks.polling import poll_until


def cleanup_problems(api: KubeApi, identities: Iterable[Identity], namespace: str,
                     labels: Mapping[str, str]) -> list[str]:
    problems = []
    for ident in identities:
        obj = api.get(ident.kind, ident.namespace or None, ident.name)
        if obj is not None and meta(obj).get("uid") == ident.uid:
            deleting = " (being deleted)" if meta(obj).get("deletionTimestamp") else ""
            problems.append(f"{ident} still exists{deleting}")
    selector = label_selector(labels)
    for kind in RUN_KINDS:
        for obj in api.list(kind, namespace, labels):
            m = meta(obj)
            problems.append(f"{kind} {namespace}/{m.get('name')} (uid {m.get('uid')}) is left, "
                            f"selected by {selector}")
    return problems


def prove_cleanup(api: KubeApi, identities: Iterable[Identity], namespace: str,
                  labels: Mapping[str, str], *, timeout: float = 0.0) -> list[str]:
    """Problems left after deletion ([] = proven clean). With ``timeout``, wait that long for
    the garbage collector to finish before answering."""
    recorded = list(identities)
    if timeout <= 0:
        return cleanup_problems(api, recorded, namespace, labels)
    try:
        return poll_until(lambda: cleanup_problems(api, recorded, namespace, labels),
                          lambda problems: not problems, timeout=timeout, interval=0.25,
                          first_interval=0.02)
    except TimeoutError:
        return cleanup_problems(api, recorded, namespace, labels)


def delete_namespace(api: KubeApi, namespace: str, run_id: str, recorded: list[Identity], *,
                     timeout: float) -> list[str]:
    """Delete a run's namespace (foreground: the namespace controller deletes everything in
    it first) and prove it gone, with every recorded object; what is left, one line each."""
    found = api.get("Namespace", None, namespace)
    if found is not None:
        uid = str(meta(found).get("uid"))
        recorded = [*recorded, Identity("Namespace", "", namespace, uid)]
        if not meta(found).get("deletionTimestamp"):
            api.delete("Namespace", None, namespace, propagation="Foreground", uid=uid)
    return prove_cleanup(api, recorded, namespace, {LABEL_RUN: run_id}, timeout=timeout)


#: Deletion order for a run's objects in a namespace it does not own: owners first (their
#: dependents go with them, foreground), then whatever is left by label.
DELETE_ORDER = ("MPIJob", "Job", "Pod", "Service", "Secret", "ConfigMap")


def delete_labelled(api: KubeApi, namespace: str, run_id: str, recorded: list[Identity], *,
                    timeout: float) -> list[str]:
    """Delete every object of the run in a shared namespace (selected by its run label, each
    by uid, foreground) and prove them gone with every recorded one; the namespace and anything
    without the run's label are never touched."""
    labels = {LABEL_RUN: run_id}
    for kind in DELETE_ORDER:
        for obj in api.list(kind, namespace, labels):
            m = meta(obj)
            if not m.get("deletionTimestamp"):
                api.delete(kind, namespace, str(m.get("name")), propagation="Foreground",
                           uid=str(m.get("uid")))
    return prove_cleanup(api, recorded, namespace, labels, timeout=timeout)


def _contents(api: KubeApi, namespace: str) -> dict[str, str]:
    return {f"{kind}/{meta(o).get('name')}": str(meta(o).get("uid"))
            for kind in RUN_KINDS for o in api.list(kind, namespace)}


def reap(api: KubeApi, is_alive: Callable[[str], bool], tombstones: Path) -> list[str]:
    """Delete the namespaces of runs that are not alive; return their names.

    A live run's namespace is never touched; one already being deleted is left to finish.
    Each deletion appends ``{what, namespace, run, uids, when, why}`` to ``tombstones``.
    """
    reaped = []
    for ns in api.list("Namespace", None, None):
        m = meta(ns)
        run = (m.get("labels") or {}).get(LABEL_RUN)
        if not run or m.get("deletionTimestamp") or is_alive(run):
            continue
        name, uid = str(m["name"]), str(m.get("uid"))
        uids = {f"Namespace/{name}": uid, **_contents(api, name)}
        if not api.delete("Namespace", None, name, propagation="Foreground", uid=uid):
            continue
        stone = {"what": "Namespace", "namespace": name, "run": run, "uids": uids,
                 "when": datetime.now(UTC).isoformat(timespec="seconds"),
                 "why": f"run {run} is not alive"}
        tombstones.parent.mkdir(parents=True, exist_ok=True)
        with tombstones.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(stone, sort_keys=True) + "\n")
        reaped.append(name)
    return reaped
