"""A site's Kubernetes cluster with the MPI Operator, on the in-process cluster double: which
operator version the preflight reads, and from which pods.

The double is :class:`FakeCluster` (its API answers as a real server's do) with what a real
cluster adds here: the operator installed as its release manifest does (namespace
``mpi-operator``, pods labelled ``app: mpi-operator`` and ``app.kubernetes.io/name:
mpi-operator``, a container named ``mpi-operator``), the log its binary writes when it starts
(klog lines; ``version.Info`` printed with ``%+v``), and RBAC refusals for a user confined to
one namespace.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from pathlib import Path

import pytest

from pytest_stacks.backends.kubernetes import site
from pytest_stacks.backends.kubernetes.adapter import run_namespace
from pytest_stacks.backends.kubernetes.api import LABEL_RUN, ApiError, Obj, Objs
from pytest_stacks.backends.kubernetes.fake import FakeCluster, controllers
from pytest_stacks.backends.kubernetes.site import KubernetesSite
from pytest_stacks.contract import JobSpec, submitted
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.manifest import Stack, loads
from pytest_stacks.providers import existing, site_jobs
from pytest_stacks.providers.base import RunContext, StackInfo

REPO = Path(__file__).resolve().parents[2]
SITE = """
version: 1
capabilities: {submit: s}
backends: {mpi-operator: {window: {anchor: "0.6", leading_edge: "0.9"}}}
stacks:
  - name: site-k8s
    backend: mpi-operator
    version: "0.8.2"
    provider: existing
    transport: kubernetes
    capabilities: [submit]
    configuration: c
    lanes: [site]
    existing: {versions: ">=0.8,<0.9", kubeconfig: /kubeconfig}
"""
RELEASE_LABELS = {"app": "mpi-operator", "app.kubernetes.io/component": "mpijob",
                  "app.kubernetes.io/name": "mpi-operator", "kustomize.component": "mpi-operator"}


def started(version: str) -> str:
    """The first lines the operator's binary logs (cmd/mpi-operator/app/server.go)."""
    return ("I1201 00:00:00.000000       1 server.go:95] Using cluster scoped operator\n"
            f"I1201 00:00:00.000100       1 server.go:101] [API Version: v2 Version: {version} "
            "Git SHA: 754416ab0c213b38d9f1e8d4f6e1b1f3a2c9e0d1 Built: 2026-12-01 00:00:00 "
            "Go Version: go1.24.5 Go OS/Arch: linux/amd64]\n"
            "I1201 00:00:00.000200       1 server.go:104] Server options: &{Kubeconfig: ...}\n")


class SiteCluster(FakeCluster):
    """The double, with container logs and the refusals of a namespace-confined user."""

    def __init__(self, *, autostart: bool = False) -> None:
        super().__init__(autostart=autostart)
        self.pod_logs: dict[tuple[str, str], str] = {}
        self.forbidden: set[tuple[str, str | None]] = set()  # (kind, namespace or None: all)

    def list(self, kind: str, namespace: str | None = None,
             labels: Mapping[str, str] | None = None) -> Objs:
        if (kind, namespace) in self.forbidden or (kind, "*") in self.forbidden:
            raise ApiError(403, "Forbidden", f"{kind.lower()}s is forbidden: User \"ci\" "
                                             f"cannot list resource")
        return super().list(kind, namespace, labels)

    def logs(self, namespace: str, pod: str, limit_bytes: int = 65536, *,
             container: str = "") -> str:
        if ("log", namespace) in self.forbidden:
            raise ApiError(403, "Forbidden", "pods/log is forbidden")
        return self.pod_logs.get((namespace, pod), "")[:limit_bytes]

    def close(self) -> None:
        pass  # the site closes its client after each call; the test's cluster lives on

    def stop(self) -> None:
        super().close()

    def namespace(self, name: str) -> None:
        self.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        controllers.serviceaccount_step(self.store)

    def pod(self, namespace: str, name: str, image: str, *, labels: Mapping[str, str],
            container: str = "mpi-operator", ready: bool = True, log: str = "") -> None:
        self.create({"apiVersion": "v1", "kind": "Pod",
                     "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
                     "spec": {"containers": [{"name": container, "image": image}]}})
        with self.store.lock:
            stored = self.store.get("Pod", namespace, name)
            assert stored is not None
            stored["status"] = {"phase": "Running", "conditions": [
                {"type": "Ready", "status": "True" if ready else "False"}]}
        self.pod_logs[(namespace, name)] = log

    def mpijob_crd(self, served: tuple[str, ...] = ("v2beta1",)) -> None:
        crd: Obj = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
                    "metadata": {"name": "mpijobs.kubeflow.org"},
                    "spec": {"group": "kubeflow.org", "versions": [
                        {"name": v, "served": True, "storage": v == served[-1]}
                        for v in served]}}
        self.create(crd)
        with self.store.lock:
            stored = self.store.get("CustomResourceDefinition", None, "mpijobs.kubeflow.org")
            assert stored is not None
            stored["status"] = {"conditions": [{"type": "Established", "status": "True"}]}


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> SiteCluster:
    made = SiteCluster()
    made.namespace("team")
    made.mpijob_crd()
    monkeypatch.setattr(site, "_api", lambda endpoints, timeout=10.0: made)
    return made


