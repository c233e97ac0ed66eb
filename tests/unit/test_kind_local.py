"""kind with a node image built here: the docker shim for engines that refuse --privileged,
the node image's cluster configuration and pins, the manifest's ``kind.node_build``, and the
provider's command sequence for such a stack (recorded, no kind run; the real run is the
``kind-1.36-local-mpi-0.8`` stack's contract suite)."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
import yaml

from pytest_stacks import dockerutil
from pytest_stacks.errors import InfrastructureError, ManifestError, StacksError
from pytest_stacks.manifest import Stack, loads
from pytest_stacks.providers import images, kind, kind_docker, kind_node_image, kind_nodes
from pytest_stacks.providers.base import RunContext

REPO = Path(__file__).resolve().parents[2]
DIGEST = "sha256:" + "0" * 64
BASE = f'{{name: debian, tag: bookworm-slim, digest: "{DIGEST}", seed: bookworm}}'
PINS = ("{K8S_VERSION: v1.36.3, ETCD_VERSION: v3.6.8, COREDNS_VERSION: v1.14.7, "
        "CRI_TOOLS_VERSION: v1.37.0}")


def manifest(kind_section: str) -> str:
    return f"""
version: 1
capabilities: {{submit: s, mpi: m}}
backends: {{mpi-operator: {{window: {{anchor: "0.8", leading_edge: "0.8"}}}}}}
stacks:
  - name: kind-local
    backend: mpi-operator
    version: "0.8.2"
    provider: kind
    transport: kubernetes
    configuration: kind-local
    capabilities: [submit, mpi]
    lanes: [full]
    requires: [docker, go]
    kind:
      kind_version: v0.33.0
      operator_version: "0.8.2"
{kind_section}
"""


NODE_BUILD = f"""      node_build:
        directory: stacks/kind-node
        base_image: {BASE}
        build_args: {PINS}
      worker_image: {{name: pytest-stacks/mpi-worker, tag: openmpi-5}}"""


# --- the docker shim ---------------------------------------------------------------------------

def test_run_privileged_becomes_the_capabilities_the_engine_grants() -> None:
    argv = ["run", "--name", "n", "--privileged", "--cgroupns=private", "--volume", "/var",
            "--init=false", "kindest/node:x"]
    rewritten = kind_docker.rewrite(argv)
    assert "--privileged" not in rewritten
    assert rewritten[-1] == "kindest/node:x"
    options = rewritten[1:-1]
    for flag in kind_docker.NODE_PRIVILEGES:
        assert flag in options
    assert [o for o in options if o.startswith("--cgroupns")] == ["--cgroupns=private"]
    assert options[:4] == ["--name", "n", "--volume", "/var"]


def test_separate_cgroupns_value_is_replaced_too() -> None:
    rewritten = kind_docker.rewrite(["run", "--privileged", "--cgroupns", "host", "img"])
    assert "host" not in rewritten and rewritten.count("--cgroupns=private") == 1


def test_exec_privileged_loses_the_flag_and_the_command_is_untouched() -> None:
    argv = ["exec", "--privileged", "-i", "-e", "A=1", "node", "sh", "-c", "x --privileged"]
    assert kind_docker.rewrite(argv) == ["exec", "-i", "-e", "A=1", "node", "sh", "-c",
                                         "x --privileged"]


@pytest.mark.parametrize("argv", [["ps", "-a"], ["run", "--rm", "img", "--privileged"],
                                  ["inspect", "--privileged"], []])
def test_everything_else_passes_unchanged(argv: list[str]) -> None:
    assert kind_docker.rewrite(argv) == argv


class _Answer:
    """A docker that gives one answer to everything, and remembers what it was asked."""

    def __init__(self, code: int, stderr: str = "") -> None:
        self.code, self.stderr = code, stderr
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        return subprocess.CompletedProcess(list(argv), self.code, "", self.stderr)


_answer = _Answer


def test_a_refusing_engine_is_recognised_once() -> None:
    runner = _answer(125, "runc create failed: unable to start container process: "
                          "unable to apply caps: operation not permitted")
    assert kind_docker.privileged_refused("img", runner) is True
    assert kind_docker.privileged_refused("img", runner) is True
    assert len(runner.calls) == 1
    assert "--privileged" in runner.calls[0]


def test_an_engine_that_allows_it_needs_no_shim() -> None:
    assert kind_docker.privileged_refused("img", _answer(0)) is False


def test_another_failure_is_not_taken_for_a_refusal() -> None:
    with pytest.raises(StacksError, match="No such image"):
        kind_docker.privileged_refused("img", _answer(125, "Unable to find image: No such image"))


def test_the_shim_execs_the_real_cli_with_rewritten_arguments(tmp_path: Path) -> None:
    """The program kind really runs: a recording stand-in for the real CLI gets the call."""
    record = tmp_path / "args"
    fake = tmp_path / "real-docker"
    fake.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n')
    fake.chmod(0o755)
    env = {**os.environ, kind_docker.REAL_DOCKER: str(fake), kind_docker.UNPRIVILEGED: "1"}
    done = subprocess.run([sys.executable, "-m", "pytest_stacks.providers.kind_docker",
                           "run", "--privileged", "--name", "n", "img"],
                          env=env, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    assert record.read_text().split("\n")[:-1] == ["run", "--name", "n",
                                                   *kind_docker.NODE_PRIVILEGES, "img"]


def test_the_shim_without_the_real_cli_says_so() -> None:
    env = {k: v for k, v in os.environ.items() if k != kind_docker.REAL_DOCKER}
    done = subprocess.run([sys.executable, "-m", "pytest_stacks.providers.kind_docker",
                           "ps"], env=env, capture_output=True, text=True, timeout=30,
                          check=False)
    assert done.returncode == 125 and kind_docker.REAL_DOCKER in done.stderr


def _shim(tmp_path: Path, *, refused: bool) -> tuple[Path, Path, dict[str, str]]:
    """The shim kind_wrapper writes, a recording stand-in for the real CLI, and the
    environment the wrapper gives kind."""
    record = tmp_path / "args"
    real = tmp_path / "real-docker"
    real.write_text(f'#!/bin/sh\nprintf "%s\\n" "$@" > {record}\n')
    real.chmod(0o755)
    wrapper = Path(kind_docker.kind_wrapper(Path("/bin/true"), "img", tmp_path / "w", "net",
                                            _answer(125 if refused else 0, "apply caps")))
    env = {**os.environ, kind_docker.REAL_DOCKER: str(real)}
    if refused:
        env[kind_docker.UNPRIVILEGED] = "1"
    assert f"{kind_docker.UNPRIVILEGED}=1" in wrapper.read_text() or not refused
    return tmp_path / "w" / "docker", record, env


def _through(shim: Path, record: Path, env: dict[str, str], *argv: str) -> list[str]:
    done = subprocess.run([str(shim), *argv], env=env, capture_output=True, text=True,
                          timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return record.read_text().split("\n")[:-1]


@pytest.mark.parametrize("refused", [True, False])
def test_the_shell_shim_passes_what_needs_no_rewriting_straight_through(
        tmp_path: Path, refused: bool) -> None:
    shim, record, env = _shim(tmp_path, refused=refused)
    argv = ["inspect", "--format", "{{ index .Config.Labels \"x\" }}", "n"]
    assert _through(shim, record, env, *argv) == argv
    exec_argv = ["exec", "--privileged", "-i", "n", "cp", "/dev/stdin", "/kind/x"]
    expected = exec_argv[:1] + exec_argv[2:] if refused else exec_argv
    assert _through(shim, record, env, *exec_argv) == expected
    run = ["run", "--privileged", "--name", "n", "img"]
    expected = ["run", "--name", "n", *kind_docker.NODE_PRIVILEGES, "img"] if refused else run
    assert _through(shim, record, env, *run) == expected


def test_kubeadm_join_is_found_and_its_control_plane_named() -> None:
    assert kind_docker.joining_node(["exec", "--privileged", "c-worker2", "kubeadm", "join",
                                     "--config", "/kind/kubeadm.conf"]) == "c-worker2"
    assert kind_docker.joining_node(["exec", "--privileged", "c-worker", "kubeadm",
                                     "init"]) is None
    assert kind_docker.joining_node(["inspect", "c-worker", "kubeadm", "join"]) is None
    assert kind_docker.control_plane_of("my-c-worker2") == "my-c-control-plane"
    assert kind_docker.control_plane_of("my-c-control-plane3") == "my-c-control-plane"
    assert kind_docker.control_plane_of("my-c-worker") == "my-c-control-plane"


class _ClusterInfo:
    """A control plane whose cluster-info is signed at its ``signed_at``-th read."""

    def __init__(self, signed_at: int, stderr: str = "") -> None:
        self.signed_at, self.stderr, self.reads = signed_at, stderr, 0
        self.now = 0.0

    def run(self, argv: Sequence[str], **_: object) -> subprocess.CompletedProcess[str]:
        self.reads += 1
        assert argv[2] == "c-control-plane" and "cluster-info" in argv
        data = '{"jws-kubeconfig-abcdef":"x","kubeconfig":"y"}' \
            if self.reads >= self.signed_at else '{"kubeconfig":"y"}'
        return subprocess.CompletedProcess(list(argv), 1 if self.stderr else 0,
                                           "" if self.stderr else data, self.stderr)

    def sleep(self, seconds: float) -> None:
        self.now += seconds


def test_join_waits_for_the_signature_not_longer() -> None:
    plane = _ClusterInfo(signed_at=4)
    assert kind_docker.await_join_signature("docker", "c-worker", run=plane.run,
                                            clock=lambda: plane.now, sleep=plane.sleep)
    assert plane.reads == 4


def test_join_wait_gives_up_to_kubeadm_without_error() -> None:
    plane = _ClusterInfo(signed_at=10**6)
    assert not kind_docker.await_join_signature("docker", "c-worker", run=plane.run,
                                                clock=lambda: plane.now, sleep=plane.sleep,
                                                wait=2.0)
    assert plane.reads == 2.0 / kind_docker.JOIN_SIGNATURE_POLL_S
    gone = _ClusterInfo(signed_at=1, stderr="Error: No such container: c-control-plane")
    assert not kind_docker.await_join_signature("docker", "c-worker", run=gone.run,
                                                clock=lambda: gone.now, sleep=gone.sleep)
    assert gone.reads == 1


# --- the node image ----------------------------------------------------------------------------

def test_cluster_config_points_kubeadm_at_the_built_images() -> None:
    image = kind_node_image.KindNodeImage("pytest-stacks/kind-node:k", "v1.36.3", "v3.6.8",
                                          "v1.14.7")
    config = yaml.safe_load(image.cluster_config())
    assert config["kind"] == "Cluster" and len(config["nodes"]) == 1
    patches = [yaml.safe_load(p) for p in config["kubeadmConfigPatches"]]
    cluster = next(p for p in patches if p["kind"] == "ClusterConfiguration")
    assert cluster["imageRepository"] == kind_node_image.REPOSITORY
    assert cluster["etcd"]["local"]["imageTag"] == "v3.6.8"
    assert cluster["etcd"]["local"]["dataDir"] == "/tmp/etcd"  # the node's tmpfs
    # one member: it elects itself after 100 ms, not etcd's default 1 s
    assert cluster["etcd"]["local"]["extraArgs"] == [
        {"name": "heartbeat-interval", "value": "10"}, {"name": "election-timeout", "value": "100"}]
    assert cluster["encryptionAlgorithm"] == "ECDSA-P256"
    assert cluster["dns"]["imageTag"] == "v1.14.7"
    kubelet = next(p for p in patches if p["kind"] == "KubeletConfiguration")
    assert kubelet["failCgroupV1"] is False and kubelet["oomScoreAdj"] == 0
    refs = kind_node_image.component_images({"K8S_VERSION": "v1.36.3", "ETCD_VERSION": "v3.6.8",
                                             "COREDNS_VERSION": "v1.14.7"})
    assert refs["etcd"] == f"{kind_node_image.REPOSITORY}/etcd:v3.6.8"
    assert refs["kube-apiserver"] == f"{kind_node_image.REPOSITORY}/kube-apiserver:v1.36.3"


def test_one_control_plane_elects_no_leader() -> None:
    """The controller manager and the scheduler get --leader-elect=false as JSON patch
    operations on kubeadm's ClusterConfiguration (appended to kind's own controller-manager
    arguments, which stay; the scheduler has none of kind's)."""
    image = kind_node_image.KindNodeImage("r", "v1.36.3", "v3.6.8", "v1.14.7")
    [patch] = yaml.safe_load(image.cluster_config(nodes=2))["kubeadmConfigPatchesJSON6902"]
    assert (patch["group"], patch["version"], patch["kind"]) == (
        "kubeadm.k8s.io", "v1beta4", "ClusterConfiguration")
    operations = yaml.safe_load(patch["patch"])
    assert {"op": "add", "path": "/controllerManager/extraArgs/-",
            "value": {"name": "leader-elect", "value": "false"}} in operations
    assert {"op": "add", "path": "/scheduler/extraArgs",
            "value": [{"name": "leader-elect", "value": "false"}]} in operations


