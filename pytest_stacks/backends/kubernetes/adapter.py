"""How the Kubernetes driver is used in a stack: the control-plane container
(``stacks/k8s-controlplane``, kwok nodes), the control plane with a real kubelet node
(``stacks/k8s-node``, configuration ``controlplane-kubelet``), a kind cluster, or the
in-process fake.

The control plane's pinned programs are built on the host from their Go modules (cached by
version, see :mod:`pytest_stacks.gobuild`) and mounted into the container. Readiness is the
components' own: apiserver ``/readyz``, the MPIJob CRD Established, the operator's lease held,
the kwok node Ready. Per run, the container's admin kubeconfig (a fresh PKI at every start)
is copied to a private folder of the run directory, never printed. The versions the stack
reports are observed: ``/version`` of the apiserver (checked against the pin here) and the
operator binary's own ``--version`` (checked against the stack's version by the lifecycle).
On a real node the kubelet's version (the Node's ``nodeInfo``) must be the Kubernetes pin and
CoreDNS's ``-version`` its pin; containerd's version is recorded as observed.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path

from pytest_stacks.backends.kubernetes import builds as k8s_builds
from pytest_stacks.backends.kubernetes.api import KubeApi
from pytest_stacks.backends.kubernetes.cleanup import reap
from pytest_stacks.backends.kubernetes.driver import KubernetesClient
from pytest_stacks.backends.kubernetes.node_images import ensure_node_images
from pytest_stacks.backends.kubernetes.objects import DRIVER_LAUNCHER_ENV, Runtime
from pytest_stacks.backends.kubernetes.shared_namespace import SharedNamespaceClient
from pytest_stacks.contract import JobClient
from pytest_stacks.errors import InfrastructureError, StacksError
from pytest_stacks.gobuild import GoModuleBuild, ensure_built, resolve_version
from pytest_stacks.manifest import Stack
from pytest_stacks.polling import poll_until
from pytest_stacks.transports import Transport

API_PORT = "K8S_API_PORT"
STATE = "/var/lib/k8s"
LOGS = "/var/log/k8s"
READY = "/opt/pytest-stacks/ready.sh"
OPERATOR = "/opt/k8s/operator/bin/mpi-operator"
KUBECTL = "/opt/k8s/kubernetes/bin/kubectl"
NODE_CONFIGURATION = "controlplane-kubelet"
NODE_NAME = "pytest-stacks-node"
COREDNS = "/opt/k8s/coredns/bin/coredns"


#: The Go module each build argument pins (a canary may float it with a Go version query).
GO_PINS = {"K8S_VERSION": "k8s.io/kubernetes", "ETCD_VERSION": "go.etcd.io/etcd/server/v3",
           "KWOK_VERSION": "sigs.k8s.io/kwok", "COREDNS_VERSION": "github.com/coredns/coredns",
           "MPI_OPERATOR_VERSION": "github.com/kubeflow/mpi-operator"}


def _pin(stack: Stack, arg: str) -> str:
    """The exact version a build argument pins; a Go query (``latest``, ``v1.37``: a canary's
    floating pin) resolved through the module proxy."""
    value = stack.compose.build_args.get(arg, "") if stack.compose else ""
    if not value:
        raise StacksError(f"stack {stack.name}: compose.build_args.{arg} is not set; it pins a "
                          f"component of the control plane")
    return resolve_version(GO_PINS[arg], value) if arg in GO_PINS else value


def runs_pods(stack: Stack) -> bool:
    """Whether the stack has a real node (``stacks/k8s-node``: a kubelet with containerd) on
    which pods execute, rather than kwok's simulated nodes."""
    return stack.configuration == NODE_CONFIGURATION


