"""A kind node image built here, for hosts without a registry (``kind.node_build``).

kind's own node images (``kindest/node``) come from a registry. This builds the equivalent
from what this machine has: Debian packages (systemd, containerd, runc, CNI plugins) in
``stacks/kind-node``'s Dockerfile, and our Go builds of the pinned modules (kubeadm, kubelet,
kubectl, crictl in the node; kube-apiserver, kube-controller-manager, kube-scheduler,
kube-proxy, etcd, CoreDNS and the pause program as images imported into the node's
containerd, where kubeadm finds them). kind then runs it unchanged: ``kind create cluster
--image <this>`` with a cluster configuration that points kubeadm at these images
(:func:`cluster_config`).

How (kind's ``build node-image`` does the same): ``docker build`` the node's file system, then
``docker run`` it once with containerd alone to import the images, and ``docker commit`` the
result. The image is tagged by the hash of every input (module builds, the folder's files, the
base image, this recipe), so a later run finds it and a changed input builds a new one.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_stacks import cancellation, dockerutil, gobuild
from pytest_stacks.backends.kubernetes import builds
from pytest_stacks.errors import StacksError
from pytest_stacks.providers import disk

REPOSITORY = "docker.io/pytest-stacks"  # kubeadm's imageRepository for the node's images
NODE_IMAGE = "pytest-stacks/kind-node"
PAUSE_SOURCE = Path("..") / "k8s-node" / "pause"  # our pause program, shared with k8s-node
RECIPE = "2"  # how the image is made here: a change rebuilds it
PINS = ("K8S_VERSION", "ETCD_VERSION", "COREDNS_VERSION", "CRI_TOOLS_VERSION")
IMPORT_SCRIPT = """set -eu
containerd --config /etc/containerd/config.toml > /tmp/containerd.log 2>&1 &
for _ in $(seq 1 150); do ctr version > /dev/null 2>&1 && break; sleep 0.2; done
ctr -n k8s.io images import --no-unpack /images.tar
# Pinned: the kubelet's image garbage collection must never remove them (no registry to
# fetch them back from).
for ref in $(ctr -n k8s.io images ls -q); do
    ctr -n k8s.io images label "$ref" io.cri-containerd.pinned=pinned > /dev/null