def test_a_second_node_joins_and_the_control_plane_runs_pods_too() -> None:
    image = kind_node_image.KindNodeImage("r", "v1.36.3", "v3.6.8", "v1.14.7")
    config = yaml.safe_load(image.cluster_config(nodes=2))
    assert [n["role"] for n in config["nodes"]] == ["control-plane", "worker"]
    patches = [yaml.safe_load(p) for p in config["kubeadmConfigPatches"]]
    [init] = [p for p in patches if p["kind"] == "InitConfiguration"]
    assert init["nodeRegistration"]["taints"] == []
    single = yaml.safe_load(image.cluster_config())
    assert [n["role"] for n in single["nodes"]] == ["control-plane"]
    assert "InitConfiguration" not in image.cluster_config()
    with pytest.raises(StacksError, match="1 to 4 nodes"):
        image.cluster_config(nodes=5)


def test_missing_pins_are_named() -> None:
    with pytest.raises(StacksError, match="ETCD_VERSION, COREDNS_VERSION"):
        kind_node_image.pins(Path("stacks/kind-node"), {"K8S_VERSION": "v1.36.3",
                                                        "CRI_TOOLS_VERSION": "v1"}, "stack s")


def test_the_repository_node_folder_has_what_the_builder_copies() -> None:
    folder = REPO / "stacks" / "kind-node"
    for name in ("Dockerfile", "entrypoint", "containerd.toml", "crictl.yaml", "default-kubelet",
                 "units/kubelet.service", "units/containerd.service",
                 "units/kubelet.service.d/10-kubeadm.conf", "manifests/default-cni.yaml",
                 "manifests/default-storage.yaml"):
        assert (folder / name).is_file(), name
    assert (folder / kind_node_image.PAUSE_SOURCE / "go.mod").is_file()
    cni = (folder / "manifests/default-cni.yaml").read_text()
    # Each node's range comes from its Node (spec.podCIDR), routes to the others' ranges.
    assert "{{" not in cni and ".spec.podCIDR" in cni and "ip route replace" in cni
    assert "@TOOLS_IMAGE@" in cni  # filled in by the Dockerfile


