"""The Kubernetes driver end to end on the in-memory control plane (API server, garbage
collector, Job controller, MPI Operator, kwok pod lifecycle), plus the group verdict, the
cleanup proof, the reaper and the real seam's HTTP (over a mock transport)."""

from __future__ import annotations

import ast
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from pytest_stacks.backends.kubernetes import api as k8s
from pytest_stacks.backends.kubernetes import objects
from pytest_stacks.backends.kubernetes.api import LABEL_RUN, ApiError, meta
from pytest_stacks.backends.kubernetes.cleanup import prove_cleanup, reap
from pytest_stacks.backends.kubernetes.driver import KubernetesClient
from pytest_stacks.backends.kubernetes.fake import FakeCluster
from pytest_stacks.backends.kubernetes.groups import verify_group
from pytest_stacks.backends.kubernetes.identities import Identity, check_ownership
from pytest_stacks.backends.kubernetes.lightkube_api import LightkubeApi, delete_options
from pytest_stacks.backends.kubernetes.objects import Runtime
from pytest_stacks.contract import JobHandle, JobSpec, JobState, submitted, wait_for
from pytest_stacks.errors import BackendCallError

NS = "pst-test"
RUN = "run-0001"
MakeClient = Callable[..., KubernetesClient]


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    fake = FakeCluster(kubernetes_version="1.36.3", operator_version="0.8.2")
    yield fake
    fake.close()


@pytest.fixture
def make_client(cluster: FakeCluster) -> MakeClient:
    def make(**kwargs: Any) -> KubernetesClient:
        options: dict[str, Any] = {"namespace": NS, "run_id": RUN,
                                   "image": "busybox@sha256:" + "0" * 64,
                                   "operator_version": "0.8.2", **kwargs}
        return KubernetesClient(cluster, "fake-kubernetes", **options)
    return make


@pytest.fixture
def client(make_client: MakeClient) -> KubernetesClient:
    return make_client()


def spec(**options: Any) -> JobSpec:
    return JobSpec("echo hello", backend_options=options)


def run(client: KubernetesClient, specs: list[JobSpec], timeout: float = 10) -> list[JobHandle]:
    handles = submitted(client.submit(specs))
    wait_for(client, handles, timeout=timeout, poll=0.02)
    return handles


def running(client: KubernetesClient, specs: list[JobSpec]) -> list[JobHandle]:
    handles = submitted(client.submit(specs))
    wait_for(client, handles, until=frozenset({JobState.RUNNING}), timeout=10, poll=0.02)
    return handles


# ---------------------------------------------------------------- pods


def test_pod_completes_with_exit_0(client: KubernetesClient, cluster: FakeCluster) -> None:
    [handle] = run(client, [spec()])
    [status] = client.status([handle])
    assert (status.state, status.native_state, status.exit_code) == (
        JobState.COMPLETED, "Succeeded", 0)
    pod = cluster.get("Pod", NS, handle.job_id)
    assert pod is not None
    assert pod["spec"]["restartPolicy"] == "Never"
    assert pod["spec"]["nodeName"] == "kwok-node-0"
    assert pod["spec"]["containers"][0]["command"] == ["/bin/sh", "-c", "echo hello"]
    assert meta(pod)["labels"] == {k8s.LABEL_RUN: RUN, k8s.LABEL_JOB: handle.job_id}
    assert client.completion_times([handle])[0]


def test_annotated_exit_code_fails_and_message_is_fetched(client: KubernetesClient,
                                                          tmp_path: Path) -> None:
    handles = run(client, [spec(exit_code=3, message="boom at step 2"), spec()])
    failed, ok = client.status(handles)
    assert (failed.state, failed.exit_code, failed.native_state) == (JobState.FAILED, 3, "Failed")
    assert (ok.state, ok.exit_code) == (JobState.COMPLETED, 0)
    fetched, nothing = client.fetch_outputs(handles, tmp_path)
    assert fetched.ok, fetched.error
    assert (tmp_path / failed.handle.job_id / "termination-message").read_text() == \
        "boom at step 2"
    assert not nothing.ok and "neither a termination message nor logs" in nothing.error


def test_names_are_unique_and_never_reused(client: KubernetesClient,
                                           make_client: MakeClient) -> None:
    first = submitted(client.submit([spec(keep_running=True)] * 3))
    other = submitted(make_client().submit([spec(keep_running=True)]))
    names = [h.job_id for h in first + other]
    assert len(set(names)) == 4
    assert all(n.startswith("pst-run-0001-") for n in names)


