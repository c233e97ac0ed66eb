"""An existing Kubernetes cluster with the MPI Operator, as a staging cluster meets the suite:
our kind cluster (node image built here, the operator as a Deployment) kept by
``pytest-stacks up`` and declared with ``provider: existing`` by its kubeconfig.

Proven on the cluster itself (``kubectl`` inside its node, the admin's view, never our client's
memory): the contract and backend suites pass against it and leave no namespace of the run; a
SIGKILLed run's namespace is reaped by ``pytest-stacks reap NAME`` while a live run's is
untouched (and removed by its own end); an unreachable API server and a cluster without the
MPIJob CRD are infrastructure errors in seconds that create nothing.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults.site_support import (
    ENGINE,
    REPO,
    assert_whole_pass,
    closed_port,
    infra_in_seconds,
    kept_stack,
    poll,
    pytest_session,
    reap_site,
    start_holder,
    two_holders,
    write_manifest,
)

pytestmark = [ENGINE, pytest.mark.kubernetes_builds]
CLUSTER = "kind-1.36-local-mpi-0.8"
RUN_LABEL = "pytest-stacks.io/run"
SITE = """
version: 1
catalogue: {version: "0.1", use: []}
stacks:
  - name: site-k8s
    description: A staging cluster with the MPI Operator (here, our kind cluster, kept).
    backend: mpi-operator
    version: "0.8.2"
    provider: existing
    transport: kubernetes
    configuration: kind-local
    capabilities: [submit, status, execution, kill, purge, mpi]
    lanes: [site]
    existing:
      versions: ">=0.8,<0.9"
      kubernetes_versions: ">=1.34"
      kubeconfig: {env: SITE_KUBECONFIG}
    options:
      job_shape: mpijob
      workers: 2
      image: pytest-stacks/mpi-worker:openmpi-trixie
      execution: real
      image_pull_policy: IfNotPresent
      cpu_request: 10m
    timeouts: {job: 300}
"""
@dataclass
class Cluster:
    name: str
    env: dict[str, str]

    def kubectl(self, *argv: str) -> subprocess.CompletedProcess[str]:
        node = subprocess.run(["docker", "ps", "-q", "--filter",
                               f"label=io.x-k8s.kind.cluster={self.name}", "--filter",
                               "label=io.x-k8s.kind.role=control-plane"],
                              capture_output=True, text=True, check=True).stdout.split()[0]
        return subprocess.run(["docker", "exec", node, "kubectl", "--kubeconfig",
                               "/etc/kubernetes/admin.conf", *argv], capture_output=True,
                              text=True, timeout=60, check=False)

    def run_namespaces(self) -> dict[str, dict[str, object]]:
        """Namespaces of site runs (a run label and an owner record): name -> the record.
        The kept cluster's own bring-up made one without a record (its probe's)."""
        listed = self.kubectl("get", "namespaces", "-l", RUN_LABEL, "-o", "json")
        assert listed.returncode == 0, listed.stderr
        found = {}
        for item in json.loads(listed.stdout)["items"]:
            record = (item["metadata"].get("annotations") or {}).get("pytest-stacks.io/owner")
            if record:
                found[item["metadata"]["name"]] = json.loads(record)
        return found

    def manifest(self, where: Path, namespace: str = "") -> Path:
        shared = f"      namespace: {namespace}\n" if namespace else ""
        return write_manifest(where, SITE.replace("    options:\n", shared + "    options:\n"))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    with kept_stack(CLUSTER, tmp_path_factory.mktemp("site-k8s")) as shown:
        yield Cluster(str(shown["project"]), {"SITE_KUBECONFIG": str(shown["kubeconfig"])})


def test_the_suites_pass_against_the_cluster_and_leave_no_namespace(cluster: Cluster,
                                                                    tmp_path: Path) -> None:
    results = tmp_path / "results.json"
    done = pytest_session(
        [str(REPO / "tests/contract"), str(REPO / "tests/backend"), "--stack=site-k8s",
         f"--stack-manifest={cluster.manifest(tmp_path)}", "--stack-unproven=fail",
         f"--stack-results={results}"], env=cluster.env, cwd=REPO)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    assert_whole_pass(results, "0.8.2")
    assert "site-k8s: looked up by id in namespace pst-" in out, out[-3000:]
    assert cluster.run_namespaces() == {}, "a namespace of the run is left on the cluster"
    assert cluster.kubectl("get", "crd", "mpijobs.kubeflow.org").returncode == 0


def test_in_a_namespace_the_user_owns_the_run_touches_only_its_own(cluster: Cluster,
                                                                   tmp_path: Path) -> None:
    """``existing.namespace``: for users who may not create namespaces. A colleague's object
    beside the run's is untouched, the namespace stays, and nothing of the run is left."""
    assert cluster.kubectl("create", "namespace", "team-ci").returncode == 0
    colleague = cluster.kubectl("create", "configmap", "colleague", "-n", "team-ci",
                                "--from-literal=keep=me", "-o", "jsonpath={.metadata.uid}")
    assert colleague.returncode == 0, colleague.stderr
    done = pytest_session(
        # The whole suite ran in the test before; here what makes and ends objects: a
        # completed job, a killed one, an MPIJob with its operator-made children.
        [str(REPO / "tests/contract"), "-k", "runs_to_completion or killed or mpi_job",
         "--stack=site-k8s", "--stack-unproven=warn",
         f"--stack-manifest={cluster.manifest(tmp_path, 'team-ci')}"], env=cluster.env,
        cwd=REPO)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    assert " passed" in out.strip().splitlines()[-1], out[-2000:]
    left = cluster.kubectl("get", "pods,jobs,mpijobs,services,configmaps,secrets", "-n",
                           "team-ci", "-l", RUN_LABEL, "-o", "name")
    assert left.returncode == 0 and left.stdout.strip() == "", left.stdout + left.stderr
    kept = cluster.kubectl("get", "configmap", "colleague", "-n", "team-ci", "-o",
                           "jsonpath={.metadata.uid}")
    assert kept.stdout == colleague.stdout, "the colleague's object was touched"
    assert cluster.run_namespaces() == {}, "no namespace of the run was made"


