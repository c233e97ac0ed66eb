"""The seam between the Kubernetes driver and an API server: real (lightkube) or the double.

Objects cross it as plain JSON-like dicts, exactly as the API server serialises them, so the
double and the real server answer in one shape. Whole-call failures (server unreachable, 5xx)
raise :class:`~pytest_stacks.errors.BackendCallError`; answers the server gives about one
object (404 on delete, 409, 422) raise :class:`ApiError` or are values (``None``/``False``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Protocol, runtime_checkable

Obj = dict[str, Any]
Objs = list[Obj]  # an alias: inside KubeApi, `list` names the method

LABEL_RUN = "pytest-stacks.io/run"
LABEL_JOB = "pytest-stacks.io/job"
ANNOTATION_EXIT_CODE = "pytest-stacks.io/exit-code"
ANNOTATION_MESSAGE = "pytest-stacks.io/message"
ANNOTATION_RUNNING = "pytest-stacks.io/keep-running"

# kwok's fake nodes: selected by label, tainted so that real workloads stay off them.
KWOK_NODE_SELECTOR = {"type": "kwok"}
KWOK_TOLERATION = {"key": "kwok.x-k8s.io/node", "operator": "Exists", "effect": "NoSchedule"}

# What the MPI Operator (v2beta1) labels its pods with, and the Job controller's label.
MPI_JOB_NAME_LABEL = "training.kubeflow.org/job-name"
MPI_ROLE_LABEL = "training.kubeflow.org/job-role"
MPI_INDEX_LABEL = "training.kubeflow.org/replica-index"
JOB_NAME_LABEL = "job-name"


class ApiError(Exception):
    """The API server's answer about one request: HTTP ``status``, ``reason``, ``message``."""

    def __init__(self, status: int, reason: str, message: str) -> None:
        self.status = status
        self.reason = reason
        self.message = message
        super().__init__(f"{status} {reason}: {message}")


@dataclass(frozen=True)
class Resource:
    group: str
    version: str
    plural: str
    namespaced: bool

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version


# The one table of kinds this backend touches.
RESOURCES: dict[str, Resource] = {
    "Namespace": Resource("", "v1", "namespaces", False),
    "Node": Resource("", "v1", "nodes", False),
    "Pod": Resource("", "v1", "pods", True),
    "Service": Resource("", "v1", "services", True),
    "ConfigMap": Resource("", "v1", "configmaps", True),
    "Secret": Resource("", "v1", "secrets", True),
    "Event": Resource("", "v1", "events", True),
    "ServiceAccount": Resource("", "v1", "serviceaccounts", True),
    "Job": Resource("batch", "v1", "jobs", True),
    "MPIJob": Resource("kubeflow.org", "v2beta1", "mpijobs", True),
    "Lease": Resource("coordination.k8s.io", "v1", "leases", True),
    "CustomResourceDefinition": Resource("apiextensions.k8s.io", "v1",
                                         "customresourcedefinitions", False),
}

# Kinds a run creates in its namespace, directly or through controllers: what cleanup lists.
RUN_KINDS = ("Pod", "Job", "MPIJob", "Service", "ConfigMap", "Secret")


def resource(kind: str) -> Resource:
    try:
        return RESOURCES[kind]
    except KeyError:
        raise ApiError(404, "NotFound", f"the server does not know kind {kind!r}") from None


def path(kind: str, namespace: str | None = None, name: str | None = None) -> str:
    """The REST path of a collection (``name`` None) or of one object. A namespaced
    collection without a namespace is the list across all namespaces."""
    res = resource(kind)
    parts = ["api", res.version] if not res.group else ["apis", res.group, res.version]
    if res.namespaced and namespace:
        parts += ["namespaces", namespace]
    elif res.namespaced and name is not None:
        raise ValueError(f"{kind} is namespaced: a namespace is required")
    parts.append(res.plural)
    if name is not None:
        parts.append(name)
    return "/" + "/".join(parts)


def label_selector(labels: Mapping[str, str] | None) -> str:
    return ",".join(f"{k}={v}" for k, v in sorted((labels or {}).items()))


def now_rfc3339() -> str:
    """A Time as the API server writes it: UTC, whole seconds, ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def now_micro() -> str:
    """A MicroTime (Lease renewTime, Event eventTime): UTC with microseconds, ``Z``."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_time(value: str | None) -> datetime | None:
    """A Time or MicroTime as a timezone-aware datetime, or None when absent or malformed."""
    if not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None


def meta(obj: Mapping[str, Any]) -> Obj:
    """``obj.metadata`` (an empty dict when missing)."""
    value = obj.get("metadata")
    return value if isinstance(value, dict) else {}


def annotation_true(value: str | None) -> bool:
    return (value or "").strip().lower() == "true"


@runtime_checkable
class KubeApi(Protocol):
    """What the driver needs from an API server. Objects are plain dicts."""

    def create(self, obj: Obj) -> Obj:
        """Store ``obj``; return it as stored (uid, creationTimestamp, resourceVersion set).

        409 ApiError if it exists; 404 if its namespace does not; 422 if invalid."""
        ...

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        """The object, or None when 404."""
        ...

    def list(self, kind: str, namespace: str | None = None,
             labels: Mapping[str, str] | None = None) -> Objs:
        """Objects of ``kind`` (in ``namespace``, or everywhere when None) matching ``labels``."""
        ...

    def delete(self, kind: str, namespace: str | None, name: str, *,
               propagation: str = "Foreground", uid: str | None = None) -> bool:
        """Start deleting; False when 404. ``uid`` is a precondition (409 ApiError if it
        differs)."""
        ...

    def events(self, namespace: str, involved_name: str) -> Objs:
        """Events whose involvedObject has this name, oldest first."""
        ...

    def logs(self, namespace: str, pod: str, limit_bytes: int = 65536, *,
             container: str = "") -> str:
        """The log of the pod (of its ``container``, where it has several), at most
        ``limit_bytes``; "" when unavailable."""
        ...

    def version(self) -> Obj:
        """Like ``GET /version``: ``{"gitVersion": "v1.36.3", ...}``."""
        ...

    def close(self) -> None: ...
