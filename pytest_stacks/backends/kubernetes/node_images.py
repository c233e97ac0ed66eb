"""The images a real node (``stacks/k8s-node``) runs, without a registry.

Images built here and handed to the node as ``docker save`` tars that its entrypoint imports
into the node's own containerd (pods then use them with ``imagePullPolicy: Never``):

- the pod sandbox's **pause** image: our own few-line Go program (``<stack>/pause``), built
  with the local toolchain, in an image ``FROM scratch``;
- the **MPI worker** image (``stacks/mpi-worker``: OpenMPI, sshd and ``pytest-stacks-rank``
  from the pinned Debian base), under the stack's ``options.image`` reference;
- the images the stack names besides (:mod:`~pytest_stacks.backends.kubernetes.extra_images`:
  the **container probe** a ``container`` job asks for, the **stager** of remote files).

The tars are cached by the content of everything that makes them (the worker folder, its build
arguments, the base image's id, the pause program's build), so a later bring-up only mounts
them; a changed input builds a new set under a new name, and only the :data:`KEEP_SETS` sets
used most recently stay (each is hundreds of MB: a disk that fills up puts the kubelet under
DiskPressure, which evicts the very pods a test runs).
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from filelock import FileLock, Timeout

from pytest_stacks import cancellation, dockerutil, gobuild, progress
from pytest_stacks.backends.kubernetes import extra_images
from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import Stack

WORKER_FOLDER = "mpi-worker"  # a sibling of the stack's compose folder
PAUSE_FOLDER = "pause"  # inside the stack's compose folder
PAUSE_NAME = "pytest-stacks/pause"
WORKER_BUILD_ARGS = ("OPENMPI_VERSION",)
#: The worker image's MPI_IMPLEMENTATION build argument, from the stack's
#: options.mpi_implementation (the name the operator's spec.mpiImplementation uses).
WORKER_MPI = {"OpenMPI": "openmpi", "MPICH": "mpich"}
COMPLETE = ".complete"
RECIPE = "2"  # how the tars are made here: a change rebuilds them
KEEP_SETS = 6  # every real-node stack's set, twice over
PAUSE_DOCKERFILE = ('FROM scratch\nCOPY pause /pause\nUSER 65535:65535\n'
                    'ENTRYPOINT ["/pause"]\n')


@dataclass(frozen=True)
class NodeImages:
    folder: Path  # holds pause.tar, mpi-worker.tar and a tar per extra image (by its folder)
    pause: str  # references as given to `docker build -t` (containerd adds docker.io/)
    worker: str
    extras: tuple[str, ...] = ()


def folder_digest(folder: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(folder)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def images_key(worker_folder_digest: str, build_args: Mapping[str, str], base_id: str,
               pause: str, worker: str, *extras: str) -> str:
    """The cache key of one set of tars: every input that changes what they hold
    (``extras``: each extra image's reference and folder digest)."""
    text = "\0".join([worker_folder_digest, *(f"{k}={v}" for k, v in sorted(build_args.items())),
                      base_id, pause, worker, PAUSE_DOCKERFILE, RECIPE,
                      *extras])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def base_reference(stack: Stack) -> str:
    """The base image the provider made available (pinned from a registry, or seeded)."""
    if stack.base_image is None:
        raise StacksError(f"stack {stack.name}: no base_image to build the MPI worker image on")
    for reference in (stack.base_image.registry_reference, stack.base_image.seeded_reference):
        if dockerutil.image_exists(reference):
            return reference
    raise StacksError(f"stack {stack.name}: base image {stack.base_image.registry_reference} "
                      f"is not available (nor its seed {stack.base_image.seeded_reference})")


def ensure_node_images(stack: Stack, *, timeout: float) -> NodeImages:
    """The tars, built and saved on first use of their inputs."""
    assert stack.compose is not None
    worker = str(stack.options.get("image") or "")
    if not worker:
        raise StacksError(f"stack {stack.name}: options.image names no worker image")
    worker_folder = stack.compose.directory.parent / WORKER_FOLDER
    if not (worker_folder / "Dockerfile").is_file():
        raise StacksError(f"stack {stack.name}: no worker image folder at {worker_folder}")
    pause_build = gobuild.ensure_local_built("pause", stack.compose.directory / PAUSE_FOLDER,
                                             timeout=timeout)
    pause = f"{PAUSE_NAME}:{pause_build.name.rsplit('-', 1)[-1]}"
    base = base_reference(stack)
    args = {k: v for k, v in stack.compose.build_args.items() if k in WORKER_BUILD_ARGS}
    mpi = str(stack.options.get("mpi_implementation", "OpenMPI"))
    if mpi not in WORKER_MPI:
        raise StacksError(f"stack {stack.name}: options.mpi_implementation={mpi!r}: expected "
                          f"one of {', '.join(WORKER_MPI)}")
    if mpi != "OpenMPI":  # the Open MPI image's key stays what it was
        args["MPI_IMPLEMENTATION"] = WORKER_MPI[mpi]
    extras = extra_images.references(stack)
    key = images_key(folder_digest(worker_folder), args, dockerutil.image_id(base), pause,
                     worker, *(f"{reference}@{folder_digest(extra_images.folder_of(stack, f))}"
                               for f, reference in sorted(extras.items())))
    target = gobuild.cache_root().parent / "images" / f"k8s-node-{key}"
    if (target / COMPLETE).exists():
        (target / COMPLETE).touch()  # used now: the pruning keeps the most recent
        return NodeImages(target, pause, worker, tuple(extras.values()))
    target.parent.mkdir(parents=True, exist_ok=True)
    with progress.step("worker and pause images for the node"), \
            cancellation.file_lock(str(target) + ".lock"):  # one session builds, others wait
        if not (target / COMPLETE).exists():
            shutil.rmtree(target, ignore_errors=True)
            target.mkdir()
            with tempfile.TemporaryDirectory(prefix="pytest-stacks-pause-") as context:
                shutil.copyfile(pause_build / "bin" / "pause", Path(context) / "pause")
                (Path(context) / "pause").chmod(0o755)
                (Path(context) / "Dockerfile").write_text(PAUSE_DOCKERFILE)
                _docker(["build", "-q", "-t", pause, context], timeout)
            dockerutil.ensure_built_image(worker, worker_folder, args, base, timeout=timeout)
            extra_images.ensure_extra_images(stack, base, timeout=timeout)
            for name, reference in [("pause", pause), ("mpi-worker", worker), *extras.items()]:
                partial = target / f"{name}.tar.partial"
                _docker(["save", "-o", str(partial), reference], timeout)
                partial.rename(target / f"{name}.tar")
            (target / COMPLETE).write_text("\n".join([pause, worker, *extras.values()]) + "\n")
    prune_sets(target.parent)
    return NodeImages(target, pause, worker, tuple(extras.values()))


def prune_sets(root: Path, keep: int = KEEP_SETS) -> list[Path]:
    """Remove all but the ``keep`` complete sets used most recently; a set another session is
    building or reading under its lock stays. The removed sets."""
    sets = sorted((p for p in root.glob("k8s-node-*") if (p / COMPLETE).is_file()),
                  key=lambda p: (p / COMPLETE).stat().st_mtime, reverse=True)
    removed = []
    for stale in sets[keep:]:
        try:
            with FileLock(str(stale) + ".lock", timeout=0):
                shutil.rmtree(stale, ignore_errors=True)
        except Timeout:
            continue
        removed.append(stale)
    return removed


def _docker(args: list[str], timeout: float) -> None:
    done = dockerutil.run_cli(args, timeout=timeout)
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise StacksError(f"`docker {' '.join(args[:3])} ...` failed (exit {done.returncode}):"
                          f"\n{tail}")