def test_keep_running_then_kill_is_cancelled_and_uid_gone(client: KubernetesClient,
                                                          cluster: FakeCluster) -> None:
    [handle] = running(client, [spec(keep_running=True)])
    time.sleep(0.3)  # far past finish_after: keep-running holds it
    assert client.status([handle])[0].state is JobState.RUNNING
    uid = meta(cluster.get("Pod", NS, handle.job_id) or {})["uid"]
    [killed] = client.kill([handle])
    assert killed.ok, killed.error
    assert client.status([handle])[0].state is JobState.CANCELLED
    wait = time.monotonic() + 5
    while cluster.get("Pod", NS, handle.job_id) is not None and time.monotonic() < wait:
        time.sleep(0.02)
    assert cluster.get("Pod", NS, handle.job_id) is None
    assert prove_cleanup(cluster, [Identity("Pod", NS, handle.job_id, uid)], NS,
                         {k8s.LABEL_JOB: handle.job_id}) == []
    assert client.status([handle])[0].state is JobState.CANCELLED


class _DeafDeletes:
    """The API seam with DELETE accepted but never acted on (as a webhook or a finalizer
    that never lets go would leave it): the client must not call the job cancelled."""

    def __init__(self, cluster: FakeCluster) -> None:
        self._cluster = cluster

    def __getattr__(self, name: str) -> Any:
        return getattr(self._cluster, name)

    def delete(self, *args: Any, **kwargs: Any) -> bool:
        return True


def test_a_kill_is_cancelled_only_when_the_api_server_says_so(cluster: FakeCluster) -> None:
    client = KubernetesClient(_DeafDeletes(cluster), "fake-kubernetes",  # type: ignore[arg-type]
                              namespace=NS, run_id=RUN, image="busybox", operator_version="0.8.2")
    [handle] = running(client, [spec(keep_running=True)])
    [killed] = client.kill([handle])
    assert killed.ok, killed.error
    [status] = client.status([handle])
    assert status.state is JobState.RUNNING, status  # no deletionTimestamp, still there


def test_a_handle_of_another_client_is_asked_of_the_api_server(
        client: KubernetesClient, make_client: MakeClient) -> None:
    other = make_client()
    [done] = run(other, [spec(exit_code=4)])
    [status] = client.status([done])
    assert (status.state, status.exit_code) == (JobState.FAILED, 4), status
    [ghost] = client.status([JobHandle("fake-kubernetes", "pst-nobody-1")])
    assert ghost.state is JobState.UNKNOWN and f"namespace {NS}" in ghost.reason


def test_purge_refuses_running_jobs_per_job(client: KubernetesClient,
                                            cluster: FakeCluster) -> None:
    [done] = run(client, [spec()])
    [live] = running(client, [spec(keep_running=True)])
    done_result, live_result = client.purge([done, live])
    assert done_result.ok, done_result.error
    assert not live_result.ok and "running" in live_result.error and "kill" in live_result.error
    assert cluster.get("Pod", NS, live.job_id) is not None
    time.sleep(0.1)
    st_done, st_live = client.status([done, live])
    assert st_done.state is JobState.COMPLETED and st_done.native_state.startswith("Deleted")
    assert st_live.state is JobState.RUNNING


def test_unknown_handle_is_unknown_and_order_is_kept(client: KubernetesClient) -> None:
    [a, b] = run(client, [spec(), spec(exit_code=2)])
    ghost = JobHandle("fake-kubernetes", "pst-nobody-1")
    other_stack = JobHandle("another-stack", a.job_id)
    statuses = client.status([b, ghost, a, other_stack])
    assert [s.handle for s in statuses] == [b, ghost, a, other_stack]
    assert [s.state for s in statuses] == [JobState.FAILED, JobState.UNKNOWN,
                                           JobState.COMPLETED, JobState.UNKNOWN]


def test_a_refused_spec_is_a_per_job_error(client: KubernetesClient) -> None:
    results = client.submit([spec(shape="daemonset"), spec(), spec(exit_code=300),
                             spec(keep_running="false")])
    assert [r.ok for r in results] == [False, True, False, False]
    assert "shape" in results[0].error and "exit_code" in results[2].error
    assert "keep_running" in results[3].error


def test_api_down_fails_the_whole_call(client: KubernetesClient, cluster: FakeCluster) -> None:
    [handle] = run(client, [spec()])
    cluster.set_api_down()
    with pytest.raises(BackendCallError, match="unreachable"):
        client.status([handle])
    with pytest.raises(BackendCallError):
        client.submit([spec()])
    cluster.set_api_up()
    assert client.status([handle])[0].state is JobState.COMPLETED


