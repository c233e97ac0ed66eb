"""The real-node half of the Kubernetes backend, pure parts: the Pod and MPIJob a job becomes
where a kubelet runs it (and that the simulated shape is what it was), the stack options that
choose it, the builds a node stack needs and the cache keys of its images."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest
import yaml
from filelock import FileLock

from pytest_stacks import gobuild
from pytest_stacks.backends.kubernetes import objects
from pytest_stacks.backends.kubernetes.adapter import (
    control_plane_builds,
    runs_pods,
    runtime_of,
)
from pytest_stacks.backends.kubernetes.api import (
    ANNOTATION_EXIT_CODE,
    KWOK_NODE_SELECTOR,
)
from pytest_stacks.backends.kubernetes.driver import KubernetesClient
from pytest_stacks.backends.kubernetes.fake import FakeCluster
from pytest_stacks.backends.kubernetes.node_images import COMPLETE, images_key, prune_sets
from pytest_stacks.contract import JobSpec
from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import load

ROOT = Path(__file__).resolve().parents[2]
REAL = objects.Runtime(real=True, pull_policy="Never", cpu_request="100m")
IMAGE = "pytest-stacks/mpi-worker:openmpi-trixie"


def build(kind: str, runtime: objects.Runtime, **options: Any) -> dict[str, Any]:
    spec = JobSpec("mpirun -np 2 pytest-stacks-rank\n", backend_options={"shape": kind,
                                                                          **options})
    opts = objects.options_of(spec, shape="pod", workers=2, image=IMAGE, runtime=runtime)
    maker = objects.pod if kind == "pod" else objects.mpijob
    return maker(spec, opts, name="j-1", namespace="ns", run_id="run")


def test_a_real_pod_runs_its_script_on_any_node_with_its_own_outcome() -> None:
    pod = build("pod", REAL, exit_code=3, keep_running=True)
    spec = pod["spec"]
    assert "nodeSelector" not in spec and "tolerations" not in spec
    assert pod["metadata"]["annotations"] == {}  # nothing simulated
    [container] = spec["containers"]
    assert container["command"] == ["/bin/sh", "-c", "mpirun -np 2 pytest-stacks-rank\n"]
    assert container["imagePullPolicy"] == "Never"
    assert container["resources"] == {"requests": {"cpu": "100m"}}
    assert spec["restartPolicy"] == "Never" and spec["terminationGracePeriodSeconds"] > 0


def test_a_simulated_pod_is_what_it_was() -> None:
    pod = build("pod", objects.SIMULATED, exit_code=3)
    spec = pod["spec"]
    assert spec["nodeSelector"] == KWOK_NODE_SELECTOR and spec["tolerations"]
    assert pod["metadata"]["annotations"][ANNOTATION_EXIT_CODE] == "3"
    [container] = spec["containers"]
    assert "imagePullPolicy" not in container and "terminationGracePeriodSeconds" not in spec
    assert container["resources"] == {"requests": {"cpu": "1"}}


def test_a_real_mpijob_has_sshd_workers_and_a_launcher_that_runs_the_script() -> None:
    job = build("mpijob", REAL)["spec"]
    assert job["launcherCreationPolicy"] == "WaitForWorkersReady"
    assert job["mpiImplementation"] == "OpenMPI"
    [launcher] = job["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
    [worker] = job["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["containers"]
    # In args, behind the worker image's entrypoint (which waits for the workers' names).
    assert "command" not in launcher
    assert launcher["args"] == ["/bin/sh", "-c", "mpirun -np 2 pytest-stacks-rank\n"]
    assert {"name": "PRTE_MCA_prte_default_hostfile", "value": "/etc/mpi/hostfile"} \
        in launcher["env"]
    assert worker["command"] == objects.SSHD
    assert worker["readinessProbe"]["tcpSocket"]["port"] == 22
    assert not any(e["name"].startswith("PRTE_") for e in worker["env"])
    assert job["mpiReplicaSpecs"]["Worker"]["replicas"] == 2
    for role in ("Launcher", "Worker"):
        assert job["mpiReplicaSpecs"][role]["template"]["metadata"]["annotations"] == {}


def test_a_simulated_mpijob_is_what_it_was() -> None:
    job = build("mpijob", objects.SIMULATED)["spec"]
    assert "launcherCreationPolicy" not in job
    worker = job["mpiReplicaSpecs"]["Worker"]["template"]
    assert worker["metadata"]["annotations"] == {"pytest-stacks.io/keep-running": "true"}
    assert worker["spec"]["containers"][0]["command"][:2] == ["/bin/sh", "-c"]


def test_a_job_env_wins_over_the_launchers_defaults() -> None:
    spec = JobSpec("true", env={"PRTE_MCA_prte_default_hostfile": "/mine"},
                   backend_options={"shape": "mpijob"})
    opts = objects.options_of(spec, shape="pod", workers=2, image=IMAGE, runtime=REAL)
    job = objects.mpijob(spec, opts, name="j", namespace="ns", run_id="run")
    [launcher] = job["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"]
    assert launcher["env"] == [{"name": "PRTE_MCA_prte_default_hostfile", "value": "/mine"}]


def test_runtime_from_stack_options() -> None:
    assert runtime_of({}) == objects.SIMULATED
    assert runtime_of({"execution": "real", "image_pull_policy": "Never",
                       "cpu_request": "100m"}) == REAL
    with pytest.raises(StacksError, match="execution='sometimes'"):
        runtime_of({"execution": "sometimes"})
    with pytest.raises(ValueError, match="pull policy"):
        objects.options_of(JobSpec("true"), shape="pod", workers=0, image=IMAGE,
                           runtime=objects.Runtime(real=True, pull_policy="Sometimes"))


def test_a_real_node_refuses_files_with_the_true_reason() -> None:
    cluster = FakeCluster(kubernetes_version="1.36.3", operator_version="0.8.2")
    try:
        client = KubernetesClient(cluster, "s", namespace="ns", run_id="run", image=IMAGE,
                                  runtime=REAL)
        [result] = client.submit([JobSpec("true", outputs=("out.txt",))])
        assert result.handle is None and "exit code and its logs" in str(result.error)
    finally:
        cluster.close()


def test_the_node_stack_builds_a_kubelet_and_coredns_and_no_kwok() -> None:
    manifest = load(ROOT / "manifest.yaml")
    node, kwok = manifest.get("k8s-1.36-node-mpi-0.8"), manifest.get("k8s-1.36-mpi-0.8")
    assert runs_pods(node) and not runs_pods(kwok)
    builds = control_plane_builds(node)
    assert sorted(builds) == ["coredns", "etcd", "kubernetes", "node", "operator"]
    assert set(builds["node"].programs) == {"kubelet", "kube-proxy"}
    assert builds["node"].stage_replacements_of == "k8s.io/kubernetes"
    assert builds["coredns"].requires == {"github.com/coredns/coredns": "v1.14.7"}
    # The kwok stack's builds (and so their cache keys) are shared, not changed.
    kwok_builds = control_plane_builds(kwok)
    assert sorted(kwok_builds) == ["etcd", "kubernetes", "kwok", "operator"]
    for name in ("kubernetes", "etcd", "operator"):
        assert kwok_builds[name] == builds[name]
    assert runtime_of(node.options).real and not runtime_of(kwok.options).real


def test_image_cache_keys_follow_every_input() -> None:
    base = images_key("f", {"OPENMPI_VERSION": ""}, "sha256:1", "p:1", "w:1")
    assert base == images_key("f", {"OPENMPI_VERSION": ""}, "sha256:1", "p:1", "w:1")
    others = [images_key("g", {"OPENMPI_VERSION": ""}, "sha256:1", "p:1", "w:1"),
              images_key("f", {"OPENMPI_VERSION": "5"}, "sha256:1", "p:1", "w:1"),
              images_key("f", {"OPENMPI_VERSION": ""}, "sha256:2", "p:1", "w:1"),
              images_key("f", {"OPENMPI_VERSION": ""}, "sha256:1", "p:2", "w:1"),
              images_key("f", {"OPENMPI_VERSION": ""}, "sha256:1", "p:1", "w:2")]
    assert len({base, *others}) == 6


def test_a_local_go_programs_key_follows_its_files(tmp_path: Path) -> None:
    (tmp_path / "go.mod").write_text("module x\n")
    (tmp_path / "main.go").write_text("package main\nfunc main() {}\n")
    first = gobuild.local_digest(tmp_path, "go1.26")
    assert first == gobuild.local_digest(tmp_path, "go1.26")
    assert first != gobuild.local_digest(tmp_path, "go1.27")
    (tmp_path / "main.go").write_text("package main\nfunc main() { println() }\n")
    assert first != gobuild.local_digest(tmp_path, "go1.26")


def test_every_stack_that_runs_mpi_runs_the_same_mpi_program() -> None:
    """The Slurm cluster and the Kubernetes worker image compile one program (MPI_Init, an
    Allreduce): two copies because each image builds from its own folder, kept equal here."""
    root = Path(__file__).resolve().parents[2] / "stacks"
    cluster = (root / "slurm-cluster" / "mpi-ranks.c").read_text()
    worker = (root / "mpi-worker" / "mpi-ranks.c").read_text()
    assert cluster == worker
    assert "MPI_Allreduce" in worker and "MPI_Init" in worker
    dockerfile = (root / "mpi-worker" / "Dockerfile").read_text()
    assert "mpicc" in dockerfile and "pytest-stacks-rank" in dockerfile


def test_only_the_node_image_sets_used_most_recently_stay(tmp_path: Path) -> None:
    sets = []
    for age in range(5):  # k8s-node-0 is the newest
        folder = tmp_path / f"k8s-node-{age}"
        folder.mkdir()
        (folder / "mpi-worker.tar").write_bytes(b"x")
        (folder / COMPLETE).write_text("")
        os.utime(folder / COMPLETE, (1000 - age, 1000 - age))
        sets.append(folder)
    (tmp_path / "k8s-node-building").mkdir()  # no .complete: a build under way
    with FileLock(str(sets[3]) + ".lock"):  # another session holds this one
        removed = prune_sets(tmp_path, keep=2)
    assert removed == [sets[2], sets[4]]
    assert [p.exists() for p in sets] == [True, True, False, True, False]
    assert (tmp_path / "k8s-node-building").exists()


def test_the_test_node_neither_collects_images_nor_evicts() -> None:
    """No registry can give an image back, and the host's disk is shared with every stack of the
    run: a kubelet under DiskPressure reclaimed images, the sandbox image among them (containerd
    1.6 does not pin it), and every later pod stayed Pending (CI, k8s-1.34-node). Every
    eviction signal the kubelet knows of is switched off ("0%") and image GC never starts."""
    config = yaml.safe_load((ROOT / "stacks/k8s-node/kubelet.yaml").read_text())
    assert config["imageGCHighThresholdPercent"] == 100
    signals = ("memory.available", "nodefs.available", "imagefs.available",
               "nodefs.inodesFree", "imagefs.inodesFree")
    assert {name: config["evictionHard"].get(name) for name in signals} == dict.fromkeys(
        signals, "0%")
    assert not config.get("evictionSoft")