def _stack() -> Stack:
    return loads(SITE, REPO / "manifest.yaml").stacks[0]


def _check() -> dict[str, str]:
    return KubernetesSite().check(_stack(), None, {"kubeconfig": "/kubeconfig"})


def test_the_version_is_the_operators_own_pods_not_another_pod_with_that_image_name(
        cluster: SiteCluster) -> None:
    """A user's pod running an image named like the operator's, tagged in range, says nothing:
    the operator's own pod (its labels, its container) runs 0.9.1, outside the range, which
    its digest-pinned image does not tell and its binary does."""
    cluster.pod("team", "e2e", "ghcr.io/someone/mpi-operator-e2e:0.8.2", labels={},
                container="e2e")
    cluster.pod("mpi-operator", "mpi-operator-6d9f7c-x2x5k",
                "mpioperator/mpi-operator@sha256:" + "ab" * 32, labels=RELEASE_LABELS,
                log=started("v0.9.1"))
    with pytest.raises(InfrastructureError) as caught:
        _check()
    said = str(caught.value)
    assert "MPI Operator 0.9.1" in said and "outside the range '>=0.8,<0.9'" in said
    assert "its binary says v0.9.1" in said and "e2e" not in said


def test_without_the_operators_pods_it_cannot_tell_and_says_so(cluster: SiteCluster) -> None:
    """No pod of the operator's (labels and container); pods elsewhere whose images are named
    mpi-operator are no witnesses: no version, said as such."""
    cluster.pod("team", "copy", "mpioperator/mpi-operator:0.8.2", labels={})
    with pytest.raises(InfrastructureError) as caught:
        _check()
    said = str(caught.value)
    assert "cannot tell which MPI Operator the cluster runs" in said
    assert "no pod labelled app.kubernetes.io/name=mpi-operator" in said


def test_a_tag_the_binary_contradicts_is_refused(cluster: SiteCluster) -> None:
    cluster.pod("mpi-operator", "mpi-operator-1", "mpioperator/mpi-operator:0.8.2",
                labels=RELEASE_LABELS, log=started("v0.9.0"))
    with pytest.raises(InfrastructureError) as caught:
        _check()
    assert "its image is tagged 0.8.2 but its binary says v0.9.0" in str(caught.value)


def test_tag_and_binary_agreeing_give_the_version_and_say_how(cluster: SiteCluster) -> None:
    cluster.pod("mpi-operator", "mpi-operator-1", "mpioperator/mpi-operator:0.8.2",
                labels=RELEASE_LABELS, log=started("v0.8.2"))
    cluster.pod("mpi-operator", "mpi-operator-0", "mpioperator/mpi-operator:0.7.0",
                labels=RELEASE_LABELS, ready=False)  # the old replica, going away
    facts = _check()
    assert facts["operator_version"] == "0.8.2"


def test_a_log_it_may_not_read_leaves_the_tag_and_ready_replicas_must_agree(
        cluster: SiteCluster) -> None:
    """A user confined to a namespace: pods listed in the operator's namespace only, logs
    refused. The tag then stands; but two ready replicas on different tags do not."""
    cluster.forbidden |= {("Pod", None), ("log", "mpi-operator")}
    cluster.pod("mpi-operator", "mpi-operator-1", "mpioperator/mpi-operator:0.8.2",
                labels=RELEASE_LABELS)
    assert _check()["operator_version"] == "0.8.2"
    cluster.pod("mpi-operator", "mpi-operator-2", "mpioperator/mpi-operator:0.8.1",
                labels={"app": "mpi-operator"})
    with pytest.raises(InfrastructureError) as caught:
        _check()
    assert "ready pods run different versions" in str(caught.value)