def test_versions(client: KubernetesClient) -> None:
    assert client.versions() == {"daemon": "0.8.2", "kubernetes": "1.36.3"}


# ---------------------------------------------------------------- MPIJobs


def test_mpijob_succeeds_with_every_identity_owned(client: KubernetesClient) -> None:
    [handle] = run(client, [spec(shape="mpijob", workers=2)])
    [status] = client.status([handle])
    assert (status.state, status.native_state, status.exit_code) == (
        JobState.COMPLETED, "Succeeded", 0)
    found = client.identities([handle])
    name = handle.job_id
    kinds = sorted((i.kind, i.role) for i in found)
    assert kinds == sorted([("MPIJob", "job"), ("Service", "service"), ("ConfigMap", "config"),
                            ("Secret", "secret"), ("Job", "launcher-job"),
                            ("Pod", "launcher-pod"), ("Pod", "worker"), ("Pod", "worker")])
    by_role = {i.role: i for i in found}
    assert by_role["config"].name == f"{name}-config"
    assert by_role["secret"].name == f"{name}-ssh"
    assert by_role["launcher-pod"].owner_uid == by_role["launcher-job"].uid
    assert by_role["launcher-job"].owner_uid == by_role["job"].uid
    assert {i.name for i in found if i.role == "worker"} == {f"{name}-worker-0",
                                                             f"{name}-worker-1"}
    assert all(i.uid for i in found)
    assert check_ownership(found, client.recorded_identities()) == []
    assert client.completion_times([handle])[0]


def test_ownership_check_reports_a_tampered_owner(client: KubernetesClient,
                                                  cluster: FakeCluster) -> None:
    [handle] = run(client, [spec(shape="mpijob", workers=2)])

    def steal(obj: dict[str, Any]) -> None:
        obj["metadata"]["ownerReferences"][0]["uid"] = "00000000-not-the-mpijob"

    cluster.stop_operator()  # so nothing reconciles the tampered object back
    cluster.mutate("Pod", NS, f"{handle.job_id}-worker-1", steal)
    problems = check_ownership(client.identities([handle]))
    assert len(problems) == 1
    assert f"{handle.job_id}-worker-1" in problems[0] and "00000000-not-the-mpijob" in problems[0]


def test_ownership_check_reports_a_changed_uid() -> None:
    first = Identity("Pod", NS, "p", "uid-1")
    assert check_ownership([first], [first]) == []
    again = Identity("Pod", NS, "p", "uid-2")
    [problem] = check_ownership([again], [first])
    assert "uid changed from uid-1 to uid-2" in problem


def test_mpijob_launcher_exit_1_fails(client: KubernetesClient, cluster: FakeCluster) -> None:
    [handle] = run(client, [spec(shape="mpijob", workers=2, exit_code=1, message="rank 0")])
    [status] = client.status([handle])
    assert (status.state, status.native_state, status.exit_code) == (
        JobState.FAILED, "Failed", 1)
    launcher = client.launcher_pod(handle.job_id)
    assert launcher is not None and launcher["status"]["phase"] == "Failed"
    job = cluster.get("Job", NS, f"{handle.job_id}-launcher")
    assert job is not None and job["spec"]["backoffLimit"] == 0
    assert len(cluster.list("Pod", NS, {"job-name": f"{handle.job_id}-launcher"})) == 1


def test_invalid_mpijob_fails_at_invalid_after_and_not_before(
        make_client: MakeClient, cluster: FakeCluster) -> None:
    client = make_client(invalid_after=0.6)
    start = time.monotonic()
    [handle] = submitted(client.submit([spec(shape="mpijob", launcher_replicas=2)]))
    time.sleep(0.2)
    early = client.status([handle])[0]
    assert early.state is JobState.PENDING
    assert [e["reason"] for e in cluster.events(NS, handle.job_id)] == ["ValidationError"]
    [final] = wait_for(client, [handle], timeout=5, poll=0.02)
    assert time.monotonic() - start >= 0.6
    assert final.state is JobState.FAILED
    assert final.native_state.startswith("Invalid: Found validation errors")
    assert "Launcher].replicas" in final.native_state
    mpijob = cluster.get("MPIJob", NS, handle.job_id)
    assert mpijob is not None and not mpijob["status"].get("conditions")
    assert cluster.get("Job", NS, f"{handle.job_id}-launcher") is None