# --- the manifest ------------------------------------------------------------------------------

def test_node_build_is_read_and_described() -> None:
    stack = loads(manifest(NODE_BUILD), REPO / "m.yaml").stacks[0]
    assert stack.kind is not None and stack.kind.node_image is None
    build = stack.kind.node_build
    assert build is not None and build.directory == REPO / "stacks" / "kind-node"
    assert build.base_image.seed == "bookworm" and build.build_args["ETCD_VERSION"] == "v3.6.8"
    assert "built here from kind-node" in stack.kind.node_reference


def test_both_or_neither_node_image_and_node_build_is_refused() -> None:
    both = NODE_BUILD + f'\n      node_image: {{name: kindest/node, tag: v1, digest: "{DIGEST}"}}'
    with pytest.raises(ManifestError):
        loads(manifest(both), REPO / "m.yaml")
    with pytest.raises(ManifestError):
        loads(manifest("      worker_image: {name: w, tag: t}"), REPO / "m.yaml")


def test_a_node_build_folder_without_dockerfile_names_the_field(tmp_path: Path) -> None:
    text = manifest(NODE_BUILD.replace("stacks/kind-node", "nowhere"))
    with pytest.raises(ManifestError, match=r"kind\.node_build\.directory.*no Dockerfile"):
        loads(text, tmp_path / "m.yaml")


