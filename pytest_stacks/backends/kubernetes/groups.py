"""A fail-closed verdict over a group of participants (one job each).

``pass`` only with exact coverage: the expected number (at least one) of distinct
participants, one result each, every one Succeeded (COMPLETED, exit 0) with a completion time,
the operator's and the Job controller's objects all present and correctly owned, every worker
pod an MPIJob asked for observed, and no identity changed since it was first observed.
``infra`` when the answer cannot be trusted either way: the API server is unreachable or
failing, the operator's leader lease is not held, a node is NotReady or a participant's pod was
evicted. Anything else is ``fail``, with every reason listed.

On a stack whose pods do not execute (kwok, the double) the participants' outcomes are what
the simulation was told to report: a group that would pass there is ``simulated``, never a
plain ``pass``, because nothing ran.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pytest_stacks.backends.kubernetes.api import LABEL_JOB, LABEL_RUN, ApiError, meta, parse_time
from pytest_stacks.backends.kubernetes.driver import KubernetesClient
from pytest_stacks.backends.kubernetes.identities import (
    OPERATOR_OBJECTS,
    ROLE_JOB,
    ROLE_LAUNCHER_POD,
    ROLE_WORKER,
    Identity,
    check_ownership,
)
from pytest_stacks.contract import JobHandle, JobState
from pytest_stacks.errors import BackendCallError

PASS, FAIL, INFRA, SIMULATED = "pass", "fail", "infra", "simulated"
MPI_ROLES = (*OPERATOR_OBJECTS, ROLE_LAUNCHER_POD)


@dataclass(frozen=True)
class GroupVerdict:
    outcome: str  # "pass" | "fail" | "infra" | "simulated" (exact coverage, nothing executed)
    reasons: tuple[str, ...] = ()

    @property
    def passed(self) -> bool:
        """Only a real pass: a simulated group proved coverage, not that anything ran."""
        return self.outcome == PASS

    def __str__(self) -> str:
        return f"{self.outcome}: " + ("; ".join(self.reasons) or "exact coverage")


def verify_group(client: KubernetesClient, handles: Sequence[JobHandle], *, expected: int,
                 lease_namespace: str | None = "mpi-operator", lease_name: str = "mpi-operator",
                 lease_max_age: float = 60.0) -> GroupVerdict:
    """The group's verdict; ``lease_namespace=None`` skips the operator lease check."""
    try:
        infra = infrastructure_problems(client, handles, lease_namespace, lease_name,
                                        lease_max_age)
        if infra:
            return GroupVerdict(INFRA, tuple(infra))
        failures = coverage_problems(client, handles, expected)
    except (BackendCallError, ApiError) as exc:
        return GroupVerdict(INFRA, (f"the API server did not answer: {exc}",))
    if failures:
        return GroupVerdict(FAIL, tuple(failures))
    if not client.runtime.real:
        return GroupVerdict(SIMULATED, ("exact coverage, but the pods did not execute: their "
                                        "outcomes are the simulation's",))
    return GroupVerdict(PASS)


def lease_problems(client: KubernetesClient, namespace: str, name: str,
                   max_age: float) -> list[str]:
    lease = client.api.get("Lease", namespace, name)
    if lease is None:
        return [f"operator lease {namespace}/{name} does not exist"]
    spec = lease.get("spec") or {}
    if not spec.get("holderIdentity"):
        return [f"operator lease {namespace}/{name} is not held"]
    renewed = parse_time(spec.get("renewTime"))
    if renewed is None:
        return [f"operator lease {namespace}/{name} was never renewed"]
    age = (datetime.now(UTC) - renewed).total_seconds()
    if age > max_age:
        return [f"operator lease {namespace}/{name} held by {spec['holderIdentity']} was last "
                f"renewed {age:.1f}s ago (more than {max_age:g}s)"]
    return []


def infrastructure_problems(client: KubernetesClient, handles: Sequence[JobHandle],
                            lease_namespace: str | None, lease_name: str,
                            lease_max_age: float) -> list[str]:
    problems = []
    if lease_namespace is not None:
        problems += lease_problems(client, lease_namespace, lease_name, lease_max_age)
    nodes = client.api.list("Node")
    if not nodes:
        problems.append("the cluster has no nodes")
    for node in nodes:
        ready = [c for c in (node.get("status") or {}).get("conditions") or []
                 if c.get("type") == "Ready"]
        if not ready or ready[0].get("status") != "True":
            why = f"{ready[0].get('reason')}: {ready[0].get('message')}" if ready else "no status"
            problems.append(f"node {meta(node).get('name')} is NotReady ({why})")
    ids = {h.job_id for h in handles}
    for pod in client.api.list("Pod", client.namespace, {LABEL_RUN: client.run_id}):
        status = pod.get("status") or {}
        if (meta(pod).get("labels") or {}).get(LABEL_JOB) in ids and \
                status.get("reason") == "Evicted":
            problems.append(f"pod {meta(pod).get('name')} was evicted: {status.get('message')}")
    return problems


def _missing_roles(client: KubernetesClient, handles: Sequence[JobHandle],
                   found: Sequence[Identity]) -> list[str]:
    problems = []
    for handle in handles:
        mine = [i for i in found if i.job == handle.job_id]
        roots = [i for i in mine if i.role == ROLE_JOB]
        if not roots:
            problems.append(f"{handle.job_id}: its object was not observed")
        elif roots[0].kind == "MPIJob":
            have = {i.role for i in mine}
            problems += [f"{handle.job_id}: no {role} object observed"
                         for role in MPI_ROLES if role not in have]
            problems += _worker_problems(client, handle, mine)
    return problems


def _worker_problems(client: KubernetesClient, handle: JobHandle,
                     mine: Sequence[Identity]) -> list[str]:
    """Every worker the MPIJob asked for is observed (and it asked for at least one): a
    participant whose ranks had nowhere to run is not covered."""
    job = client.api.get("MPIJob", client.namespace, handle.job_id)
    specs = ((job or {}).get("spec") or {}).get("mpiReplicaSpecs") or {}
    wanted = int((specs.get("Worker") or {}).get("replicas") or 0)
    seen = len([i for i in mine if i.role == ROLE_WORKER])
    if wanted < 1:
        return [f"{handle.job_id}: the MPIJob asks for {wanted} workers; a participant needs "
                f"at least one"]
    if seen != wanted:
        return [f"{handle.job_id}: {seen} worker pod(s) observed, the MPIJob asks for {wanted}"]
    return []


def coverage_problems(client: KubernetesClient, handles: Sequence[JobHandle],
                      expected: int) -> list[str]:
    problems = []
    if expected < 1 or not handles:
        problems.append("a group needs at least one participant")
    if len(handles) != expected:
        problems.append(f"{expected} participants expected, {len(handles)} given")
    if len({h.job_id for h in handles}) != len(handles):
        problems.append("a participant is listed more than once")
    statuses = client.status(handles)
    if len(statuses) != len(handles):
        problems.append(f"{len(statuses)} results for {len(handles)} participants")
    for st in statuses:
        if st.state is not JobState.COMPLETED or st.exit_code != 0:
            problems.append(f"{st.handle.job_id}: {st.state} ({st.native_state}) exit "
                            f"{st.exit_code} {st.reason}".rstrip())
    for handle, when in zip(handles, client.completion_times(handles), strict=True):
        if not when:
            problems.append(f"{handle.job_id}: no completion time")
    found = client.identities(handles)
    problems += _missing_roles(client, handles, found)
    problems += check_ownership(found, client.recorded_identities())
    return problems
