"""The MPI Operator's manifest applied while kind still joins the workers.

``kind create cluster`` is one blocking call of about 20 s; its last third (joining the
workers, waiting for their TLS bootstrap) needs nothing of the control plane's API but what
kubeadm already set up. Applying the operator's manifest then, through the control-plane
node's own ``kubectl`` and admin credentials, lets the operator's pod start, elect itself and
sync its caches before kind returns, instead of after: the first MPIJob is accepted seconds
sooner. It is the same server-side apply of the same pinned manifest the provider makes
afterwards anyway when this one did not get through (a cluster that was never ready, kind's
retry after a failed ``kubeadm init``): an early apply is an optimisation, never a condition.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_stacks import dockerutil, gobuild
from pytest_stacks.backends.kubernetes import builds
from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import kind_node_image

Runner = Callable[[Sequence[str], float], subprocess.CompletedProcess[str]]
ADMIN = "--kubeconfig=/etc/kubernetes/admin.conf"  # kubeadm's, inside the control-plane node
POLL_S = 0.5
IN_NODE = "/kind/pytest-stacks-mpi-operator.yaml"
OPERATOR_ENTRYPOINT = "/opt/mpi-operator"  # where the operator's own images keep it


def pin_operator_image(manifest: str, reference: str) -> str:
    """The release manifest's floating operator image (``mpioperator/mpi-operator:0.8``)
    replaced by the pinned reference (tag and digest)."""
    pinned, count = re.subn(r"(image:\s*)\S*mpi-operator:\S+", rf"\g<1>{reference}", manifest)
    if count == 0:
        raise StacksError("the operator's release manifest names no mpi-operator image to pin")
    return pinned


def local_operator_image(stack: Stack) -> str:
    """Our build of the pinned operator, in an image of its own (no registry here)."""
    assert stack.kind is not None
    build = gobuild.ensure_built(builds.mpi_operator(f"v{stack.kind.operator_version}"),
                                 timeout=stack.timeouts.build)
    reference = f"{kind_node_image.REPOSITORY}/mpi-operator:{build.name.split('-', 2)[-1]}"
    if not dockerutil.image_exists(reference):
        with tempfile.TemporaryDirectory(prefix="pytest-stacks-operator-") as scratch:
            kind_node_image.static_image(
                Path(scratch) / "image", build / "bin/mpi-operator", reference,
                entrypoint=OPERATOR_ENTRYPOINT, timeout=stack.timeouts.build)
    return reference


def pinned_manifest(stack: Stack, manifest: Path, run_dir: Path,
                    preloaded: Sequence[str]) -> tuple[Path, bool]:
    """The release manifest with the pinned operator image, written to ``run_dir``, and
    whether it can be applied before kind is done: its image is in the node already (a node
    image built here preloads it) or the node pulls it (kind's own node image), no ``kind
    load`` first."""
    assert stack.kind is not None
    if stack.kind.node_build is not None:
        reference = local_operator_image(stack)
        early = reference in preloaded
    else:
        reference = (stack.kind.operator_image.reference if stack.kind.operator_image
                     else f"mpioperator/mpi-operator:{stack.kind.operator_version}")
        early = True
    pinned = run_dir / f"{stack.name}.mpi-operator.yaml"
    pinned.write_text(pin_operator_image(manifest.read_text(), reference))
    return pinned, early


class EarlyApply:
    """One attempt of ``kind create``: a thread that waits until the control plane's API is
    ready (as kubeadm's admin, so kubeadm's own RBAC is in place too), then applies
    ``manifest`` there. :meth:`finish` stops it and says whether the apply succeeded."""

    def __init__(self, runner: Runner, node: str, manifest: Path, *, wait_s: float) -> None:
        self._run, self._node, self._manifest = runner, node, manifest
        self._deadline = time.monotonic() + wait_s
        self._stop = threading.Event()
        self.applied = False
        self._thread = threading.Thread(target=self._apply, name=f"early-operator-{node}",
                                        daemon=True)

    def start(self) -> EarlyApply:
        self._thread.start()
        return self

    def finish(self) -> bool:
        """Stop waiting (kind has returned) and wait for an apply already under way."""
        self._stop.set()
        self._thread.join()
        return self.applied

    def _ready(self) -> bool:
        while not self._stop.is_set() and time.monotonic() < self._deadline:
            done = self._run(["docker", "exec", self._node, "kubectl", ADMIN, "get",
                              "--raw=/readyz"], 15)
            if done.returncode == 0:
                return True
            self._stop.wait(POLL_S)
        return False

    def _apply(self) -> None:
        try:
            if not self._ready():
                return
            copied = self._run(["docker", "cp", str(self._manifest), f"{self._node}:{IN_NODE}"],
                               60)
            if copied.returncode != 0:
                return
            applied = self._run(["docker", "exec", self._node, "kubectl", ADMIN, "apply",
                                 "--server-side", "-f", IN_NODE], 120)
            self.applied = applied.returncode == 0
        except Exception:  # the provider applies it afterwards, as it would without this
            self.applied = False


def unavailable(run: Runner, kubectl: Sequence[str], cluster: str) -> str:
    """"" while the operator's deployment has an available replica (asked after a test
    failed on the cluster: the API server answering is half of its health); else why not."""
    said = run([*kubectl, "-n", "mpi-operator", "get", "deployment/mpi-operator", "-o",
                "jsonpath={.status.availableReplicas}"], 30)
    if said.returncode == 0 and said.stdout.strip() not in ("", "0"):
        return ""
    return (f"the MPI Operator's deployment in kind cluster {cluster} has no available "
            f"replica ({(said.stderr or said.stdout).strip()[-300:]})")