done
ctr -n k8s.io images ls -q
kill %1
wait
rm -rf /tmp/* /run/containerd
"""
# Privileges of the import run: containerd needs mounts, not the node's cgroups.
IMPORT_PRIVILEGES = ("--cap-add=ALL", "--cap-drop=SYS_RESOURCE",
                     "--security-opt=seccomp=unconfined", "--security-opt=apparmor=unconfined")


@dataclass(frozen=True)
class KindNodeImage:
    """A built node image and what kubeadm must be told about its images."""

    reference: str
    kubernetes: str
    etcd: str
    coredns: str
    #: Images of this machine's engine already in the node's containerd (the MPI worker and
    #: the operator): a cluster of this node needs no ``kind load`` of them.
    preloaded: tuple[str, ...] = ()

    def cluster_config(self, nodes: int = 1) -> str:
        return cluster_config(self, nodes)


def pins(folder: Path, build_args: dict[str, str], where: str) -> dict[str, str]:
    missing = [pin for pin in PINS if not build_args.get(pin)]
    if missing:
        raise StacksError(f"{where}: kind.node_build.build_args must pin {', '.join(missing)} "
                          f"(the node image {folder.name} is built from them)")
    return {pin: build_args[pin] for pin in PINS}


def folder_digest(folder: Path) -> str:
    """The node folder's files that go into the image (its README does not)."""
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file() and p.name != "README.md"):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def component_images(p: dict[str, str]) -> dict[str, str]:
    """Image references by role, as kubeadm names them under :data:`REPOSITORY`."""
    k8s = p["K8S_VERSION"]
    return {
        "kube-apiserver": f"{REPOSITORY}/kube-apiserver:{k8s}",
        "kube-controller-manager": f"{REPOSITORY}/kube-controller-manager:{k8s}",
        "kube-scheduler": f"{REPOSITORY}/kube-scheduler:{k8s}",
        "kube-proxy": f"{REPOSITORY}/kube-proxy:{k8s}",
        "etcd": f"{REPOSITORY}/etcd:{p['ETCD_VERSION']}",
        "coredns": f"{REPOSITORY}/coredns:{p['COREDNS_VERSION']}",
    }


# The controllers a kind test plane's objects meet, not kube-controller-manager's ~45: it
# starts each one after another, each with a service-account token of its own, and with
# kubeadm's "*,bootstrap-signer,token-cleaner" that took 5.1 s after the API turned healthy
# (seen on 1.36.3, two cores), during which no DaemonSet (the CNI, kube-proxy) had a pod
# and no worker could join. Kept: what kubeadm join needs (the bootstrap signer and token
# cleaner, the kubelet's certificate requests approved and signed), the nodes' pod ranges
# (the CNI reads spec.podCIDR) and lifecycle (the not-ready taint lifted), the workloads kind
# and the stacks create (DaemonSets, Deployments and their ReplicaSets, Jobs and their TTL),
# ownership and garbage collection, namespaces and their accounts, tokens and the root CA a
# pod's projected volume names, the endpoints behind the MPI workers' Service (CoreDNS), and
# the aggregated roles of the operator's release RBAC. Nothing here uses volumes, quotas,
# StatefulSets, CronJobs, autoscalers or disruption budgets.
CONTROLLERS = ",".join((
    "bootstrap-signer-controller", "token-cleaner-controller",
    "certificatesigningrequest-approving-controller",
    "certificatesigningrequest-signing-controller",
    "node-ipam-controller", "node-lifecycle-controller",
    "daemonset-controller", "deployment-controller", "replicaset-controller",
    "job-controller", "ttl-after-finished-controller",
    "garbage-collector-controller", "pod-garbage-collector-controller", "namespace-controller",
    "serviceaccount-controller", "serviceaccount-token-controller",
    "root-ca-certificate-publisher-controller",
    "endpoints-controller", "endpointslice-controller",
    "clusterrole-aggregation-controller",
))


# etcd's data on the node's tmpfs (kind starts every node with `--tmpfs /tmp`): a cluster
# lives for one run, and on a loaded host etcd's fsyncs to disk are what stretch kubeadm
# init's API calls past their deadlines (kind's advice for CI, kubernetes-sigs/kind#845).
ETCD_DATA_DIR = "/tmp/etcd"
# A new etcd member campaigns once its election timeout has passed (1 s by default): the one
# member on loopback has no peer to miss a heartbeat from, so a tenth of etcd's defaults (the
# kwok plane's API server waited 1.0 s on "no leader" with them).
ETCD_HEARTBEAT_MS, ETCD_ELECTION_MS = 10, 100
ETCD_EXTRA_ARGS = ("      extraArgs:\n"
                   f'      - {{name: heartbeat-interval, value: "{ETCD_HEARTBEAT_MS}"}}\n'
                   f'      - {{name: election-timeout, value: "{ETCD_ELECTION_MS}"}}')
# kubeadm's every key and certificate: RSA-2048 made its `certs` phase 1.3 s of `kubeadm
# init` here (ECDSA: 0.05 s), for a run's throwaway PKI.
KEY_ALGORITHM = "ECDSA-P256"


def cluster_config(image: KindNodeImage, nodes: int = 1) -> str:
    """kind's cluster configuration for this node image: kubeadm takes every image from
    :data:`REPOSITORY` at the pinned tags (already in the node), and the kubelet runs on the
    cgroup v1 hosts this is for (``failCgroupV1: false``; kind sets nothing about it) without
    CAP_SYS_RESOURCE (``oomScoreAdj: 0``). With ``nodes`` > 1, ``nodes - 1`` workers join,
    and the control plane keeps no taint (kind leaves it on once a cluster has workers): on
    two cores every node runs pods, so MPI ranks can land on two of them.

    The controller manager and the scheduler run without leader election (one control plane),
    so they start work when the API lets them, not at their next lease retry; the bootstrap
    signer is what ``kubeadm join`` waits for (JSON patches: kind's merge of an ``extraArgs``
    list drops the scheduler's). See :data:`CONTROLLERS`, :data:`ETCD_DATA_DIR`, ``ETCD_*``."""
    if not 1 <= nodes <= 4:
        raise StacksError(f"kind.nodes={nodes}: a cluster here has 1 to 4 nodes")
    workers = "".join("- role: worker\n" for _ in range(nodes - 1))
    untainted = ("""- |
  apiVersion: kubeadm.k8s.io/v1beta4
  kind: InitConfiguration
  nodeRegistration:
    taints: []
""" if nodes > 1 else "")
    return f"""kind: Cluster
apiVersion: kind.x-k8s.io/v1alpha4
nodes:
- role: control-plane
{workers}kubeadmConfigPatches:
{untainted}- |
  apiVersion: kubeadm.k8s.io/v1beta4
  kind: ClusterConfiguration
  imageRepository: {REPOSITORY}
  encryptionAlgorithm: {KEY_ALGORITHM}
  etcd:
    local:
      imageRepository: {REPOSITORY}
      imageTag: {image.etcd}
      dataDir: {ETCD_DATA_DIR}
{ETCD_EXTRA_ARGS}
  dns:
    imageRepository: {REPOSITORY}
    imageTag: {image.coredns}
- |
  apiVersion: kubelet.config.k8s.io/v1beta1
  kind: KubeletConfiguration
  failCgroupV1: false
  oomScoreAdj: 0
kubeadmConfigPatchesJSON6902:
- group: kubeadm.k8s.io
  version: v1beta4
  kind: ClusterConfiguration
  patch: |
    - op: add
      path: /controllerManager/extraArgs/-
      value: {{name: leader-elect, value: "false"}}
    - op: add
      path: /controllerManager/extraArgs/-
      value: {{name: controllers, value: "{CONTROLLERS}"}}
    - op: add
      path: /scheduler/extraArgs
      value: [{{name: leader-elect, value: "false"}}]
"""


def _run(args: list[str], timeout: float, what: str) -> str:
    done = dockerutil.run_cli(args, timeout=timeout)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise StacksError(f"kind node image: {what} failed (exit {done.returncode}):\n{tail}")
    return done.stdout


def static_image(context: Path, binary: Path, reference: str, *, entrypoint: str,
                 timeout: float) -> None:
    """One static Go program in an image of its own (``FROM scratch``), on ``PATH``."""
    context.mkdir(parents=True)
    shutil.copyfile(binary, context / binary.name)
    (context / binary.name).chmod(0o755)
    (context / "Dockerfile").write_text(
        f"FROM scratch\nCOPY {binary.name} {entrypoint}\n"
        f"ENV PATH=/usr/local/bin:/usr/bin:/bin\nENTRYPOINT [\"{entrypoint}\"]\n")
    _run(["build", "--force-rm", "-q", "-t", reference, str(context)], timeout,
         f"building {reference}")


def program_builds(p: dict[str, str]) -> dict[str, gobuild.GoModuleBuild]:
    """The Go module builds a node image of these pins holds (the pause program aside)."""
    k8s = p["K8S_VERSION"]
    return {"control-plane": builds.control_plane(k8s), "node": builds.node(k8s),
            "kubeadm": builds.kubeadm(k8s), "etcd": builds.etcd(p["ETCD_VERSION"]),
            "coredns": builds.coredns(p["COREDNS_VERSION"]),
            "crictl": builds.crictl(p["CRI_TOOLS_VERSION"])}


def ensure_node_image(folder: Path, build_args: dict[str, str], base: str, *,
                      where: str, timeout: float, preload: Sequence[str] = ()
                      ) -> KindNodeImage:
    """The node image for ``folder`` (``stacks/kind-node``) at these pins, built on first use.

    ``preload``: images of the engine (built here before this call) imported into the node's
    containerd with the components, so every cluster of this node has them from its start
    instead of a ``kind load`` of each at each bring-up; their image ids are part of the key,
    so a rebuilt worker image makes a new node image.
    """
    p = pins(folder, build_args, where)
    k8s = p["K8S_VERSION"]
    programs = {name: gobuild.ensure_built(build, timeout=timeout)
                for name, build in program_builds(p).items()}
    programs["pause"] = gobuild.ensure_local_built("pause", (folder / PAUSE_SOURCE).resolve(),
                                                   timeout=timeout)
    preloaded = tuple(sorted({r for r in preload if r}))  # "": an image the stack has not
    key_text = "\0".join([*(f"{k}={v.name}" for k, v in sorted(programs.items())),
                          *(f"preload={r}@{dockerutil.image_id(r)}" for r in preloaded),
                          folder_digest(folder), dockerutil.image_id(base), RECIPE])
    key = hashlib.sha256(key_text.encode()).hexdigest()[:16]
    image = KindNodeImage(f"{NODE_IMAGE}:{key}", k8s, p["ETCD_VERSION"], p["COREDNS_VERSION"],
                          preloaded)
    if dockerutil.image_exists(image.reference):
        return image
    lock = gobuild.cache_root().parent / "images" / f"kind-node-{key}.lock"
    lock.parent.mkdir(parents=True, exist_ok=True)
    with cancellation.file_lock(str(lock)):  # two sessions: one builds, the other waits
        if not dockerutil.image_exists(image.reference):
            _build(folder, p, programs, image, base, key, timeout)
            disk.prune_node_images()  # each input change builds one: GBs that add up
    return image


def _build(folder: Path, p: dict[str, str], programs: dict[str, Path], image: KindNodeImage,
           base: str, key: str, timeout: float) -> None:
    components = component_images(p)
    pause = f"{REPOSITORY}/pause:{programs['pause'].name.rsplit('-', 1)[-1]}"
    tools = f"{REPOSITORY}/kind-node-tools:{key}"
    with tempfile.TemporaryDirectory(prefix="pytest-stacks-kind-node-") as scratch:
        work = Path(scratch)
        cp = programs["control-plane"] / "bin"
        for name in ("kube-apiserver", "kube-controller-manager", "kube-scheduler"):
            static_image(work / name, cp / name, components[name],
                         entrypoint=f"/usr/local/bin/{name}", timeout=timeout)
        static_image(work / "etcd", programs["etcd"] / "bin/etcd", components["etcd"],
                     entrypoint="/usr/local/bin/etcd", timeout=timeout)
        static_image(work / "coredns", programs["coredns"] / "bin/coredns",
                     components["coredns"], entrypoint="/coredns", timeout=timeout)
        static_image(work / "pause", programs["pause"] / "bin/pause", pause,
                     entrypoint="/pause", timeout=timeout)
        # kube-proxy runs iptables: Debian's, in an image that the node's CNI DaemonSet uses too.
        tools_context = work / "tools"
        tools_context.mkdir()
        # The CNI DaemonSet reads the nodes' pod ranges (kubectl) and routes to them (ip).
        shutil.copyfile(programs["node"] / "bin/kube-proxy", tools_context / "kube-proxy")
        shutil.copyfile(cp / "kubectl", tools_context / "kubectl")
        (tools_context / "Dockerfile").write_text(
            "ARG BASE_IMAGE\nFROM ${BASE_IMAGE}\n"
            "RUN apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y "
            "--no-install-recommends iptables nftables conntrack ipset kmod iproute2 && "
            "rm -rf /var/lib/apt/lists/*\n"
            "COPY kube-proxy kubectl /usr/local/bin/\n"
            "RUN chmod 0755 /usr/local/bin/kube-proxy /usr/local/bin/kubectl\n")
        _run(["build", "--force-rm", "-q", "-t", tools, "-t", components["kube-proxy"],
              f"--build-arg=BASE_IMAGE={base}", str(tools_context)], timeout,
             "building the kube-proxy/tools image")
        images_tar = work / "images.tar"
        _run(["save", "-o", str(images_tar), *components.values(), pause, tools,
              *image.preloaded], timeout, "saving the component and preloaded images")

        context = work / "node"
        shutil.copytree(folder, context, ignore=shutil.ignore_patterns("README.md"))
        (context / "bin").mkdir()
        for source in (cp / "kubectl", programs["node"] / "bin/kubelet",
                       programs["kubeadm"] / "bin/kubeadm", programs["crictl"] / "bin/crictl"):
            shutil.copyfile(source, context / "bin" / source.name)
        (context / "version").write_text(p["K8S_VERSION"] + "\n")
        layout = f"{NODE_IMAGE}-layout:{key}"
        _run(["build", "--force-rm", "-q", "-t", layout, f"--build-arg=BASE_IMAGE={base}",
              f"--build-arg=PAUSE_IMAGE={pause}", f"--build-arg=TOOLS_IMAGE={tools}",
              str(context)], timeout, "building the node's file system")
        builder = f"pytest-stacks-kind-node-build-{key}"
        dockerutil.run_cli(["rm", "-f", builder], timeout=60)
        try:
            _run(["run", "--name", builder, *IMPORT_PRIVILEGES,
                  "-v", f"{images_tar}:/images.tar:ro", "--entrypoint", "/bin/bash", layout,
                  "-c", IMPORT_SCRIPT], timeout, "importing the images into the node")
            _run(["commit", "--change", 'ENTRYPOINT ["/usr/local/bin/entrypoint", "/sbin/init"]',
                  "--change", "CMD []", builder, image.reference], timeout,
                 "committing the node image")
        finally:
            dockerutil.run_cli(["rm", "-f", builder], timeout=60)
            dockerutil.run_cli(["rmi", layout], timeout=120)
