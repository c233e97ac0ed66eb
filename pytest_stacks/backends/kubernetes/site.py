"""A site's own Kubernetes cluster with the MPI Operator installed, reached by a kubeconfig
(provider ``existing``).

The preflight: the API server answers ``/version`` (in ``existing.kubernetes_versions``), the
credentials may list namespaces, the MPIJob CRD is Established and serves the version the
driver speaks, and the operator's own pods run one release (:mod:`.site_operator`: by their
labels and container, their image's tag checked against what the binary logs; checked by the
lifecycle against the manifest).
Each run gets a namespace of its own, labelled with its id and annotated with its owner record;
its end deletes that namespace and proves every object in it gone, then looks each job the
run's client made up by its name (:meth:`KubernetesSite.account_jobs`). A run never touches a
namespace without our run label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_stacks.backends.kubernetes import objects
from pytest_stacks.backends.kubernetes.adapter import client_for, run_namespace
from pytest_stacks.backends.kubernetes.api import (
    LABEL_RUN,
    ApiError,
    KubeApi,
    Obj,
    meta,
    resource,
)
from pytest_stacks.backends.kubernetes.cleanup import delete_labelled, delete_namespace
from pytest_stacks.backends.kubernetes.site_operator import operator_version
from pytest_stacks.backends.site_account import JobAccount
from pytest_stacks.contract import JobClient
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.manifest import Stack
from pytest_stacks.transports import Transport
from pytest_stacks.versions import in_range

CRD = "mpijobs.kubeflow.org"
OWNER_PREFIX = "pst-run-"
NAMESPACE = "namespace"
ANNOTATION_OWNER = "pytest-stacks.io/owner"
KUBECONFIG, CONTEXT = "kubeconfig", "context"
END_TIMEOUT = 120.0


def _api(endpoints: Mapping[str, str], timeout: float = 10.0) -> KubeApi:
    from pytest_stacks.backends.kubernetes.lightkube_api import LightkubeApi

    return LightkubeApi.from_kubeconfig(Path(endpoints[KUBECONFIG]), timeout,
                                        context=endpoints.get(CONTEXT) or None)


def _established(crd: Obj) -> bool:
    """Established, and serving the MPIJob version the driver speaks (an older operator
    release's CRD serves only v1 or v1alpha2)."""
    served = {str(v.get("name")) for v in (crd.get("spec") or {}).get("versions") or []
              if v.get("served")}
    return resource("MPIJob").version in served and any(
        c.get("type") == "Established" and c.get("status") == "True"
        for c in (crd.get("status") or {}).get("conditions") or [])


class KubernetesSite:
    """``endpoints["namespace"]`` set: the runs share that namespace (the user's), each run's
    objects and its owner record (a ConfigMap) found by the run label; else a namespace per
    run, annotated with the owner record."""

    def check(self, stack: Stack, transport: Transport | None,
              endpoints: Mapping[str, str]) -> dict[str, str]:
        api = _api(endpoints)
        try:
            return self._check(stack, api, endpoints.get(NAMESPACE, ""))
        except ApiError as exc:
            raise InfrastructureError(stack.name, (
                f"preflight 'authenticated': the API server refused the kubeconfig's "
                f"credentials ({exc}). Use credentials that may create "
                + ("pods and MPIJobs in that namespace." if endpoints.get(NAMESPACE) else
                   "namespaces and MPIJobs (or name a namespace: existing.namespace).")))\
                from None
        finally:
            api.close()

    def _check(self, stack: Stack, api: KubeApi, shared: str) -> dict[str, str]:
        kubernetes = str(api.version().get("gitVersion", "")).lstrip("v")
        wanted = stack.existing.kubernetes_versions if stack.existing else ""
        if wanted and not in_range(kubernetes, wanted):
            raise InfrastructureError(stack.name, (
                f"preflight 'version': the cluster runs Kubernetes {kubernetes}, outside "
                f"existing.kubernetes_versions {wanted!r}. Point the stack at a cluster in "
                f"range, or widen the range."))
        if shared:
            api.list("Pod", shared)  # 401/403: no use of that namespace
            crd_there = _mpijobs_served(api, shared)
        else:
            api.list("Namespace")  # 401/403 here: the credentials are not good enough
            crd = api.get("CustomResourceDefinition", None, CRD)
            crd_there = crd is not None and _established(crd)
        if not crd_there:
            raise InfrastructureError(stack.name, (
                f"preflight 'MPIJob CRD': {CRD} is missing, not Established or does not serve "
                f"{resource('MPIJob').api_version} on the cluster. Install an MPI Operator "
                f"release whose CRD serves it (its CRD and deployment) first."))
        version, seen = operator_version(api)
        if not version:
            raise InfrastructureError(stack.name, (
                f"preflight 'operator': cannot tell which MPI Operator the cluster runs "
                f"({seen}). Its ready pods (labelled app.kubernetes.io/name=mpi-operator, "
                f"container mpi-operator) must name one release, by their image's tag or by "
                f"the version their binary logs at its start."))
        if not stack.accepts_version(version):
            raise InfrastructureError(stack.name, (
                f"preflight 'version': the cluster runs MPI Operator {version} ({seen}), "
                f"outside {stack.allowed_versions}. Point the stack at a cluster in range, or "
                f"change existing.versions."))
        return {"kubernetes_version": kubernetes, "operator_version": version}

    def open_run(self, stack: Stack, transport: Transport | None,
                 endpoints: Mapping[str, str], run_id: str, owner_record: str) -> None:
        shared = endpoints.get(NAMESPACE, "")
        place: Obj
        if shared:
            name = OWNER_PREFIX + run_namespace(run_id).removeprefix("pst-")
            place = {"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": name[:63].rstrip("-"), "namespace": shared,
                                  "labels": {LABEL_RUN: run_id}}}
        else:
            place = objects.namespace(run_namespace(run_id), run_id)
        place["metadata"]["annotations"] = {ANNOTATION_OWNER: owner_record}
        api = _api(endpoints)
        try:
            api.create(place)
        finally:
            api.close()

    def client(self, stack: Stack, transport: Transport | None,
               endpoints: Mapping[str, str], run_dir: Path) -> JobClient:
        return client_for(stack, _api(endpoints, 30.0), run_dir,
                          endpoints.get("operator_version", ""),
                          shared_namespace=endpoints.get(NAMESPACE, ""))

    def runs(self, stack: Stack, transport: Transport | None,
             endpoints: Mapping[str, str]) -> dict[str, str]:
        shared = endpoints.get(NAMESPACE, "")
        api = _api(endpoints)
        try:
            found = {}
            places = (api.list("ConfigMap", shared) if shared else api.list("Namespace"))
            for place in places:
                m = meta(place)
                run = (m.get("labels") or {}).get(LABEL_RUN)
                ours = (str(m.get("name", "")).startswith(OWNER_PREFIX) if shared
                        else m.get("name") == run_namespace(run or ""))
                record = (m.get("annotations") or {}).get(ANNOTATION_OWNER)
                # A run namespace without an owner record is a stack's own run's (a kind or
                # compose run made it), not a site run's: not this provider's to judge.
                if run and ours and record is not None:
                    found[run] = str(record)
            return found
        finally:
            api.close()

    def remove_run(self, stack: Stack, transport: Transport | None,
                   endpoints: Mapping[str, str], run_id: str) -> list[str]:
        shared = endpoints.get(NAMESPACE, "")
        api = _api(endpoints, 30.0)
        try:
            if shared:
                return delete_labelled(api, shared, run_id, [], timeout=END_TIMEOUT)
            return delete_namespace(api, run_namespace(run_id), run_id, [],
                                    timeout=END_TIMEOUT)
        finally:
            api.close()

    def account_jobs(self, stack: Stack, transport: Transport | None,
                     endpoints: Mapping[str, str], run_id: str,
                     job_ids: Sequence[str]) -> JobAccount:
        """Each id is the name of a Pod or an MPIJob the run's client made in the run's
        namespace (or the shared one): looked up by that name there after the run's end, so
        an object whose run label was changed (an admission policy) is found all the same."""
        namespace = endpoints.get(NAMESPACE) or run_namespace(run_id)
        api = _api(endpoints, 30.0)
        try:
            left = {name: _still_there(api, namespace, name, run_id) for name in job_ids}
        finally:
            api.close()
        return JobAccount(gone=tuple(name for name, lines in left.items() if not lines),
                          left=tuple(line for lines in left.values() for line in lines),
                          where=f"namespace {namespace} (Pods and MPIJobs)")


def _still_there(api: KubeApi, namespace: str, name: str, run_id: str) -> list[str]:
    """The Pod or MPIJob of that name in the namespace, one line each (none: gone)."""
    lines = []
    for kind in ("Pod", "MPIJob"):
        obj = api.get(kind, namespace, name)
        if obj is None:
            continue
        m = meta(obj)
        deleting = " (being deleted)" if m.get("deletionTimestamp") else ""
        hidden = ("" if (m.get("labels") or {}).get(LABEL_RUN) == run_id else
                  f"; it has no label {LABEL_RUN}={run_id}, so the label's sweep did not see it")
        lines.append(f"{kind} {namespace}/{name} is still there{deleting}{hidden}")
    return lines

def _mpijobs_served(api: KubeApi, namespace: str) -> bool:
    """Whether the API serves MPIJobs (its CRD installed and Established), asked the way a
    user confined to one namespace can: a 404 for the resource means no CRD."""
    try:
        api.list("MPIJob", namespace)
    except ApiError as exc:
        if exc.status == 404:
            return False
        raise
    return True