def control_plane_builds(stack: Stack) -> dict[str, GoModuleBuild]:
    """The go.mod builds of a control-plane stack, from its pins: the control plane and the
    operator, then kwok (simulated nodes) or the node's kubelet, kube-proxy and CoreDNS."""
    k8s, etcd = _pin(stack, "K8S_VERSION"), _pin(stack, "ETCD_VERSION")
    operator = _pin(stack, "MPI_OPERATOR_VERSION")
    builds = {"kubernetes": k8s_builds.control_plane(k8s), "etcd": k8s_builds.etcd(etcd),
              "operator": k8s_builds.mpi_operator(operator)}
    if runs_pods(stack):
        # Its own build (same module, same stamps): the kwok stack's programs keep their key.
        builds["node"] = k8s_builds.node(k8s)
        builds["coredns"] = k8s_builds.coredns(_pin(stack, "COREDNS_VERSION"))
    else:
        builds["kwok"] = k8s_builds.kwok(_pin(stack, "KWOK_VERSION"), k8s)
    return builds


def write_private(path: Path, text: str) -> None:
    """A credential file: 0600 from its first byte, in a 0700 folder."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    path.parent.chmod(0o700)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def make_client(stack: Stack, kubeconfig: Path, run_dir: Path,
                operator_version: str) -> KubernetesClient:
    from pytest_stacks.backends.kubernetes.lightkube_api import LightkubeApi

    api = LightkubeApi.from_kubeconfig(kubeconfig)
    return client_for(stack, api, run_dir, operator_version)


def run_namespace(run_id: str) -> str:
    """The run's namespace: a valid DNS label whatever the run id looks like."""
    slug = re.sub(r"[^a-z0-9-]+", "-", run_id.lower()).strip("-")
    return f"pst-{slug}"[:63].rstrip("-")


#: The worker images' MPIs this driver launches, by the operator's spec.mpiImplementation.
MPI_IMPLEMENTATIONS = ("OpenMPI", "MPICH")


def runtime_of(options: Mapping[str, object]) -> Runtime:
    """How the stack's pods meet their node, from its options: ``execution`` (``simulated``,
    the default: kwok or the double; ``real``: a kubelet runs them), ``image_pull_policy``
    and ``cpu_request`` (real nodes: images without a registry, a node with few cores),
    ``stager`` (the image of a job's staging containers, :mod:`staging`)."""
    execution = str(options.get("execution", "simulated"))
    if execution not in ("simulated", "real"):
        raise StacksError(f"option execution={execution!r}: expected 'simulated' or 'real'")
    mpi = str(options.get("mpi_implementation", "OpenMPI"))
    if mpi not in MPI_IMPLEMENTATIONS:
        raise StacksError(f"option mpi_implementation={mpi!r}: expected one of "
                          f"{', '.join(MPI_IMPLEMENTATIONS)} (the MPI of the worker image)")
    return Runtime(real=execution == "real",
                   pull_policy=str(options.get("image_pull_policy", "")),
                   cpu_request=str(options.get("cpu_request", "")), mpi=mpi,
                   spread=bool(options.get("spread_workers", False)),
                   stager=str(options.get("stager") or ""))


def driver_note(stack: Stack) -> str:
    """Where MPIJobs really run, the launcher variable the driver adds (see
    :data:`objects.DRIVER_LAUNCHER_ENV`): the report names it, so a user with an own client
    knows the contract's ``mpi`` test passes with it."""
    runtime = runtime_of(stack.options)
    if "mpi" not in stack.capabilities or not runtime.real or runtime.mpi != "OpenMPI":
        return ""
    env = ", ".join(f"{k}={v}" for k, v in DRIVER_LAUNCHER_ENV.items())
    return (f"adds {env} to every MPIJob's launcher: the operator sets only Open MPI 4's "
            f"OMPI_MCA_orte_default_hostfile, which Open MPI 5 ignores (without it every rank "
            f"runs on the launcher; tests/backend/test_kubernetes_documented_mpijob.py)")


def client_for(stack: Stack, api: KubeApi, run_dir: Path, operator_version: str, *,
               shared_namespace: str = "") -> KubernetesClient:
    """``shared_namespace``: the run's objects go there, by label, instead of into a namespace
    of the run's own (a site where the user may not create namespaces)."""
    options = stack.options
    kind = SharedNamespaceClient if shared_namespace else KubernetesClient
    return kind(
        api, stack.name, namespace=shared_namespace or run_namespace(run_dir.name),
        run_id=run_dir.name,
        image=str(options.get("image", "pytest-stacks/mpi-worker:openmpi")),
        shape=str(options.get("job_shape", "pod")), workers=int(options.get("workers", 2)),
        operator_version=operator_version,
        invalid_after=float(options.get("invalid_after", 30)), runtime=runtime_of(options))