def test_operator_never_adopts_a_same_named_object(client: KubernetesClient,
                                                   cluster: FakeCluster) -> None:
    client.ensure_namespace()
    name = "pst-squatted"
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": f"{name}-config", "namespace": NS}})
    cluster.create({"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
                    "metadata": {"name": name, "namespace": NS},
                    "spec": {"mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": {
                        "spec": {"containers": [{"name": "l", "image": "x"}]}}}}}})
    time.sleep(0.2)
    reasons = [e["reason"] for e in cluster.events(NS, name)]
    assert "ErrResourceExists" in reasons
    assert meta(cluster.get("ConfigMap", NS, f"{name}-config") or {}).get(
        "ownerReferences") is None
    assert cluster.get("Job", NS, f"{name}-launcher") is None


def test_foreground_delete_removes_every_owned_object() -> None:
    cluster = FakeCluster(autostart=False, start_after=0, finish_after=0)
    try:
        client = KubernetesClient(cluster, "s", namespace=NS, run_id=RUN, image="img")
        cluster.create(objects.namespace(NS, RUN))
        cluster.step()  # the service-account controller makes the namespace's default account
        [handle] = submitted(client.submit([spec(shape="mpijob", workers=2)]))
        for _ in range(10):
            cluster.step()
        assert client.status([handle])[0].state is JobState.COMPLETED
        recorded = client.identities([handle])
        assert len(recorded) == 8
        assert len(prove_cleanup(cluster, recorded, NS, {LABEL_RUN: RUN})) >= 8
        assert all(r.ok for r in client.purge([handle]))
        cluster.step()
        owner = cluster.get("MPIJob", NS, handle.job_id)
        assert owner is not None, "foreground: the owner outlives its dependents"
        assert meta(owner)["deletionTimestamp"] and "foregroundDeletion" in meta(owner)[
            "finalizers"]
        for _ in range(10):
            cluster.step()
        assert prove_cleanup(cluster, recorded, NS, {LABEL_RUN: RUN}) == []
    finally:
        cluster.close()


def test_prove_cleanup_reports_a_leftover(client: KubernetesClient,
                                          cluster: FakeCluster) -> None:
    [handle] = run(client, [spec(shape="mpijob", workers=1)])
    recorded = client.identities([handle])
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "stray", "namespace": NS, "labels": {LABEL_RUN: RUN}}})
    assert all(r.ok for r in client.purge([handle]))
    problems = prove_cleanup(cluster, recorded, NS, {LABEL_RUN: RUN}, timeout=2)
    assert len(problems) == 1 and "ConfigMap pst-test/stray" in problems[0]


# ---------------------------------------------------------------- groups


def test_group_with_exact_coverage_on_simulated_pods_is_simulated_not_a_pass(
        client: KubernetesClient) -> None:
    handles = run(client, [spec(), spec(), spec()])
    verdict = verify_group(client, handles, expected=3)
    assert verdict.outcome == "simulated" and not verdict.passed, verdict


def test_group_with_exact_coverage_where_pods_execute_passes(client: KubernetesClient) -> None:
    """The verdict's logic alone (the double's pods end as told): judged as on a stack whose
    pods execute, the same exact coverage is a pass."""
    handles = run(client, [spec(), spec(shape="mpijob")])
    client.runtime = Runtime(real=True)
    verdict = verify_group(client, handles, expected=2)
    assert verdict.outcome == "pass" and verdict.passed, verdict


def test_group_of_mpijobs_covers_every_worker(client: KubernetesClient,
                                              cluster: FakeCluster) -> None:
    handles = run(client, [spec(shape="mpijob"), spec(shape="mpijob")])
    assert verify_group(client, handles, expected=2).outcome == "simulated"
    [none] = run(client, [spec(shape="mpijob", workers=0)])
    empty = verify_group(client, [none], expected=1)
    assert empty.outcome == "fail" and any("0 workers" in r for r in empty.reasons), empty
    worker = cluster.list("Pod", NS, {k8s.MPI_JOB_NAME_LABEL: handles[0].job_id,
                                      k8s.MPI_ROLE_LABEL: "worker"})[0]
    cluster.delete("Pod", NS, meta(worker)["name"])
    wait = time.monotonic() + 5
    while cluster.get("Pod", NS, meta(worker)["name"]) is not None and time.monotonic() < wait:
        time.sleep(0.02)
    short = verify_group(client, handles, expected=2)
    assert short.outcome == "fail" and any("1 worker pod(s) observed, the MPIJob asks for 2"
                                           in r for r in short.reasons), short


