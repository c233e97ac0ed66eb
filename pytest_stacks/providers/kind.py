"""The ``kind`` provider: a kind cluster per run and stack, with the MPI Operator installed
from its pinned release manifest and a worker image (OpenMPI + sshd) built from Debian.

The path on GitHub-hosted runners and laptops with a registry. kind pulls its node image by
digest, which no host without a registry can do: there ``up`` fails in seconds with that reason
(an infrastructure error), never a hang. kind has no labels of its own for clusters, so run
ownership is carried in the cluster name (``pst-<run>-<stack>``) and in an owner record beside
the run directories; the reaper deletes dead runs' clusters and never a live run's, or the
shared ``kind`` docker network.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from pytest_stacks import cancellation, gobuild
from pytest_stacks.errors import InfrastructureError, StacksError
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import images
from pytest_stacks.providers.base import Attached, RunContext, StackInfo
from pytest_stacks.providers.labels import owner_alive
from pytest_stacks.transports import CommandResult

Runner = Callable[[Sequence[str], float], subprocess.CompletedProcess[str]]
KIND_CLUSTER_LABEL = "io.x-k8s.kind.cluster"
CLUSTER_PREFIX = "pst-"
OPERATOR_MANIFEST = "mpi-operator.yaml"


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


def pin_operator_image(manifest: str, reference: str) -> str:
    """The release manifest's floating operator image (``mpioperator/mpi-operator:0.8``)
    replaced by the pinned reference (tag and digest)."""
    pinned, count = re.subn(r"(image:\s*)\S*mpi-operator:\S+", rf"\g<1>{reference}", manifest)
    if count == 0:
        raise StacksError("the operator's release manifest names no mpi-operator image to pin")
    return pinned


class KindProvider:
    def __init__(self, runner: Runner = run_command) -> None:
        self._run = runner

    def up(self, stack: Stack, ctx: RunContext) -> StackInfo:
        assert stack.kind is not None
        try:
            images.ensure_image(stack.kind.node_image.reference, pull_timeout=600)
            tools = gobuild.ensure_built(tools_build(stack), timeout=stack.timeouts.build)
        except StacksError as exc:
            raise InfrastructureError(stack.name, str(exc)) from None
        name = cluster_name(stack, ctx)
        kubeconfig = ctx.run_dir / f"{stack.name}.kubeconfig"
        reap(self._run, ctx.run_dir.parent)  # clusters of dead runs first
        _record_owner(ctx, name, tools / "bin/kind")
        # Private from its first byte: kind writes the cluster's admin credentials into it.
        os.close(os.open(kubeconfig, os.O_CREAT | os.O_WRONLY, 0o600))
        info = StackInfo(provider="kind", project=name,
                         endpoints={"kubeconfig": str(kubeconfig), "kind": str(tools / "bin/kind")})
        self._check(stack, [info.endpoints["kind"], "create", "cluster", "--name", name,
                            "--image", stack.kind.node_image.reference, "--kubeconfig",
                            str(kubeconfig), "--wait", f"{stack.timeouts.ready:.0f}s"],
                    stack.timeouts.up)
        self._install_operator(stack, info, tools / "files" / OPERATOR_MANIFEST, ctx.run_dir)
        return info

    def _install_operator(self, stack: Stack, info: StackInfo, manifest: Path,
                          run_dir: Path) -> None:
        assert stack.kind is not None
        if stack.kind.worker_image is not None:
            self._build_worker(stack)
            self._check(stack, [info.endpoints["kind"], "load", "docker-image",
                                stack.kind.worker_image.reference, "--name", info.project], 600)
        reference = (stack.kind.operator_image.reference if stack.kind.operator_image else
                     f"mpioperator/mpi-operator:{stack.kind.operator_version}")
        pinned = run_dir / f"{stack.name}.{OPERATOR_MANIFEST}"
        pinned.write_text(pin_operator_image(manifest.read_text(), reference))
        kubectl = ["kubectl", "--kubeconfig", info.endpoints["kubeconfig"]]
        self._check(stack, [*kubectl, "apply", "--server-side", "-f", str(pinned)], 300)
        self._check(stack, [*kubectl, "-n", "mpi-operator", "rollout", "status",
                            "deployment/mpi-operator", f"--timeout={stack.timeouts.ready:.0f}s"],
                    stack.timeouts.ready + 30)

    def _build_worker(self, stack: Stack) -> None:
        """The worker image (OpenMPI + sshd from Debian), built from the stack's ``compose``
        folder unless present: nothing of it comes from a registry but the Debian base."""
        assert stack.kind is not None and stack.kind.worker_image is not None
        reference = stack.kind.worker_image.reference
        if stack.compose is None or self._run(["docker", "image", "inspect", reference],
                                              60).returncode == 0:
            return
        try:
            base = images.ensure_base_image(stack.base_image) if stack.base_image else ""
        except StacksError as exc:
            raise InfrastructureError(stack.name, str(exc)) from None
        args = [f"--build-arg={k}={v}" for k, v in stack.compose.build_args.items()]
        self._check(stack, ["docker", "build", "-q", "-t", reference, *args,
                            f"--build-arg=BASE_IMAGE={base}", str(stack.compose.directory)],
                    stack.timeouts.build)

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
        folder = ctx.run_dir / f"{stack.name}.kind-logs"
        done = self._run([info.endpoints["kind"], "export", "logs", str(folder), "--name",
                          info.project], 300)
        return f"kind export logs {folder}: exit {done.returncode}\n{done.stdout}{done.stderr}"

    def down(self, stack: Stack, info: StackInfo, ctx: RunContext) -> None:
        self._check(stack, [info.endpoints["kind"], "delete", "cluster", "--name", info.project],
                    300)
        left = self._run(["docker", "ps", "-aq", "--filter",
                          f"label={KIND_CLUSTER_LABEL}={info.project}"], 60)
        if left.stdout.strip():
            raise InfrastructureError(stack.name, f"kind cluster {info.project}: containers "
                                      f"remain after delete: {left.stdout.split()}")
        _owner_file(ctx.run_dir.parent, info.project).unlink(missing_ok=True)

    def is_current(self, stack: Stack, info: StackInfo) -> bool:
        return False  # kind clusters are not kept between runs

    def health(self, stack: Stack, info: StackInfo) -> tuple[str, str]:
        return "", ""  # in-process, or nothing of ours outside the API server to watch

    def sweep_run(self, ctx: RunContext) -> list[str]:
        return reap(self._run, ctx.run_dir.parent, only_run=ctx.run_id)


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


def _owner_file(root: Path, cluster: str) -> Path:
    return root / "kind-clusters" / f"{cluster}.json"


def _record_owner(ctx: RunContext, cluster: str, kind: Path) -> None:
    path = _owner_file(ctx.run_dir.parent, cluster)
    path.parent.mkdir(mode=0o700, exist_ok=True)
    path.write_text(json.dumps({"run": ctx.run_id, "pid": ctx.owner_pid,
                                "start": ctx.owner_start, "kind": str(kind)}))


def reap(runner: Runner, root: Path, only_run: str | None = None) -> list[str]:
    """Delete our clusters whose owner is dead (or, with ``only_run``, that run's clusters).
    Clusters without our prefix or owner record, and the shared ``kind`` network, are never
    touched. Returns what could not be removed."""
    problems = []
    for record in sorted((root / "kind-clusters").glob(f"{CLUSTER_PREFIX}*.json")):
        try:
            owner = json.loads(record.read_text())
        except (OSError, ValueError):
            continue
        mine = only_run is not None and owner.get("run") == only_run
        dead = only_run is None and not owner_alive(int(owner.get("pid", 0)),
                                                    str(owner.get("start", "")))
        if not (mine or dead):
            continue
        done = runner([str(owner.get("kind") or "kind"), "delete", "cluster", "--name",
                       record.stem], 300)
        if done.returncode == 0:
            record.unlink(missing_ok=True)
        else:
            problems.append(f"kind cluster {record.stem}: {done.stderr.strip()[-300:]}")
    return problems