def reap_dead_runs(client: KubernetesClient, run_dir: Path) -> list[str]:
    """Namespaces of runs that died on this cluster (a plane kept by `pytest-stacks up` and
    borrowed by many runs): removed, each with a tombstone line in this run's directory. A run
    is alive while its run directory exists (dead runs' directories are reaped at start)."""
    root = run_dir.parent.parent if run_dir.parent.name == "kept" else run_dir.parent

    def alive(run_id: str) -> bool:
        return any(folder.is_dir() for folder in (run_dir, root / run_id, root / "kept" / run_id)
                   if folder.name == run_id)

    try:
        return reap(client.api, alive, run_dir / "tombstones.jsonl")
    except Exception as exc:  # reaping is housekeeping: it must not fail this run's attach
        return [f"reaping dead runs' namespaces failed: {exc}"]


class ControlPlaneAdapter:
    def host_programs(self, stack: Stack) -> list[GoModuleBuild]:
        return list(control_plane_builds(stack).values())

    def host_environment(self, stack: Stack, timeout: float) -> dict[str, str]:
        """Build (once per version) and hand the compose file each program folder; a real
        node also gets the folder of its image tars and the pause image's name. The node's
        images come first: they need no Go program, so on a new machine they are built while
        the programs still compile elsewhere, not after them."""
        env: dict[str, str] = {}
        if runs_pods(stack):
            node_images = ensure_node_images(stack, timeout=timeout)
            env.update(K8S_IMAGES_DIR=str(node_images.folder), K8S_PAUSE_IMAGE=node_images.pause)
        env.update({f"K8S_{name.upper()}_DIR": str(ensure_built(build, timeout=timeout))
                    for name, build in control_plane_builds(stack).items()})
        return env

    def wait_ready(self, transport: Transport, timeout: float) -> None:
        def ask() -> tuple[bool, str]:
            result = transport.run([READY], user="root", timeout=30)
            return result.ok, (result.stdout or result.stderr).strip()[-300:]

        # Asked often: the stack's ready.sh asks the API with curl, milliseconds a time.
        poll_until(ask, lambda answer: answer[0], timeout=timeout, interval=0.25,
                   first_interval=0.25, on_timeout=lambda answer: f"last answer: {answer[1]}")

    def liveness(self, transport: Transport) -> str:
        """Whether the control plane can still serve, asked after a test failed on the stack:
        "" when ready.sh's every check says yes (the API server's /readyz, the MPIJob CRD,
        the operator's lease, the node Ready); else the fault with its answer. Bounded."""
        result = transport.run([READY], user="root", timeout=20)
        if result.ok:
            return ""
        said = " ".join((result.stdout or result.stderr).split())[-300:]
        return f"control plane not ready ({said or f'exit {result.returncode}'})"

    def prepare(self, stack: Stack, transport: Transport, run_dir: Path,
                ports: dict[str, int]) -> dict[str, str]:
        if API_PORT not in ports:
            raise InfrastructureError(stack.name, f"no {API_PORT} was published for the stack")
        # Read with cat: the state folder is a tmpfs, which `docker cp` cannot see.
        read = transport.run(["cat", f"{STATE}/admin.kubeconfig"], user="root", timeout=30)
        if not read.ok or "server: https://127.0.0.1:6443" not in read.stdout:
            raise InfrastructureError(stack.name, "the control plane wrote no admin kubeconfig "
                                      f"({read.stderr.strip()[:200]})")
        text = read.stdout.replace(
            "server: https://127.0.0.1:6443", f"server: https://127.0.0.1:{ports[API_PORT]}")
        kubeconfig = run_dir / "tokens" / stack.name / "kubeconfig"
        write_private(kubeconfig, text)
        endpoints = {"kubeconfig": str(kubeconfig),
                     "operator_version": self._operator_version(stack, transport),
                     "kubernetes_version": self._kubernetes_version(stack, kubeconfig, run_dir)}
        if runs_pods(stack):
            endpoints.update(self._node_versions(stack, transport, kubeconfig, run_dir))
        return endpoints

    def _node_versions(self, stack: Stack, transport: Transport, kubeconfig: Path,
                       run_dir: Path) -> dict[str, str]:
        """The real node's programs as they report themselves: the kubelet (the Node's
        nodeInfo) and CoreDNS must be their pins; containerd is recorded as observed."""
        client = make_client(stack, kubeconfig, run_dir, "")
        try:
            node = client.api.get("Node", None, NODE_NAME)
        finally:
            client.close()
        info = ((node or {}).get("status") or {}).get("nodeInfo") or {}
        kubelet = str(info.get("kubeletVersion", "")).lstrip("v")
        pinned = _pin(stack, "K8S_VERSION").lstrip("v")
        if kubelet != pinned:
            raise InfrastructureError(stack.name, f"node {NODE_NAME}'s kubelet reports "
                                      f"{kubelet!r} but the manifest pins {pinned!r}")
        said = transport.run([COREDNS, "-version"], user="root", timeout=30)
        found = re.search(r"CoreDNS-(\d+\.\d+\.\d+)", said.stdout + said.stderr)
        coredns = found.group(1) if found else ""
        if coredns != _pin(stack, "COREDNS_VERSION").lstrip("v"):
            raise InfrastructureError(stack.name, f"CoreDNS reports {coredns or 'nothing'!r} "
                                      f"but the manifest pins {_pin(stack, 'COREDNS_VERSION')!r}")
        return {"kubelet_version": kubelet, "coredns_version": coredns,
                "container_runtime": str(info.get("containerRuntimeVersion", ""))}

    def _operator_version(self, stack: Stack, transport: Transport) -> str:
        result = transport.run([OPERATOR, "--version"], user="root", timeout=30)
        found = re.search(r"v?(\d+\.\d+\.\d+)", result.stdout + result.stderr)
        if not found:
            raise InfrastructureError(stack.name, f"mpi-operator --version said nothing usable: "
                                      f"{(result.stdout + result.stderr).strip()[:300]}")
        return found.group(1)

    def _kubernetes_version(self, stack: Stack, kubeconfig: Path, run_dir: Path) -> str:
        client = make_client(stack, kubeconfig, run_dir, "")
        try:
            observed = client.versions()["kubernetes"]
        finally:
            client.close()
        pinned = _pin(stack, "K8S_VERSION").lstrip("v")
        if observed != pinned:
            raise InfrastructureError(stack.name, f"the apiserver reports Kubernetes "
                                      f"{observed!r} but the manifest pins {pinned!r}")
        return observed

    def client(self, stack: Stack, transport: Transport, endpoints: Mapping[str, str],
               run_dir: Path) -> JobClient:
        client = make_client(stack, Path(endpoints["kubeconfig"]), run_dir,
                             endpoints.get("operator_version", ""))
        reap_dead_runs(client, run_dir)
        return client

    def daemon_logs(self, transport: Transport) -> str:
        """Each component's log (its last lines), then the events the API server holds: what
        the controllers, the scheduler, the kubelet and the operator did to which object."""
        script = (f"for f in {LOGS}/*.log; do [ -f \"$f\" ] || continue; "
                  f"echo \"===== $f\"; tail -n 60 \"$f\"; done; "
                  f"echo '===== kubectl get events -A'; {KUBECTL} --kubeconfig "
                  f"{STATE}/admin.kubeconfig get events -A --sort-by=.lastTimestamp "
                  f"| tail -n 150")
        result = transport.run(["sh", "-c", script], user="root", timeout=30)
        return result.stdout + result.stderr


def fake_client(stack: Stack, run_dir: Path,
                ) -> tuple[JobClient, Callable[[], str], Callable[[], None]]:
    """The same driver over the in-process cluster double: (client, logs, close)."""
    from pytest_stacks.backends.kubernetes.fake import FakeCluster

    cluster = FakeCluster(kubernetes_version=stack.components.get("kubernetes", "1.36.3"),
                          operator_version=stack.version)
    client = client_for(stack, cluster, run_dir, stack.version)

    def logs() -> str:
        return getattr(cluster, "daemon_log", lambda: "(the fake cluster keeps no logs)")()

    def close() -> None:
        client.close()
        cluster.close()
    return client, logs, close