def test_an_empty_group_fails(client: KubernetesClient) -> None:
    verdict = verify_group(client, [], expected=0)
    assert verdict.outcome == "fail" and "at least one participant" in verdict.reasons[0]


def test_group_fails_when_a_participant_failed_or_is_missing(client: KubernetesClient) -> None:
    handles = run(client, [spec(), spec(exit_code=4), spec()])
    failed = verify_group(client, handles, expected=3)
    assert failed.outcome == "fail"
    assert len(failed.reasons) == 2  # FAILED exit 4, and no completion time
    assert handles[1].job_id in failed.reasons[0] and "exit 4" in failed.reasons[0]
    missing = verify_group(client, [handles[0], handles[2]], expected=3)
    assert missing.outcome == "fail"
    assert missing.reasons == ("3 participants expected, 2 given",)
    twice = verify_group(client, [handles[0], handles[0], handles[2]], expected=3)
    assert twice.outcome == "fail" and "more than once" in twice.reasons[0]


def test_group_is_infra_when_the_operator_lease_is_stale(client: KubernetesClient,
                                                         cluster: FakeCluster) -> None:
    handles = run(client, [spec(), spec(), spec()])
    cluster.stop_operator()
    time.sleep(0.3)
    verdict = verify_group(client, handles, expected=3, lease_max_age=0.25)
    assert verdict.outcome == "infra"
    assert "renewed" in verdict.reasons[0]
    assert verify_group(client, handles, expected=3).outcome == "simulated"  # 60 s default


def test_group_is_infra_when_the_lease_is_released(client: KubernetesClient,
                                                   cluster: FakeCluster) -> None:
    handles = run(client, [spec(), spec(), spec()])
    cluster.stop_operator(release=True)
    verdict = verify_group(client, handles, expected=3)
    assert verdict.outcome == "infra" and "not held" in verdict.reasons[0]


def test_group_is_infra_when_the_node_is_not_ready(client: KubernetesClient,
                                                   cluster: FakeCluster) -> None:
    handles = run(client, [spec(), spec(), spec()])
    cluster.set_node_ready(False)
    verdict = verify_group(client, handles, expected=3)
    assert verdict.outcome == "infra"
    assert verdict.reasons == ("node kwok-node-0 is NotReady (NodeStatusUnknown: Kubelet "
                               "stopped posting node status.)",)


def test_group_is_infra_when_a_pod_was_evicted_or_the_api_is_down(
        client: KubernetesClient, cluster: FakeCluster) -> None:
    handles = running(client, [spec(keep_running=True), spec(), spec()])
    cluster.evict(NS, handles[0].job_id)
    wait_for(client, handles, timeout=5, poll=0.02)
    evicted = verify_group(client, handles, expected=3)
    assert evicted.outcome == "infra" and "evicted" in evicted.reasons[0]
    assert client.status(handles[:1])[0].native_state == "Failed/Evicted"
    cluster.set_api_down("connection refused")
    down = verify_group(client, handles, expected=3)
    assert down.outcome == "infra" and "connection refused" in down.reasons[0]


# ---------------------------------------------------------------- reaping


def test_reap_removes_only_dead_runs_namespaces(cluster: FakeCluster, tmp_path: Path) -> None:
    uids = {}
    for run_id in ("dead-run", "live-run"):
        ns = cluster.create({"apiVersion": "v1", "kind": "Namespace",
                             "metadata": {"name": f"pst-{run_id}", "labels": {LABEL_RUN: run_id}}})
        cm = cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                             "metadata": {"name": "left", "namespace": f"pst-{run_id}"}})
        uids[run_id] = (meta(ns)["uid"], meta(cm)["uid"])
    tombstones = tmp_path / "tombstones.jsonl"
    assert reap(cluster, lambda r: r == "live-run", tombstones) == ["pst-dead-run"]
    deadline = time.monotonic() + 5
    while cluster.get("Namespace", None, "pst-dead-run") and time.monotonic() < deadline:
        time.sleep(0.02)
    assert cluster.get("Namespace", None, "pst-dead-run") is None
    assert cluster.get("ConfigMap", "pst-dead-run", "left") is None
    live = cluster.get("Namespace", None, "pst-live-run")
    assert live is not None and not meta(live).get("deletionTimestamp")
    assert cluster.get("ConfigMap", "pst-live-run", "left") is not None
    [line] = tombstones.read_text().splitlines()
    stone = json.loads(line)
    assert (stone["what"], stone["namespace"], stone["run"]) == ("Namespace", "pst-dead-run",
                                                                 "dead-run")
    assert stone["uids"] == {"Namespace/pst-dead-run": uids["dead-run"][0],
                             "ConfigMap/left": uids["dead-run"][1]}
    assert stone["when"].endswith("+00:00") and "not alive" in stone["why"]
    assert reap(cluster, lambda r: r == "live-run", tombstones) == []


