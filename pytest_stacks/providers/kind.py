"""The ``kind`` provider: a kind cluster per run and stack, with the MPI Operator installed
from its pinned release manifest and a worker image (OpenMPI + sshd) built from Debian.

Two kinds of node image. ``kind.node_image`` is kind's own, pulled by digest: the path on
GitHub-hosted runners and laptops with a registry (without one, ``up`` fails in seconds with
that reason, an infrastructure error, never a hang). ``kind.node_build`` is a node image built
on this host (:mod:`pytest_stacks.providers.kind_node_image`), which holds our build of the
pinned operator and the worker image (no ``kind load`` at bring-up, nothing from a registry).
Either way kind itself creates, loads into, exports the logs of and deletes the cluster, with
:mod:`pytest_stacks.providers.kind_docker` as its ``docker`` (which also grants what it can
where the engine refuses kind's ``--privileged``).

Run ownership is carried in the cluster name (``pst-<run>-<stack>``), an owner record beside
the run directories (:mod:`~pytest_stacks.providers.kind_owners`) and the labels of the
cluster's own docker network (``KIND_EXPERIMENTAL_DOCKER_NETWORK``; kind's shared ``kind``
network is never used): the reaper deletes dead runs' clusters, never a live run's. What the
cluster runs is checked: every kubelet reports the pinned Kubernetes (a built node image),
the operator its pinned version.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_stacks import cancellation, dockerutil, gobuild, progress
from pytest_stacks.backends.kubernetes import builds, extra_images
from pytest_stacks.errors import InfrastructureError, StacksError
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import (
    images,
    kind_docker,
    kind_failure,
    kind_node_image,
    kind_nodes,
    kind_operator,
    kind_owners,
    preflight,
)
from pytest_stacks.providers.base import Attached, RunContext, StackInfo
from pytest_stacks.transports import CommandResult

Runner = Callable[[Sequence[str], float], subprocess.CompletedProcess[str]]
CLUSTER_PREFIX = kind_owners.CLUSTER_PREFIX
OPERATOR_MANIFEST = "mpi-operator.yaml"
OPERATOR_ENTRYPOINT = kind_operator.OPERATOR_ENTRYPOINT
LOGS_FOLDER = Path(".pytest-stacks") / "kind-logs"
NETWORK_VARIABLE = kind_docker.NETWORK_VARIABLE


def run_command(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
    return cancellation.run(argv, timeout=timeout)


def cluster_name(stack: Stack, ctx: RunContext) -> str:
    slug = re.sub(r"[^a-z0-9-]", "-", stack.name.lower())
    return f"{CLUSTER_PREFIX}{ctx.run_id.rsplit('-', 1)[-1]}-{slug}"[:50]


def tools_build(stack: Stack) -> gobuild.GoModuleBuild:
    """kind itself and the operator's release manifest, from their pinned modules."""
    assert stack.kind is not None
    return gobuild.GoModuleBuild(
        name=f"kind-{stack.kind.kind_version}-mpi-operator-{stack.kind.operator_version}",
        requires={"sigs.k8s.io/kind": stack.kind.kind_version,
                  "github.com/kubeflow/mpi-operator": f"v{stack.kind.operator_version}"},
        programs={"kind": "sigs.k8s.io/kind"},
        files={OPERATOR_MANIFEST:
               "github.com/kubeflow/mpi-operator:deploy/v2beta1/mpi-operator.yaml"})


@dataclass(frozen=True)
class _Node:
    """The node image of one bring-up and what kind and kubectl need to use it."""

    reference: str
    config: str | None  # kind's cluster configuration, for a node image built here
    kubectl: str
    kubernetes: str | None  # the Kubernetes version the node must report, when known
    preloaded: tuple[str, ...] = ()  # images already in the node: no `kind load` of them