# --- the provider ------------------------------------------------------------------------------

class Cluster:
    """Answers kind's and kubectl's calls like a cluster whose kubelet is ``kubelet``."""

    def __init__(self, kubelet: str = "v1.36.3", refuse_privileged: bool = True) -> None:
        self.calls: list[list[str]] = []
        self.kubelet = kubelet
        self.refuse = refuse_privileged

    def __call__(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        line = " ".join(argv)
        out, code, err = "", 0, ""
        if "--privileged" in argv and self.refuse:
            code, err = 125, "unable to apply caps: operation not permitted"
        elif "--raw=/readyz" in argv:  # never ready to an early apply (tested on its own)
            code, err = 1, "connection refused"
        elif "kubeletVersion" in line:
            out = self.kubelet
        elif "containerRuntimeVersion" in line:
            out = "containerd://1.6.20"
        elif "--version" in argv:
            out = "mpi-operator v0.8.2"
        return subprocess.CompletedProcess(list(argv), code, out, err)


@pytest.fixture
def local_stack() -> Stack:
    return loads(manifest(NODE_BUILD), REPO / "m.yaml").stacks[0]


@pytest.fixture
def offline(monkeypatch: pytest.MonkeyPatch, kind_tools: Path) -> Path:
    tools = kind_tools
    monkeypatch.setattr(images, "ensure_base_image", lambda base: f"seeded:{base.seed}")
    monkeypatch.setattr(images, "ensure_image", lambda *a, **k: pytest.fail("no pull here"))
    monkeypatch.setattr(dockerutil, "image_exists", lambda reference: True)
    monkeypatch.setattr(dockerutil, "docker_cli", lambda: "/usr/bin/docker")
    built: list[tuple[Path, str]] = []

    def build(folder: Path, args: dict[str, str], base: str, *, preload: Sequence[str] = (),
              **_: object) -> kind_node_image.KindNodeImage:
        built.append((folder, base))
        return kind_node_image.KindNodeImage("pytest-stacks/kind-node:abc", args["K8S_VERSION"],
                                             args["ETCD_VERSION"], args["COREDNS_VERSION"],
                                             tuple(preload))
    monkeypatch.setattr(kind_node_image, "ensure_node_image", build)
    return tools


def test_up_with_a_built_node_image_uses_kind_with_its_config_and_the_shim(
        local_stack: Stack, ctx: RunContext, offline: Path) -> None:
    runner = Cluster()
    info = kind.KindProvider(runner).up(local_stack, ctx)
    commands = [" ".join(c) for c in runner.calls]
    create = next(c for c in runner.calls if "create" in c and "cluster" in c)
    wrapper = Path(create[0])
    assert wrapper == ctx.run_dir / "kind-kind-local" / "kind" and os.access(wrapper, os.X_OK)
    text = wrapper.read_text()
    assert f"PATH={wrapper.parent}:" in text and (wrapper.parent / "docker").is_file()
    assert f"KIND_EXPERIMENTAL_DOCKER_NETWORK={info.project}" in text
    assert str(offline / "bin/kind") in text
    assert f"{kind_docker.REAL_DOCKER}=/usr/bin/docker" in text
    assert "--image pytest-stacks/kind-node:abc" in " ".join(create)
    config = Path(create[create.index("--config") + 1])
    assert "failCgroupV1: false" in config.read_text()
    operator = f"{kind_node_image.REPOSITORY}/mpi-operator:"
    # Our operator build is in the node image built here; a worker image this stack does not
    # build (no compose folder) is loaded into the cluster.
    loaded = [c.split(" load docker-image ")[1] for c in commands if " load docker-image " in c]
    assert loaded == [f"pytest-stacks/mpi-worker:openmpi-5 --name {info.project}"], loaded
    apply = next(c for c in runner.calls if "apply" in c)
    assert apply[0] == str(offline / "bin/kubectl")  # our build, not the host's kubectl
    assert operator in Path(apply[-1]).read_text()
    assert info.endpoints["kubelet_version"] == "1.36.3"
    assert info.endpoints["operator_version"] == "0.8.2"
    assert info.endpoints["container_runtime"] == "containerd://1.6.20"


def test_a_worker_built_here_is_in_the_node_image_and_nothing_is_loaded(
        ctx: RunContext, offline: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    built: list[str] = []
    monkeypatch.setattr(dockerutil, "ensure_built_image",
                        lambda reference, *a, **k: built.append(reference))
    preloads: list[tuple[str, ...]] = []
    make = kind_node_image.ensure_node_image

    def node_image(*args: object, **kwargs: object) -> kind_node_image.KindNodeImage:
        image = make(*args, **kwargs)  # type: ignore[arg-type]
        preloads.append(image.preloaded)
        return image
    monkeypatch.setattr(kind_node_image, "ensure_node_image", node_image)
    text = manifest(NODE_BUILD).replace(
        "    kind:\n", f"    base_image: {BASE}\n    compose: {{directory: stacks/mpi-worker, "
                      f"service: worker}}\n    kind:\n", 1)
    stack = loads(text, REPO / "m.yaml").stacks[0]
    runner = Cluster()
    kind.KindProvider(runner).up(stack, ctx)
    [preloaded] = preloads
    assert "pytest-stacks/mpi-worker:openmpi-5" in preloaded and built
    assert any(r.startswith(f"{kind_node_image.REPOSITORY}/mpi-operator:") for r in preloaded)
    assert not any(" load " in " ".join(c) for c in runner.calls), runner.calls


def test_an_engine_that_allows_privileged_keeps_kinds_privileges(
        local_stack: Stack, ctx: RunContext, offline: Path) -> None:
    """The shim is still there (it holds kubeadm join until the signature), but rewrites
    nothing: the engine grants --privileged itself."""
    runner = Cluster(refuse_privileged=False)
    kind.KindProvider(runner).up(local_stack, ctx)
    create = next(c for c in runner.calls if "create" in c and "cluster" in c)
    text = Path(create[0]).read_text()
    assert f"exec {offline / 'bin/kind'}" in text
    assert kind_docker.UNPRIVILEGED not in text
    assert (Path(create[0]).parent / "docker").exists()


def test_a_kubelet_of_another_version_is_an_infrastructure_error(
        local_stack: Stack, ctx: RunContext, offline: Path) -> None:
    with pytest.raises(InfrastructureError, match=r"kubelet reports \['v1.35.0'\].*v1.36.3"):
        kind.KindProvider(Cluster(kubelet="v1.35.0")).up(local_stack, ctx)


def test_build_makes_the_images_and_starts_nothing(local_stack: Stack, ctx: RunContext,
                                                  offline: Path,
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """`pytest-stacks build`: what up would make first (the node image, the operator's
    image), and no cluster, network or owner record."""
    monkeypatch.setattr(dockerutil, "image_exists", lambda reference: False)
    static: list[str] = []
    monkeypatch.setattr(kind_node_image, "static_image",
                        lambda context, binary, reference, **_: static.append(reference))
    runner = Cluster()
    kind.KindProvider(runner).build(local_stack, ctx)
    commands = [" ".join(c) for c in runner.calls]
    assert not any("create cluster" in c or "network create" in c or " load " in c
                   for c in commands), commands
    assert static and static[0].startswith(f"{kind_node_image.REPOSITORY}/mpi-operator:")
    assert not (ctx.run_dir.parent / "kind-clusters").exists()


def test_the_controller_manager_runs_what_join_and_the_stacks_need() -> None:
    """kubeadm's own ``*,bootstrap-signer,token-cleaner`` is replaced by a list: what
    ``kubeadm join`` and the CNI wait for stays in it, each once, all in the canonical
    ``-controller`` form (whether 1.36 knows every name is proven by a real cluster only)."""
    image = kind_node_image.KindNodeImage("r", "v1.36.3", "v3.6.8", "v1.14.7")
    [patch] = yaml.safe_load(image.cluster_config(nodes=2))["kubeadmConfigPatchesJSON6902"]
    [controllers] = [op["value"]["value"] for op in yaml.safe_load(patch["patch"])
                     if op["path"] == "/controllerManager/extraArgs/-"
                     and op["value"]["name"] == "controllers"]
    names = controllers.split(",")
    assert "*" not in names and len(names) == len(set(names))
    for needed in ("bootstrap-signer-controller", "certificatesigningrequest-approving-controller",
                   "certificatesigningrequest-signing-controller", "node-ipam-controller",
                   "daemonset-controller", "root-ca-certificate-publisher-controller"):
        assert needed in names
    assert all(name.endswith("-controller") for name in names)


def test_the_provider_waits_for_every_node_to_register_before_waiting_for_ready() -> None:
    """kind returns once a worker's `kubeadm join` has; its Node appears a moment later, and
    `kubectl wait --all` alone would pass on the control plane (seen in a loaded run)."""
    answers = iter(["v1.36.3", "v1.36.3", "v1.36.3 v1.36.3"])
    asked: list[list[str]] = []

    def check(argv: Sequence[str]) -> str:
        asked.append(list(argv))
        return next(answers)

    found = kind_nodes.registered_kubelets(check, ["kubectl"], 2, "kind-local", timeout=10)
    assert found == ["v1.36.3", "v1.36.3"] and len(asked) == 3
    assert asked[0] == ["kubectl", "get", "nodes", "-o", kind_nodes.KUBELET_VERSIONS]


def test_a_node_that_never_registers_is_an_infrastructure_error_naming_the_counts() -> None:
    with pytest.raises(InfrastructureError, match=r"registered 1 node\(s\) after 1 s; "
                                                  r"kind.nodes asks 2"):
        kind_nodes.registered_kubelets(lambda argv: "v1.36.3", ["kubectl"], 2, "kind-local",
                                       timeout=1)