# ---------------------------------------------------------------- the fake's API semantics


def test_fake_refuses_objects_in_a_missing_namespace_and_duplicates(
        cluster: FakeCluster) -> None:
    pod: dict[str, Any] = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "p", "namespace": "nope"},
           "spec": {"containers": [{"name": "c", "image": "i"}]}}
    with pytest.raises(ApiError) as missing:
        cluster.create(pod)
    assert missing.value.status == 404
    pod["metadata"]["namespace"] = "default"
    cluster.wait_idle()  # the default namespace's ServiceAccount exists after a controller pass
    stored = cluster.create(pod)
    assert meta(stored)["uid"] and meta(stored)["resourceVersion"]
    with pytest.raises(ApiError) as duplicate:
        cluster.create(pod)
    assert duplicate.value.status == 409
    with pytest.raises(ApiError) as precondition:
        cluster.delete("Pod", "default", "p", uid="another-uid")
    assert precondition.value.status == 409
    assert cluster.delete("Pod", "default", "p", uid=meta(stored)["uid"]) is True
    assert cluster.delete("Pod", "default", "never-was") is False


def test_fake_never_imports_the_driver() -> None:
    fake_dir = Path(__file__).parents[2] / "pytest_stacks/backends/kubernetes/fake"
    allowed = {"pytest_stacks.backends.kubernetes.api", "pytest_stacks.errors"}
    for source in fake_dir.glob("*.py"):
        for node in ast.walk(ast.parse(source.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith(
                    "pytest_stacks"):
                module = node.module or ""
                assert module in allowed or module.startswith(
                    "pytest_stacks.backends.kubernetes.fake"), f"{source.name}: {module}"


# ---------------------------------------------------------------- the real seam's HTTP


KUBECONFIG = """
apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://kube.test:6443", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: secret-token}}]
contexts: [{name: x, context: {cluster: c, user: u, namespace: default}}]
current-context: x
"""


def real_seam(tmp_path: Path, handler: Callable[[httpx2.Request], httpx2.Response],
              ) -> LightkubeApi:
    path = tmp_path / "kubeconfig"
    path.write_text(KUBECONFIG)
    return LightkubeApi.from_kubeconfig(path, transport=httpx2.MockTransport(handler))


def status_body(code: int, reason: str, message: str) -> dict[str, Any]:
    return {"kind": "Status", "apiVersion": "v1", "status": "Failure", "code": code,
            "reason": reason, "message": message}


def test_real_seam_delete_sends_preconditions_and_maps_answers(tmp_path: Path) -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        if request.url.path.endswith("/gone"):
            return httpx2.Response(404, json=status_body(404, "NotFound", "not found"))
        if request.url.path.endswith("/other"):
            return httpx2.Response(409, json=status_body(409, "Conflict", "Precondition "
                                                         "failed: UID in precondition: u1"))
        return httpx2.Response(200, json={"kind": "MPIJob", "metadata": {"name": "j"}})

    seam = real_seam(tmp_path, handler)
    assert seam.delete("MPIJob", "ns", "j", propagation="Foreground", uid="u1") is True
    request = seen[0]
    assert (request.method, request.url.path) == (
        "DELETE", "/apis/kubeflow.org/v2beta1/namespaces/ns/mpijobs/j")
    assert json.loads(request.content) == delete_options("Foreground", "u1") == {
        "kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": "Foreground",
        "preconditions": {"uid": "u1"}}
    assert request.headers["authorization"] == "Bearer secret-token"
    assert seam.delete("Pod", "ns", "gone") is False
    with pytest.raises(ApiError) as conflict:
        seam.delete("Pod", "ns", "other", uid="u1")
    assert (conflict.value.status, conflict.value.reason) == (409, "Conflict")


def test_real_seam_lists_fill_kind_page_and_select(tmp_path: Path) -> None:
    seen: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        seen.append(request)
        if "continue" not in request.url.params:
            return httpx2.Response(200, json={"metadata": {"continue": "tok"},
                                              "items": [{"metadata": {"name": "a"}}]})
        return httpx2.Response(200, json={"metadata": {}, "items": [{"metadata": {"name": "b"}}]})

    seam = real_seam(tmp_path, handler)
    items = seam.list("Job", "ns", {LABEL_RUN: "r1"})
    assert [(i["kind"], i["apiVersion"], i["metadata"]["name"]) for i in items] == [
        ("Job", "batch/v1", "a"), ("Job", "batch/v1", "b")]
    assert seen[0].url.path == "/apis/batch/v1/namespaces/ns/jobs"
    assert seen[0].url.params["labelSelector"] == "pytest-stacks.io/run=r1"
    assert seen[1].url.params["continue"] == "tok"
    seam.list("Pod")
    assert seen[-1].url.path == "/api/v1/pods"


def test_real_seam_failures(tmp_path: Path) -> None:
    def unavailable(request: httpx2.Request) -> httpx2.Response:
        if request.url.path == "/version":
            return httpx2.Response(503, text="etcdserver: leader changed")
        if request.url.path.endswith("/log"):
            return httpx2.Response(400, json=status_body(400, "BadRequest", "not started"))
        if request.method == "POST":
            return httpx2.Response(422, json=status_body(422, "Invalid", "bad name"))
        return httpx2.Response(404, json=status_body(404, "NotFound", "nope"))

    seam = real_seam(tmp_path, unavailable)
    with pytest.raises(BackendCallError, match="503"):
        seam.version()
    assert seam.get("Pod", "ns", "p") is None
    assert seam.logs("ns", "p") == ""  # a container that never started has no log

    def forbidden(request: httpx2.Request) -> httpx2.Response:
        return httpx2.Response(403, json=status_body(403, "Forbidden", "pods/log is "
                                                     "forbidden: User cannot get"))

    with pytest.raises(ApiError) as refused_logs:  # RBAC refusing logs is no empty log
        real_seam(tmp_path, forbidden).logs("ns", "p")
    assert refused_logs.value.status == 403
    with pytest.raises(ApiError) as invalid:
        seam.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "P",
                                                                     "namespace": "ns"}})
    assert (invalid.value.status, invalid.value.message) == (422, "bad name")

    def refused(request: httpx2.Request) -> httpx2.Response:
        raise httpx2.ConnectError("connection refused", request=request)

    with pytest.raises(BackendCallError, match="unreachable"):
        real_seam(tmp_path, refused).get("Pod", "ns", "p")


