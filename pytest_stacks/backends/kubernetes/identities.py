"""API-assigned identities and the MPI Operator's ownership chain.

An :class:`Identity` is one object as observed: kind, namespace, name, ``metadata.uid`` and the
uid of its controlling owner. ``role`` says what the object is for the job (``job`` for what the
driver created; ``worker``, ``launcher-job``, ``launcher-pod``, ``service``, ``config``,
``secret`` for what the operator and the Job controller made from an MPIJob).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from pytest_stacks.backends.kubernetes.api import (
    JOB_NAME_LABEL,
    MPI_JOB_NAME_LABEL,
    MPI_ROLE_LABEL,
    KubeApi,
    meta,
)

ROLE_JOB = "job"
ROLE_WORKER = "worker"
ROLE_LAUNCHER_JOB = "launcher-job"
ROLE_LAUNCHER_POD = "launcher-pod"
ROLE_SERVICE = "service"
ROLE_CONFIG = "config"
ROLE_SECRET = "secret"

# role -> (kind, name suffix appended to the MPIJob's name); workers and the launcher pod are
# found by label, not by name.
OPERATOR_OBJECTS = {
    ROLE_SERVICE: ("Service", ""),
    ROLE_CONFIG: ("ConfigMap", "-config"),
    ROLE_SECRET: ("Secret", "-ssh"),
    ROLE_LAUNCHER_JOB: ("Job", "-launcher"),
}


@dataclass(frozen=True)
class Identity:
    kind: str
    namespace: str
    name: str
    uid: str
    owner_uid: str = ""
    role: str = ROLE_JOB
    job: str = ""  # the driver's job (handle job_id) this object belongs to

    @property
    def key(self) -> tuple[str, str, str]:
        return (self.kind, self.namespace, self.name)

    def __str__(self) -> str:
        return f"{self.kind} {self.namespace}/{self.name} (uid {self.uid or '?'})"


def owner_uid(obj: Mapping[str, Any]) -> str:
    """The controlling owner's uid (the first ownerReference when none is marked controller)."""
    refs = [r for r in meta(obj).get("ownerReferences") or [] if isinstance(r, dict)]
    controlling = [r for r in refs if r.get("controller")] or refs
    return str(controlling[0].get("uid", "")) if controlling else ""


def identity_of(obj: Mapping[str, Any], *, role: str = ROLE_JOB, job: str = "") -> Identity:
    m = meta(obj)
    return Identity(str(obj.get("kind", "")), str(m.get("namespace", "")), str(m.get("name", "")),
                    str(m.get("uid", "")), owner_uid(obj), role, job)


def _expect_owner(ident: Identity, owner: Identity | None, what: str) -> list[str]:
    if owner is None:
        return [f"{ident}: its {what} was not observed"]
    if not ident.owner_uid:
        return [f"{ident}: no ownerReference; expected {owner}"]
    if ident.owner_uid != owner.uid:
        return [f"{ident}: owned by uid {ident.owner_uid}, expected {owner}"]
    return []


def _check_job(job: str, members: Sequence[Identity]) -> list[str]:
    roots = [i for i in members if i.role == ROLE_JOB]
    if len(roots) != 1:
        return [f"job {job}: {len(roots)} objects created by the driver, expected 1"]
    root = roots[0]
    if root.kind != "MPIJob":
        return [f"{i}: unexpected {i.role} object of a {root.kind}" for i in members
                if i is not root]
    launcher_jobs = [i for i in members if i.role == ROLE_LAUNCHER_JOB]
    launcher_job = launcher_jobs[0] if len(launcher_jobs) == 1 else None
    problems = []
    for ident in members:
        if ident.role in (ROLE_WORKER, ROLE_SERVICE, ROLE_CONFIG, ROLE_SECRET,
                          ROLE_LAUNCHER_JOB):
            problems += _expect_owner(ident, root, "MPIJob")
        elif ident.role == ROLE_LAUNCHER_POD:
            problems += _expect_owner(ident, launcher_job, "launcher Job")
    return problems


def check_ownership(identities: Iterable[Identity],
                    earlier: Iterable[Identity] = ()) -> list[str]:
    """Problems with the ownership chain, and UIDs that changed since ``earlier``.

    Chain: worker Pod -> MPIJob; launcher Pod -> Job -> MPIJob; Service/ConfigMap/Secret ->
    MPIJob. An object whose (kind, namespace, name) was seen before with another uid was
    deleted and recreated behind the harness's back: that is a problem too.
    """
    current = list(identities)
    problems: list[str] = []
    by_job: dict[str, list[Identity]] = {}
    for ident in current:
        if not ident.uid:
            problems.append(f"{ident}: no uid")
        by_job.setdefault(ident.job, []).append(ident)
    for job, members in by_job.items():
        problems += _check_job(job, members)
    first = {i.key: i.uid for i in earlier}
    problems += [f"{i.kind} {i.namespace}/{i.name}: uid changed from {first[i.key]} to {i.uid}"
                 for i in current if i.key in first and first[i.key] != i.uid]
    return problems


def observe(api: KubeApi, namespace: str, kind: str, name: str) -> list[Identity]:
    """Every object of one job as the API server holds it now: the job's own object and, for
    an MPIJob, what the operator made for it (Service, ConfigMap, Secret, launcher Job, worker
    pods) and the launcher pod the Job controller made."""
    obj = api.get(kind, namespace, name)
    if obj is None:
        return []
    found = [identity_of(obj, role=ROLE_JOB, job=name)]
    if kind != "MPIJob":
        return found
    for role, (child_kind, suffix) in OPERATOR_OBJECTS.items():
        child = api.get(child_kind, namespace, name + suffix)
        if child is not None:
            found.append(identity_of(child, role=role, job=name))
    workers = api.list("Pod", namespace, {MPI_JOB_NAME_LABEL: name, MPI_ROLE_LABEL: "worker"})
    found += [identity_of(p, role=ROLE_WORKER, job=name) for p in workers]
    launchers = api.list("Pod", namespace, {JOB_NAME_LABEL: f"{name}-launcher"})
    found += [identity_of(p, role=ROLE_LAUNCHER_POD, job=name) for p in launchers]
    return found