def test_a_crd_that_does_not_serve_the_drivers_version_is_refused(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """An operator from before v2beta1: its CRD serves v1 only; the driver's MPIJobs would be
    refused at the first submit, so the preflight says it now."""
    made = SiteCluster()
    made.mpijob_crd(served=("v1",))
    monkeypatch.setattr(site, "_api", lambda endpoints, timeout=10.0: made)
    with pytest.raises(InfrastructureError) as caught:
        _check()
    assert "does not serve kubeflow.org/v2beta1" in str(caught.value)


# ------------------------------------------------------------ the run's end

RUN = "20261201000000-abcdef12"


@pytest.fixture
def running(monkeypatch: pytest.MonkeyPatch) -> Iterator[SiteCluster]:
    """The double with its controllers running (kwok runs the pods; namespaces and their
    contents are deleted as a real cluster deletes them)."""
    made = SiteCluster(autostart=True)
    made.namespace("team")
    monkeypatch.setattr(site, "_api", lambda endpoints, timeout=10.0: made)
    yield made
    made.stop()


def _run(tmp_path: Path, endpoints: dict[str, str], jobs: int) -> tuple[RunContext, list[str]]:
    """A site run that made its place and submitted ``jobs`` pods with pytest-stacks' client
    (their ids written down as the plugin's recording client does)."""
    ctx = RunContext.for_this_process(RUN, tmp_path / RUN)
    ctx.run_dir.mkdir()
    KubernetesSite().open_run(_stack(), None, endpoints, RUN, "{}")
    client = KubernetesSite().client(_stack(), None, endpoints, ctx.run_dir)
    ids = [h.job_id for h in submitted(client.submit([JobSpec(script="true\n")] * jobs))]
    site_jobs.note(ctx.run_dir, "site-k8s", ids, ours=True)
    return ctx, ids


def _down(ctx: RunContext, endpoints: dict[str, str]) -> list[str]:
    info = StackInfo(provider="existing", endpoints=endpoints, private={"run_id": RUN})
    return existing.ExistingProvider().down(_stack(), info, ctx)


def test_teardown_names_the_runs_objects_it_looked_up_and_what_it_cannot_vouch_for(
        running: SiteCluster, tmp_path: Path) -> None:
    endpoints = {"kubeconfig": "/kubeconfig"}
    ctx, ids = _run(tmp_path, endpoints, jobs=2)
    site_jobs.note(ctx.run_dir, "site-k8s", ["their-job-1"], ours=False)
    said = _down(ctx, endpoints)
    assert said == [
        f"looked up by id in namespace {run_namespace(RUN)} (Pods and MPIJobs) after the "
        f"run's end, 2 job(s) of the run are gone: {ids[0]}..2",
        "not tracked: 1 job(s) the suite's own client (pytest_stacks_backend) submitted "
        "(their-job-1); teardown neither ended nor looked for them, and does not say they "
        "are gone"]
    assert running.get("Namespace", None, run_namespace(RUN)) is None


def test_an_object_of_the_run_that_lost_its_label_is_not_proven_gone(
        running: SiteCluster, tmp_path: Path) -> None:
    """A shared namespace, and an admission policy that rewrote one pod's labels: the sweep
    by label deletes the others and never sees it; looked up by its name, it is left."""
    endpoints = {"kubeconfig": "/kubeconfig", "namespace": "team"}
    ctx, ids = _run(tmp_path, endpoints, jobs=2)
    with running.store.lock:
        relabelled = running.store.get("Pod", "team", ids[0])
        assert relabelled is not None
        relabelled["metadata"]["labels"].pop(LABEL_RUN)
    with pytest.raises(InfrastructureError) as caught:
        _down(ctx, endpoints)
    said = str(caught.value)
    assert f"Pod team/{ids[0]} is still there; it has no label {LABEL_RUN}={RUN}" in said
    assert running.get("Pod", "team", ids[1]) is None, "the labelled one went"