def test_describe_and_daemon_log_show_the_operator_s_refusal(make_client: MakeClient,
                                                             cluster: FakeCluster) -> None:
    client = make_client(invalid_after=0)
    [handle] = submitted(client.submit([spec(shape="mpijob", launcher_replicas=0)]))
    wait_for(client, [handle], timeout=5, poll=0.02)
    text = client.describe_jobs([handle])
    assert f"MPIJob {NS}/{handle.job_id}" in text
    assert "Warning ValidationError" in text and '"replicas": 0' in text
    assert f"ValidationError MPIJob {NS}/{handle.job_id}" in cluster.daemon_log()


def test_the_first_pod_waits_for_the_namespaces_default_service_account() -> None:
    """Seen on 1.36.3: a pod in a brand-new namespace is refused (403) until the controller
    made its default ServiceAccount; the fake refuses the same way, the driver waits."""
    cluster = FakeCluster(autostart=False)
    try:
        cluster.create(objects.namespace("fresh", RUN))
        with pytest.raises(ApiError) as refused:
            cluster.create({"apiVersion": "v1", "kind": "Pod",
                            "metadata": {"name": "p", "namespace": "fresh"},
                            "spec": {"containers": [{"name": "c", "image": "i"}]}})
        assert refused.value.status == 403 and "service account" in str(refused.value)
    finally:
        cluster.close()
    cluster = FakeCluster()
    try:
        client = KubernetesClient(cluster, "s", namespace="fresh", run_id=RUN, image="img")
        [result] = client.submit([spec()])
        assert result.ok, result.error
    finally:
        cluster.close()