class KindProvider:
    def __init__(self, runner: Runner = run_command) -> None:
        self._run = runner

    def preflight(self, stack: Stack, ctx: RunContext) -> None:
        """Everything that can refuse in seconds (the engine, the node image present or
        pullable, a base to build one from, Go for kind itself), before any build."""
        assert stack.kind is not None
        preflight.engine(stack)
        if stack.kind.node_image is not None:
            preflight.image_obtainable(stack.kind.node_image.reference)
        else:
            assert stack.kind.node_build is not None
            preflight.base_obtainable(stack.kind.node_build.base_image)
        if stack.kind.worker_image is not None and stack.base_image is not None:
            preflight.base_obtainable(stack.base_image)
        preflight.go_toolchain()

    def programs(self, stack: Stack) -> list[gobuild.GoModuleBuild]:
        """kind itself, the operator, and the node image's programs when it is built here."""
        assert stack.kind is not None
        found = [tools_build(stack)]
        build = stack.kind.node_build
        if build is not None:
            pins = kind_node_image.pins(build.directory, dict(build.build_args),
                                        f"stack {stack.name}")
            found += [*kind_node_image.program_builds(pins).values(),
                      builds.mpi_operator(f"v{stack.kind.operator_version}")]
        return found

    def build(self, stack: Stack, ctx: RunContext) -> None:
        """Everything ``up`` makes before kind creates the cluster: kind and the operator's
        manifest, the node image (or its pull), the worker and operator images."""
        assert stack.kind is not None
        try:
            self.preflight(stack, ctx)
            gobuild.ensure_built(tools_build(stack), timeout=stack.timeouts.build)
            self._node(stack)  # a node built here holds the worker and operator images
        except StacksError as exc:
            raise InfrastructureError(stack.name, str(exc)) from None
        if stack.kind.worker_image is not None:
            self._build_worker(stack)

    def up(self, stack: Stack, ctx: RunContext) -> StackInfo:
        assert stack.kind is not None
        preflight.refusing(stack.name, lambda: self.preflight(stack, ctx))
        try:
            tools = gobuild.ensure_built(tools_build(stack), timeout=stack.timeouts.build)
            node = self._node(stack)
            name = cluster_name(stack, ctx)
            kind = kind_docker.kind_wrapper(tools / "bin/kind", node.reference,
                                            ctx.run_dir / f"kind-{stack.name}", name, self._run)
        except StacksError as exc:
            raise InfrastructureError(stack.name, str(exc)) from None
        kubeconfig = ctx.run_dir / f"{stack.name}.kubeconfig"
        kind_owners.reap(self._run, ctx.run_dir.parent)  # clusters of dead runs first
        kind_owners.record_owner(ctx.run_dir.parent, name, run_id=ctx.run_id,
                                 pid=ctx.owner_pid, start=ctx.owner_start,
                                 kind=tools / "bin/kind", stack=stack.name)
        # The cluster's own network, made before kind (which then uses it) and labelled with
        # the run and its owner: whoever finds it after a crash knows whose it is, whatever
        # the run directory, and the reaper removes the nodes on it with it.
        self._check(stack, ["docker", "network", "create", "--driver=bridge",
                            "--opt=com.docker.network.bridge.enable_ip_masquerade=true",
                            *(f"--label={k}={v}" for k, v in ctx.labels(stack.name).items()),
                            name], 60)
        # Private from its first byte: kind writes the cluster's admin credentials into it.
        os.close(os.open(kubeconfig, os.O_CREAT | os.O_WRONLY, 0o600))
        info = StackInfo(provider="kind", project=name,
                         endpoints={"kubeconfig": str(kubeconfig)},
                         private={"kind": kind, "kubectl": node.kubectl})
        # No --wait: the operator's rollout needs a Ready node and _observed waits for all.
        create = [kind, "create", "cluster", "--name", name, "--image", node.reference,
                  "--kubeconfig", str(kubeconfig)]
        if node.config is not None:
            config = ctx.run_dir / f"{stack.name}.kind.yaml"
            config.write_text(node.config)
            create += ["--config", str(config)]
        pinned, early = self._pinned_manifest(stack, tools / "files" / OPERATOR_MANIFEST,
                                              ctx.run_dir, node)
        applied = self._create(stack, create, f"{name}-control-plane" if early else None,
                               pinned)
        self._install_operator(stack, info, pinned, node, applied=applied)
        info.endpoints.update(self._observed(stack, info, node))
        return info

    def _create(self, stack: Stack, create: list[str], control_plane: str | None,
                manifest: Path) -> bool:
        """``kind create cluster``, once more if kubeadm failed (seen on 2 cores under a whole
        window: init timed out waiting for its control plane). kind removes a failed cluster;
        the report keeps both failures. With ``control_plane``, the operator's ``manifest`` is
        applied there while kind joins the workers (:mod:`.kind_operator`); whether it was."""
        first = ""
        for attempt in (1, 2):
            early = kind_operator.EarlyApply(self._run, control_plane, manifest,
                                             wait_s=stack.timeouts.up).start() \
                if control_plane is not None else None
            try:
                with progress.step("kind create cluster"):
                    done = self._run(create, stack.timeouts.up)
            finally:
                applied = early.finish() if early is not None else False
            said = kind_failure.summary(done.stderr or done.stdout)
            if done.returncode == 0:
                return applied
            if attempt == 1 and "kubeadm" in said:
                progress.say(f"{stack.name}: kind create cluster failed in kubeadm; once more")
                first = f"\n(the first attempt failed the same way:\n{said[-1500:]})"
                continue
            break
        raise InfrastructureError(stack.name, f"`kind create cluster` failed (exit "
                                  f"{done.returncode}):\n{said}{first}")

    def _node(self, stack: Stack) -> _Node:
        assert stack.kind is not None
        if stack.kind.node_image is not None:
            images.ensure_image(stack.kind.node_image.reference, pull_timeout=600)
            return _Node(stack.kind.node_image.reference, None, "kubectl", None)
        build = stack.kind.node_build
        assert build is not None
        worker = stack.kind.worker_image  # first: no Go program in it, built while they compile
        ours = [worker.reference, *extra_images.references(stack).values()] \
            if worker is not None and self._build_worker(stack) else []
        preload = [self._operator_image(stack), *ours]  # in the node: no 30 s `kind load`
        base = images.ensure_base_image(build.base_image)
        with progress.step("kind node image"):
            node = kind_node_image.ensure_node_image(
                build.directory, dict(build.build_args), base, where=f"stack {stack.name}",
                timeout=stack.timeouts.build, preload=preload)
        control_plane = gobuild.ensure_built(builds.control_plane(node.kubernetes),
                                             timeout=stack.timeouts.build)
        return _Node(node.reference, node.cluster_config(stack.kind.nodes),
                     str(control_plane / "bin/kubectl"),
                     node.kubernetes, node.preloaded)

    def _pinned_manifest(self, stack: Stack, manifest: Path, run_dir: Path,
                         node: _Node) -> tuple[Path, bool]:
        try:
            return kind_operator.pinned_manifest(stack, manifest, run_dir, node.preloaded)
        except StacksError as exc:
            raise InfrastructureError(stack.name, str(exc)) from None

    def _install_operator(self, stack: Stack, info: StackInfo, pinned: Path, node: _Node, *,
                          applied: bool) -> None:
        """The images kind must load (those not in the node), the operator's manifest
        (unless applied while kind ran) and its rollout."""
        assert stack.kind is not None
        kind = info.private["kind"]
        worker = stack.kind.worker_image
        if worker is not None and worker.reference not in node.preloaded:
            self._build_worker(stack)
            with progress.step("kind load worker image"):
                self._check(stack, [kind, "load", "docker-image", worker.reference, "--name",
                                    info.project], 600)
        if stack.kind.node_build is not None:
            reference = self._operator_image(stack)
            if reference not in node.preloaded:
                with progress.step("kind load operator image"):
                    self._check(stack, [kind, "load", "docker-image", reference, "--name",
                                        info.project], 600)
        kubectl = [info.private["kubectl"], "--kubeconfig", info.endpoints["kubeconfig"]]
        with progress.step("operator install and rollout"):
            if not applied:
                self._check(stack, [*kubectl, "apply", "--server-side", "-f", str(pinned)],
                            300)
            self._check(stack, [*kubectl, "-n", "mpi-operator", "rollout", "status",
                                "deployment/mpi-operator",
                                f"--timeout={stack.timeouts.ready:.0f}s"],
                        stack.timeouts.ready + 30)

    def _operator_image(self, stack: Stack) -> str:
        try:
            return kind_operator.local_operator_image(stack)
        except StacksError as exc:
            raise InfrastructureError(stack.name, str(exc)) from None

    def _observed(self, stack: Stack, info: StackInfo, node: _Node) -> dict[str, str]:
        """The versions the cluster reports: every kubelet the built node image's pin, every
        node of ``kind.nodes`` registered and Ready; the runtime; the operator's ``--version``."""
        assert stack.kind is not None
        kubectl = [info.private["kubectl"], "--kubeconfig", info.endpoints["kubeconfig"]]
        kubelet = kind_nodes.registered_kubelets(
            lambda argv: self._check(stack, argv, 60), kubectl,
            stack.kind.nodes if node.kubernetes else 0, stack.name, stack.timeouts.ready)
        self._check(stack, [*kubectl, "wait", "--for=condition=Ready", "nodes", "--all",
                            f"--timeout={stack.timeouts.ready:.0f}s"], stack.timeouts.ready + 30)
        if node.kubernetes is not None and len(kubelet) != stack.kind.nodes:
            raise InfrastructureError(stack.name, f"the cluster has {len(kubelet)} node(s), "
                                      f"kind.nodes asks {stack.kind.nodes}")
        runtime = self._check(stack, [*kubectl, "get", "nodes", "-o", "jsonpath="
                                      "{.items[0].status.nodeInfo.containerRuntimeVersion}"], 60)
        if node.kubernetes is not None and set(kubelet) != {node.kubernetes}:
            raise InfrastructureError(stack.name, f"the node's kubelet reports {kubelet} but the "
                                      f"node image pins {node.kubernetes!r}")
        said = self._run([*kubectl, "-n", "mpi-operator", "exec", "deployment/mpi-operator",
                          "--", OPERATOR_ENTRYPOINT, "--version"], 60)
        found = re.search(r"v?(\d+\.\d+\.\d+)", said.stdout + said.stderr)
        return {"kubelet_version": " ".join(sorted(set(kubelet))).lstrip("v"),
                "container_runtime": runtime.strip(),
                "operator_version": found.group(1) if found else ""}

    def _build_worker(self, stack: Stack) -> bool:
        """The worker image (OpenMPI + sshd from Debian, the MPI program) and the extra images
        the stack names, built from the stack's folders unless an image of that name was built
        from the same inputs: nothing of it comes from a registry but the Debian base. False
        where the stack names a worker image it does not build."""
        assert stack.kind is not None and stack.kind.worker_image is not None
        if stack.compose is None:
            return False
        try:
            base = images.ensure_base_image(stack.base_image) if stack.base_image else ""
            dockerutil.ensure_built_image(stack.kind.worker_image.reference,
                                      stack.compose.directory, stack.compose.build_args, base,
                                      timeout=stack.timeouts.build)
            extra_images.ensure_extra_images(stack, base, timeout=stack.timeouts.build)
        except StacksError as exc:
            raise InfrastructureError(stack.name, str(exc)) from None
        return True

    def _check(self, stack: Stack, argv: Sequence[str], timeout: float) -> str:
        done = self._run(argv, timeout)
        if done.returncode != 0:
            tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-20:])
            raise InfrastructureError(stack.name, f"`{' '.join(argv[:4])}` failed "
                                      f"(exit {done.returncode}):\n{tail}")
        return done.stdout

    def attach(self, stack: Stack, info: StackInfo, ctx: RunContext) -> Attached:
        from pytest_stacks.providers import stack_adapter

        adapter = stack_adapter(stack)
        client = adapter.client(stack, _NoTransport(), info.endpoints, ctx.run_dir)
        return Attached(client, info, lambda: self.export_logs(stack, info, ctx), client.close)

    def export_logs(self, stack: Stack, info: StackInfo, ctx: RunContext) -> str:
        """``kind export logs`` into a folder that outlives the run (the run directory goes
        at teardown): ``.pytest-stacks/kind-logs/<cluster>`` under the working directory,
        which CI uploads. The text returned (shown in the report) is what the cluster says
        now, then the last lines of the node's kubelet and containerd logs."""
        folder = (Path.cwd() / LOGS_FOLDER / info.project).resolve()
        folder.parent.mkdir(parents=True, exist_ok=True)
        done = self._run([info.private["kind"], "export", "logs", str(folder), "--name",
                          info.project], 300)
        parts = [f"kind export logs {folder}: exit {done.returncode}"
                 + ("" if done.returncode == 0 else f"\n{done.stderr.strip()[-500:]}")]
        kubectl = [info.private.get("kubectl", "kubectl"), "--kubeconfig",
                   info.endpoints["kubeconfig"]]
        for what in (["get", "nodes,pods,mpijobs,jobs", "-A", "-o", "wide"],
                     ["get", "events", "-A", "--sort-by=.lastTimestamp"]):
            said = self._run([*kubectl, *what], 60)
            lines = (said.stdout or said.stderr).strip().splitlines()
            parts.append(f"===== kubectl {' '.join(what)}\n" + "\n".join(lines[-40:]))
        for log in sorted(folder.glob("*/kubelet.log")) + sorted(folder.glob("*/containerd.log")):
            lines = log.read_text(errors="replace").splitlines()
            parts.append(f"===== {log.relative_to(folder)} (last 40 lines)\n"
                         + "\n".join(lines[-40:]))
        return "\n".join(parts)

    def down(self, stack: Stack, info: StackInfo, ctx: RunContext) -> None:
        problem = kind_owners.delete(self._run, info.private["kind"], info.project)
        if problem:
            raise InfrastructureError(stack.name, problem)
        kind_owners.owner_file(ctx.run_dir.parent, info.project).unlink(missing_ok=True)

    def is_current(self, stack: Stack, info: StackInfo) -> bool:
        return False  # kind clusters are not kept between runs

    def health(self, stack: Stack, info: StackInfo) -> tuple[str, str]:
        """Every node container running, the API server answering ``/readyz``, the MPI
        Operator available; else why not, with the node's last log lines."""
        nodes = self._run(["docker", "ps", "-a", "--filter",
                           f"label={kind_owners.KIND_CLUSTER_LABEL}={info.project}",
                           "--format", "{{.Names}} {{.State}}"], 60)
        if nodes.returncode != 0:
            return f"cannot list the cluster's node containers: {nodes.stderr.strip()[-300:]}", ""
        states = dict(line.split(" ", 1) for line in nodes.stdout.splitlines() if " " in line)
        if not states:
            return f"kind cluster {info.project} has no node container any more", ""
        for name, state in sorted(states.items()):
            if state.strip() != "running":
                logs = self._run(["docker", "logs", "--tail", "60", name], 60)
                return (f"node container {name} of kind cluster {info.project} is {state}",
                        logs.stdout + logs.stderr)
        kubectl = [info.private.get("kubectl", "kubectl"), "--kubeconfig",
                   info.endpoints["kubeconfig"]]
        ready = self._run([*kubectl, "get", "--raw", "/readyz"], 30)
        if ready.returncode != 0:
            return (f"the API server of kind cluster {info.project} does not answer /readyz",
                    (ready.stderr or ready.stdout)[-2000:])
        return kind_operator.unavailable(self._run, kubectl, info.project), ""

    def sweep_run(self, ctx: RunContext, keep: Collection[str] = ()) -> list[str]:
        return kind_owners.reap(self._run, ctx.run_dir.parent, only_run=ctx.run_id,
                                except_stacks=keep)

    def reach(self, stack: Stack, info: StackInfo) -> str:
        kubectl = info.private.get("kubectl", "kubectl")
        return (f"KUBECONFIG={info.endpoints['kubeconfig']} {kubectl} get pods -A; or docker "
                f"exec -it {info.project}-control-plane bash")


class _NoTransport:
    """A kind cluster is reached through its API server, never by running commands on it."""

    def run(self, argv: Sequence[str], *, user: str | None = None,
            timeout: float = 60.0) -> CommandResult:
        raise StacksError("kind stacks have no command transport")

    def put_files(self, directory: str, files: Mapping[str, bytes], *, user: str,
                  mode: int = 0o644) -> None:
        raise StacksError("kind stacks have no command transport")

    def get_files(self, directory: str, names: Sequence[str]) -> dict[str, bytes]:
        raise StacksError("kind stacks have no command transport")