def _start(cluster: Cluster, where: Path) -> subprocess.Popen[str]:
    return start_holder(where, "site-k8s", cluster.manifest(where), cluster.env)


def _namespace_of(cluster: Cluster, pid: int) -> str:
    def find() -> str:
        for name, owner in cluster.run_namespaces().items():
            if owner.get("pid") == pid:
                pods = cluster.kubectl("get", "pods", "-n", name, "-o", "name").stdout
                return name if pods.strip() else ""
        return ""
    return poll(find, timeout=240, what=f"a namespace with pods of the run owned by pid {pid}")


def test_a_killed_runs_namespace_is_reaped_and_a_live_runs_is_not(cluster: Cluster,
                                                                  tmp_path: Path) -> None:
    with two_holders(lambda where: _start(cluster, where), tmp_path) as holders:
        dead_ns = _namespace_of(cluster, holders.dead.pid)
        live_ns = _namespace_of(cluster, holders.live.pid)
        holders.kill_dead()
        said = reap_site(cluster.manifest(tmp_path), "site-k8s", cluster.env)
        left = cluster.run_namespaces()
        assert dead_ns not in left, f"the dead run's namespace is still there: {said}"
        assert live_ns in left, "the live run's namespace was touched"
    assert live_ns not in cluster.run_namespaces(), holders.live_output[-3000:]


def _infra_in_seconds(cluster: Cluster, tmp_path: Path, env: dict[str, str], expected: str
                      ) -> None:
    before = cluster.run_namespaces()
    infra_in_seconds(tmp_path, "site-k8s", cluster.manifest(tmp_path), env, expected)
    assert cluster.run_namespaces() == before, "a failed preflight created a namespace"


def test_an_unreachable_api_server_is_infra_in_seconds(cluster: Cluster, tmp_path: Path) -> None:
    text = Path(cluster.env["SITE_KUBECONFIG"]).read_text()
    server = next(line for line in text.splitlines() if "server:" in line).split("server:")[1]
    broken = tmp_path / "kubeconfig"
    broken.write_text(text.replace(server.strip(), f"https://127.0.0.1:{closed_port()}"))
    _infra_in_seconds(cluster, tmp_path, {"SITE_KUBECONFIG": str(broken)},
                      "the API server is unreachable")


def test_a_cluster_without_the_mpijob_crd_is_infra_in_seconds(cluster: Cluster,
                                                               tmp_path: Path) -> None:
    """Last in the module: it takes the CRD (and every MPIJob) off the kept cluster."""
    removed = cluster.kubectl("delete", "crd", "mpijobs.kubeflow.org", "--wait=true")
    assert removed.returncode == 0, removed.stderr
    _infra_in_seconds(cluster, tmp_path, cluster.env,
                      "preflight 'MPIJob CRD': mpijobs.kubeflow.org is missing")