def test_attaching_reaps_namespaces_of_runs_whose_directory_is_gone(tmp_path: Path) -> None:
    from pytest_stacks.backends.kubernetes.adapter import reap_dead_runs

    root = tmp_path / "runs"
    (root / "20260101000000-live0001").mkdir(parents=True)
    (root / "kept" / "20260101000000-kept0001").mkdir(parents=True)
    me = root / "20260101000000-mine0001"
    me.mkdir()
    cluster = FakeCluster()
    try:
        for run in ("20260101000000-live0001", "20260101000000-kept0001",
                    "20260101000000-dead0001", me.name):
            cluster.create(objects.namespace(f"pst-{run}", run))
        client = KubernetesClient(cluster, "s", namespace=f"pst-{me.name}", run_id=me.name,
                                  image="img")
        assert reap_dead_runs(client, me) == ["pst-20260101000000-dead0001"]
        stone = json.loads((me / "tombstones.jsonl").read_text())
        assert stone["run"] == "20260101000000-dead0001" and stone["why"]
        cluster.wait_idle()
        left = {n["metadata"]["name"] for n in cluster.list("Namespace")}
        assert "pst-20260101000000-dead0001" not in left
        assert {f"pst-{r}" for r in ("20260101000000-live0001", "20260101000000-kept0001",
                                     me.name)} <= left
    finally:
        cluster.close()


# ---------------------------------------------------------------- the end of a run


def test_ending_a_run_deletes_its_namespace_and_proves_everything_gone(
        client: KubernetesClient, cluster: FakeCluster) -> None:
    run(client, [spec(), spec(shape="mpijob")])
    assert cluster.get("Namespace", None, NS) is not None
    assert client.end_run(timeout=10) == []
    assert cluster.get("Namespace", None, NS) is None
    assert cluster.list("Pod", NS) == [] and cluster.list("MPIJob", NS) == []


def test_ending_a_run_names_what_was_left(client: KubernetesClient,
                                          cluster: FakeCluster) -> None:
    """A finalizer nobody removes keeps an object, and so the namespace: both are named."""
    run(client, [spec()])
    cluster.create({"apiVersion": "v1", "kind": "ConfigMap",
                    "metadata": {"name": "held", "namespace": NS, "labels": {LABEL_RUN: RUN},
                                 "finalizers": ["example.com/never"]}})
    left = client.end_run(timeout=0.5)
    assert any(f"ConfigMap {NS}/held" in line for line in left), left
    assert any(line.startswith(f"Namespace /{NS}") and "being deleted" in line
               for line in left), left


def test_ending_a_run_that_made_nothing_is_clean(client: KubernetesClient) -> None:
    assert client.end_run(timeout=1) == []


def test_a_probe_job_that_cannot_be_purged_is_an_infrastructure_error(
        tmp_path: Path) -> None:
    """The probe's purge is part of the proof: its refusal is not ignored."""
    from pytest_stacks.errors import InfrastructureError
    from pytest_stacks.lifecycle.probe import functional_probe
    from pytest_stacks.manifest import loads
    from pytest_stacks.providers.base import Attached, StackInfo

    [stack] = loads("""
version: 1
capabilities: {submit: s, status: t, purge: p}
backends: {mpi-operator: {window: {anchor: "0.8", leading_edge: "0.8"}}}
stacks:
  - {name: fake-k8s, backend: mpi-operator, version: "0.8.2", provider: fake,
     transport: kubernetes, configuration: controlplane-kwok,
     capabilities: [submit, status, purge], lanes: [pr]}
""", tmp_path / "m.yaml").stacks
    cluster = FakeCluster(kubernetes_version="1.36.3", operator_version="0.8.2")
    client = KubernetesClient(_DeafDeletes(cluster), "fake-k8s",  # type: ignore[arg-type]
                              namespace=NS, run_id=RUN, image="busybox", operator_version="0.8.2")

    def refuse(*args: Any, **kwargs: Any) -> bool:
        raise ApiError(403, "Forbidden", "deletes are not allowed here")

    client.api.delete = refuse  # type: ignore[method-assign]
    try:
        with pytest.raises(InfrastructureError, match=r"could not be purged.*not allowed"):
            functional_probe(stack, Attached(client, StackInfo(provider="fake"), lambda: ""))
    finally:
        cluster.close()


def test_every_request_has_a_deadline_and_a_timeout_reads_as_the_api_server_gone(
        tmp_path: Path) -> None:
    """A request in flight to an API server that went away ends at its deadline (15 s to
    read, 10 to connect), and its words are the driver's for "the service is not there"."""
    from pytest_stacks.backends.kubernetes.outages import WORDS

    def handler(request: httpx2.Request) -> httpx2.Response:
        assert request.extensions["timeout"] == {"connect": 10.0, "read": 15.0,
                                                 "write": 15.0, "pool": 15.0}
        raise httpx2.ReadTimeout("timed out", request=request)

    with pytest.raises(BackendCallError) as raised:
        real_seam(tmp_path, handler).get("MPIJob", "default", "j")
    reading = WORDS.read(str(raised.value))
    assert (reading.meaning, reading.fault) == ("gone", "API server unreachable")
