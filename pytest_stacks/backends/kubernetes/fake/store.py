"""The double's storage: an API server's object store and its garbage collector.

It models what clients can observe of real API semantics: uid (uuid4), resourceVersion,
creationTimestamp, namespaces that must exist before their content (and that refuse new
content while terminating), 409 on duplicates and failed uid preconditions, 422 on names the
server would refuse, ownerReferences, foreground deletion (dependents are deleted before the
owner disappears), background deletion with garbage collection of orphans, orphan propagation,
graceful pod deletion (finished by kwok on the next step) and namespace deletion.
"""

from __future__ import annotations

import contextlib
import copy
import itertools
import re
import threading
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

from pytest_stacks.backends.kubernetes.api import (
    RESOURCES,
    ApiError,
    Obj,
    Objs,
    meta,
    now_rfc3339,
    resource,
)

Key = tuple[str, str, str]  # kind, namespace ("" for cluster-scoped), name
FOREGROUND = "foregroundDeletion"
PROPAGATIONS = ("Foreground", "Background", "Orphan")
SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
LABEL_1035 = re.compile(r"^[a-z]([-a-z0-9]*[a-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def key_of(obj: Obj) -> Key:
    m = meta(obj)
    return (str(obj.get("kind", "")), str(m.get("namespace") or ""), str(m.get("name", "")))


def owner_ref(owner: Obj) -> Obj:
    """A controller ownerReference to ``owner``, as the built-in controllers write it."""
    m = meta(owner)
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": m["name"],
            "uid": m["uid"], "controller": True, "blockOwnerDeletion": True}


def _invalid(kind: str, name: str, why: str) -> ApiError:
    return ApiError(422, "Invalid", f'{kind} "{name}" is invalid: {why}')


def _validate(obj: Obj) -> None:
    kind = str(obj.get("kind", ""))
    res = resource(kind)
    if obj.get("apiVersion") != res.api_version:
        raise ApiError(400, "BadRequest", f"{kind} is served as {res.api_version}, "
                                          f"not {obj.get('apiVersion')!r}")
    m = meta(obj)
    name = str(m.get("name", ""))
    if not name:
        raise _invalid(kind, name, "metadata.name: Required value")
    short = kind in ("Namespace", "Service", "MPIJob")
    if not (LABEL_1035 if short else SUBDOMAIN).match(name) or len(name) > (63 if short else 253):
        raise _invalid(kind, name, f"metadata.name: Invalid value: {name!r}")
    for label, value in (m.get("labels") or {}).items():
        if not isinstance(value, str) or len(value) > 63 or not LABEL_VALUE.match(value):
            raise _invalid(kind, name, f"metadata.labels: Invalid value: {label}={value!r}")
    if kind == "Pod":
        containers = (obj.get("spec") or {}).get("containers") or []
        if not containers or not all(c.get("name") and c.get("image") for c in containers):
            raise _invalid(kind, name, "spec.containers: Required value (name and image)")
    if kind in ("MPIJob", "Job") and not isinstance(obj.get("spec"), dict):
        raise _invalid(kind, name, "spec: Required value")


class Store:
    """Objects by (kind, namespace, name). Callers hold :attr:`lock` for compound steps."""

    def __init__(self) -> None:
        self.lock = threading.RLock()
        self._objects: dict[Key, Obj] = {}
        self._rv = itertools.count(1)

    # ------------------------------------------------------------ reads

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        resource(kind)
        with self.lock:
            return self._objects.get((kind, namespace or "", name))

    def list(self, kind: str, namespace: str | None = None,
             labels: Mapping[str, str] | None = None) -> Objs:
        resource(kind)
        with self.lock:
            found = [o for (k, ns, _), o in self._objects.items()
                     if k == kind and (namespace is None or ns == namespace)]
        wanted = dict(labels or {})
        return [o for o in found
                if all((meta(o).get("labels") or {}).get(k) == v for k, v in wanted.items())]

    def all(self) -> Iterator[Obj]:
        with self.lock:
            yield from list(self._objects.values())

    def uids(self) -> set[str]:
        with self.lock:
            return {str(meta(o).get("uid")) for o in self._objects.values()}

    def dependents(self, uid: str) -> Objs:
        return [o for o in self.all()
                if any(r.get("uid") == uid for r in meta(o).get("ownerReferences") or [])]

    # ------------------------------------------------------------ writes

    def create(self, obj: Obj) -> Obj:
        obj = copy.deepcopy(obj)
        _validate(obj)
        key = key_of(obj)
        with self.lock:
            if RESOURCES[key[0]].namespaced:
                self._check_namespace(key)
            elif key[1]:
                meta(obj).pop("namespace", None)
                key = (key[0], "", key[2])
            if key in self._objects:
                raise ApiError(409, "AlreadyExists",
                               f'{RESOURCES[key[0]].plural} "{key[2]}" already exists')
            if key[0] == "Pod" and ("ServiceAccount", key[1], "default") not in self._objects:
                # As the real admission does, until the controller made the namespace's
                # default ServiceAccount (seen on 1.36.3: the first pod of a new namespace).
                raise ApiError(403, "Forbidden", f'pods "{key[2]}" is forbidden: error looking '
                               f'up service account {key[1]}/default: serviceaccount '
                               f'"default" not found')
            m = obj["metadata"]
            for container in (obj.get("spec") or {}).get("containers") or []:
                if container.get("env") == []:
                    del container["env"]  # omitempty: the server never shows an empty env
            m.update(uid=str(uuid.uuid4()), creationTimestamp=now_rfc3339(), generation=1,
                     resourceVersion=str(next(self._rv)))
            obj.setdefault("status", {})
            if key[0] == "Namespace":
                obj["status"] = {"phase": "Active"}
            elif key[0] == "Pod":
                obj["status"] = {"phase": "Pending", "qosClass": _qos_class(obj)}
            self._objects[key] = obj
            return obj

    def _check_namespace(self, key: Key) -> None:
        kind, namespace, _ = key
        if not namespace:
            raise ApiError(400, "BadRequest", f"{kind} is namespaced: metadata.namespace "
                                              "is required")
        ns = self._objects.get(("Namespace", "", namespace))
        if ns is None:
            raise ApiError(404, "NotFound", f'namespaces "{namespace}" not found')
        if meta(ns).get("deletionTimestamp"):
            raise ApiError(403, "Forbidden", f"unable to create new content in namespace "
                                             f"{namespace} because it is being terminated")

    def touch(self, obj: Obj) -> None:
        """Record a change made in place to a stored object (a new resourceVersion)."""
        with self.lock:
            meta(obj)["resourceVersion"] = str(next(self._rv))

    def _remove(self, obj: Obj) -> None:
        with self.lock:
            self._objects.pop(key_of(obj), None)

    # ------------------------------------------------------------ deletion

    def delete(self, kind: str, namespace: str | None, name: str, *,
               propagation: str = "Background", uid: str | None = None) -> bool:
        if propagation not in PROPAGATIONS:
            raise ApiError(400, "BadRequest", f"propagationPolicy {propagation!r} is not one "
                                              f"of {PROPAGATIONS}")
        with self.lock:
            obj = self.get(kind, namespace, name)
            if obj is None:
                return False
            m = meta(obj)
            if uid is not None and uid != m.get("uid"):
                raise ApiError(409, "Conflict", f"Precondition failed: UID in precondition: "
                                                f"{uid}, UID in object meta: {m.get('uid')}")
            if m.get("deletionTimestamp"):
                return True
            self._start_deletion(obj, propagation)
            return True

    def _start_deletion(self, obj: Obj, propagation: str) -> None:
        m = meta(obj)
        kind = obj["kind"]
        if kind == "Pod" and not m.get("finalizers") and not self.dependents(str(m["uid"])):
            # Seen on 1.36.3 with kwok (tests/parity): a pod with nothing depending on it,
            # finished or running on a kwok node, is gone by the next GET after its DELETE.
            self._remove(obj)
            return
        if propagation == "Orphan":
            for dep in self.dependents(str(m["uid"])):
                refs = meta(dep).get("ownerReferences") or []
                meta(dep)["ownerReferences"] = [r for r in refs if r.get("uid") != m["uid"]]
                self.touch(dep)
        if kind in ("Namespace", "Pod") or propagation == "Foreground" or m.get("finalizers"):
            m["deletionTimestamp"] = now_rfc3339()
            m["deletionGracePeriodSeconds"] = 0
            if propagation == "Foreground":
                m["finalizers"] = [*(m.get("finalizers") or []), FOREGROUND]
            if kind == "Namespace":
                obj["status"]["phase"] = "Terminating"
            self.touch(obj)
        else:
            self._remove(obj)

    def collect(self) -> None:
        """One pass of the garbage collector and namespace controller."""
        with self.lock:
            for obj in list(self.all()):
                if meta(obj).get("deletionTimestamp"):
                    self._finish_deletion(obj)
            live = self.uids()
            for obj in list(self.all()):
                refs = meta(obj).get("ownerReferences") or []
                if refs and not any(r.get("uid") in live for r in refs):
                    self.delete(obj["kind"], meta(obj).get("namespace"), meta(obj)["name"],
                                propagation="Background")

    def _finish_deletion(self, obj: Obj) -> None:
        m = meta(obj)
        if obj["kind"] == "Namespace":
            content = [o for o in self.all() if meta(o).get("namespace") == m["name"]]
            for child in content:
                self.delete(child["kind"], m["name"], meta(child)["name"],
                            propagation="Background")
            if not content:
                self._remove(obj)
            return
        if FOREGROUND in (m.get("finalizers") or []):
            deps = self.dependents(str(m["uid"]))
            for dep in deps:
                self.delete(dep["kind"], meta(dep).get("namespace"), meta(dep)["name"],
                            propagation="Foreground")
            if deps:
                return
            m["finalizers"] = [f for f in m["finalizers"] if f != FOREGROUND]
            self.touch(obj)
        if not m.get("finalizers"):
            self._remove(obj)

    # ------------------------------------------------------------ events

    def record_event(self, involved: Obj, type_: str, reason: str, message: str,
                     component: str) -> None:
        """An Event about ``involved``; repeats of the same one raise its count."""
        m = meta(involved)
        namespace = str(m.get("namespace") or "default")
        with self.lock:
            for event in self.list("Event", namespace):
                inv = event.get("involvedObject") or {}
                if (inv.get("uid"), event.get("reason"), event.get("message")) == (
                        m.get("uid"), reason, message):
                    event["count"] = int(event.get("count", 1)) + 1
                    event["lastTimestamp"] = now_rfc3339()
                    self.touch(event)
                    return
            # In a namespace gone or terminating the event is lost, as for real.
            with contextlib.suppress(ApiError):
                self.create(_event(involved, namespace, type_, reason, message, component))


def _event(involved: Obj, namespace: str, type_: str, reason: str, message: str,
           component: str) -> dict[str, Any]:
    m = meta(involved)
    stamp = now_rfc3339()
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{m['name']}.{uuid.uuid4().hex[:16]}", "namespace": namespace},
        "involvedObject": {"apiVersion": involved.get("apiVersion"), "kind": involved["kind"],
                           "name": m["name"], "namespace": namespace, "uid": m.get("uid")},
        "type": type_, "reason": reason, "message": message, "count": 1,
        "firstTimestamp": stamp, "lastTimestamp": stamp, "source": {"component": component},
    }


def _qos_class(pod: Obj) -> str:
    """The pod's QoS class as the API server sets it at creation (requests and limits)."""
    containers = (pod.get("spec") or {}).get("containers") or []
    resources = [c.get("resources") or {} for c in containers]
    if not any(r.get("requests") or r.get("limits") for r in resources):
        return "BestEffort"
    if all(r.get("limits") and (r.get("requests") or r["limits"]) == r["limits"]
           for r in resources):
        return "Guaranteed"
    return "Burstable"
