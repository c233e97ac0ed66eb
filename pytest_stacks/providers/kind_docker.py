"""The ``docker`` that kind runs: faster on every host, and what works where the engine
refuses ``--privileged``.

kind starts every node with ``docker run --privileged`` and runs every command in it with
``docker exec --privileged``. Some engines cannot grant that: in a sandbox whose capability
bounding set lacks CAP_SYS_RESOURCE, Docker's privileged mode (every capability there is)
fails with "unable to apply caps". kind itself has no switch for this, so the provider puts
this program first on kind's ``PATH`` as ``docker``: it passes every call through to the real
CLI unchanged, except that on such an engine

- ``run --privileged`` becomes every capability the engine can grant (all but
  CAP_SYS_RESOURCE), no seccomp or AppArmor confinement, a private cgroup namespace,
  ``/dev/kmsg`` (the kubelet reads it) and every device in the node's device cgroup (a
  privileged pod's runtime writes ``a *:* rwm`` into its own, which must be a subset): what a
  kubelet node needs, proven in ``stacks/k8s-node``;
- ``exec --privileged`` loses the flag: an exec gets the container's own capabilities.

Only the arguments before the image (``run``) or container (``exec``) are looked at; the
command run in the container is never rewritten. The real CLI is named by
``PYTEST_STACKS_REAL_DOCKER``.

The shim also makes kind faster, on every engine. kind runs the CLI about 70 times per
two-node cluster, one after the other: the shim is a shell script that hands every call it
need not rewrite straight to the CLI (a Python start each added about 0.1 s, 7 s a cluster),
and ``kubeadm join`` is held until the control plane has signed its ``cluster-info`` (kubeadm's
discovery retries an unsigned one only after 5 s; the controller manager's bootstrap signer
signs it a few seconds after ``kubeadm init``).
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from pytest_stacks import dockerutil
from pytest_stacks.errors import StacksError

REAL_DOCKER = "PYTEST_STACKS_REAL_DOCKER"
UNPRIVILEGED = "PYTEST_STACKS_KIND_UNPRIVILEGED"  # set: the engine refuses --privileged
JOIN_SIGNATURE_WAIT_S = 30.0  # then kubeadm's own discovery retries, as without the shim
JOIN_SIGNATURE_POLL_S = 0.25
NETWORK_VARIABLE = "KIND_EXPERIMENTAL_DOCKER_NETWORK"  # kind's knob for the nodes' network
NODE_PRIVILEGES = ("--cap-add=ALL", "--cap-drop=SYS_RESOURCE",
                   "--security-opt=seccomp=unconfined", "--security-opt=apparmor=unconfined",
                   "--cgroupns=private", "--device=/dev/kmsg", "--device-cgroup-rule=a *:* rwm")
# Options of `docker run` / `docker exec` that take a separate value: needed to find where the
# options end (the image or container is the first argument that is neither).
_RUN_VALUED = {"--name", "--hostname", "-h", "--label", "-l", "--security-opt", "--tmpfs",
               "--volume", "-v", "-e", "--env", "--net", "--network", "--restart", "--publish",
               "-p", "--cgroupns", "--device", "--userns", "--sysctl", "--entrypoint", "-w",
               "--workdir", "-u", "--user", "--mount", "--cap-add", "--cap-drop", "--env-file",
               "--memory", "-m", "--cpus", "--platform", "--ip", "--ip6", "--dns",
               "--add-host", "--log-driver", "--log-opt", "--pid", "--ipc", "--uts",
               "--stop-signal", "--shm-size", "--ulimit", "--init-path", "--volumes-from"}
_EXEC_VALUED = {"-e", "--env", "-u", "--user", "-w", "--workdir", "--env-file",
                "--detach-keys"}


def _split(args: Sequence[str], valued: set[str]) -> int:
    """Index of the first positional argument (image or container) in ``args``."""
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--" or not arg.startswith("-"):
            return i
        if arg in valued:
            i += 2
            continue
        i += 1
    return i


def rewrite(argv: Sequence[str]) -> list[str]:
    """kind's docker arguments (without the program name) as this engine accepts them."""
    args = list(argv)
    if not args or args[0] not in ("run", "exec"):
        return args
    command, rest = args[0], args[1:]
    end = _split(rest, _RUN_VALUED if command == "run" else _EXEC_VALUED)
    options, positional = rest[:end], rest[end:]
    if "--privileged" not in options:
        return args
    kept: list[str] = []
    skip = False
    for i, option in enumerate(options):
        if skip:
            skip = False
        elif option == "--privileged":
            continue
        elif command == "run" and option == "--cgroupns":
            skip = i + 1 < len(options)  # its value, given as the next argument
        elif not (command == "run" and option.startswith("--cgroupns=")):
            kept.append(option)
    if command == "run":
        kept.extend(NODE_PRIVILEGES)
    options = kept
    return [command, *options, *positional]


Runner = Callable[[Sequence[str], float], subprocess.CompletedProcess[str]]
_REFUSED: dict[tuple[str, Runner], bool] = {}  # per engine and runner, once per process


def privileged_refused(image: str, runner: Runner) -> bool:
    """Whether this engine refuses ``docker run --privileged`` (tried once per process, with
    ``image`` as the one thing to run). Any other failure is an error of its own: the shim
    must not hide an engine that fails for another reason."""
    engine = (os.environ.get("DOCKER_HOST", "default"), runner)
    if engine not in _REFUSED:
        done = runner(["docker", "run", "--rm", "--privileged", "--network=none",
                       "--entrypoint=/bin/true", image], 120)
        said = (done.stderr or done.stdout).strip()
        if done.returncode == 0:
            _REFUSED[engine] = False
        elif "apply caps" in said or "operation not permitted" in said:
            _REFUSED[engine] = True
        else:
            raise StacksError(f"cannot tell whether the engine allows --privileged: `docker run "
                              f"--privileged {image}` failed (exit {done.returncode}): "
                              f"{said[-300:]}")
    return _REFUSED[engine]


# kind's calls that need no rewriting go straight to the CLI; `run` (where the engine refuses
# --privileged) and `kubeadm join` go through this module.
_SHIM = """#!/bin/sh
real=${PYTEST_STACKS_REAL_DOCKER:?PYTEST_STACKS_REAL_DOCKER is not set}
case "$1" in
exec)
  case " $* " in *" kubeadm join "*) exec PYTHON -m pytest_stacks.providers.kind_docker "$@" ;; esac
  if [ "$2" = --privileged ] && [ -n "${PYTEST_STACKS_KIND_UNPRIVILEGED:-}" ]; then
    shift 2
    exec "$real" exec "$@"
  fi ;;
run)
  if [ -n "${PYTEST_STACKS_KIND_UNPRIVILEGED:-}" ]; then
    exec PYTHON -m pytest_stacks.providers.kind_docker "$@"
  fi ;;
esac
exec "$real" "$@"
"""


def kind_wrapper(kind: Path, node_image: str, folder: Path, network: str,
                 runner: Runner) -> str:
    """A script that runs kind on a docker network of this cluster's own (kind's shared
    ``kind`` network would outlive the run; this one goes with the cluster), with the shim
    first on its PATH as ``docker``."""
    folder.mkdir(parents=True, exist_ok=True)
    shim = folder / "docker"
    shim.write_text(_SHIM.replace("PYTHON", shlex.quote(sys.executable)))
    shim.chmod(0o755)
    lines = ["#!/bin/sh", f"{NETWORK_VARIABLE}={shlex.quote(network)}",
             f"PATH={shlex.quote(str(folder))}:\"$PATH\"",
             f"{REAL_DOCKER}={shlex.quote(dockerutil.docker_cli())}",
             f"export {NETWORK_VARIABLE} PATH {REAL_DOCKER}"]
    if privileged_refused(node_image, runner):
        lines += [f"{UNPRIVILEGED}=1", f"export {UNPRIVILEGED}"]
    wrapper = folder / "kind"
    wrapper.write_text("\n".join([*lines, f"exec {shlex.quote(str(kind))} \"$@\""]) + "\n")
    wrapper.chmod(0o755)
    return str(wrapper)


def joining_node(argv: Sequence[str]) -> str | None:
    """The node a ``docker exec ... NODE kubeadm join ...`` runs on; None for other calls."""
    if not argv or argv[0] != "exec":
        return None
    rest = list(argv[1:])
    positional = rest[_split(rest, _EXEC_VALUED):]
    if positional[1:3] == ["kubeadm", "join"]:
        return positional[0]
    return None


def control_plane_of(node: str) -> str:
    """kind's first control-plane node of the cluster ``node`` belongs to (kind names them
    CLUSTER-control-plane, CLUSTER-control-plane2, CLUSTER-worker, CLUSTER-worker2...)."""
    return re.sub(r"-(control-plane|worker)\d*$", "", node) + "-control-plane"


def await_join_signature(real: str, node: str, *,
                         run: Callable[..., subprocess.CompletedProcess[str]] = subprocess.run,
                         clock: Callable[[], float] = time.monotonic,
                         sleep: Callable[[float], None] = time.sleep,
                         wait: float = JOIN_SIGNATURE_WAIT_S) -> bool:
    """Whether the control plane's ``cluster-info`` carries a bootstrap-token signature
    within ``wait`` seconds. Never an error: kubeadm's own discovery still waits, only slower,
    and a control plane that cannot be asked is kubeadm's to report."""
    argv = [real, "exec", control_plane_of(node), "kubectl",
            "--kubeconfig=/etc/kubernetes/admin.conf", "--namespace=kube-public", "get",
            "configmap", "cluster-info", "--output=jsonpath={.data}"]
    deadline = clock() + wait
    while clock() < deadline:
        try:
            done = run(argv, capture_output=True, text=True, timeout=30, check=False)
        except (OSError, subprocess.TimeoutExpired):
            return False
        if "jws-kubeconfig-" in done.stdout:
            return True
        if "No such container" in done.stderr:
            return False
        sleep(JOIN_SIGNATURE_POLL_S)
    return False


def main() -> None:
    real = os.environ.get(REAL_DOCKER)
    if not real:
        sys.stderr.write(f"pytest-stacks kind docker shim: {REAL_DOCKER} is not set\n")
        sys.exit(125)
    if not os.path.isabs(real) or not os.access(real, os.X_OK) or not os.path.isfile(real):
        sys.stderr.write(f"pytest-stacks kind docker shim: {REAL_DOCKER}={real[:200]!r} is not "
                         f"an executable file named by its absolute path (the docker CLI)\n")
        sys.exit(125)
    args = sys.argv[1:]
    node = joining_node(args)
    if node is not None:
        await_join_signature(real, node)
    if os.environ.get(UNPRIVILEGED):
        args = rewrite(args)
    os.execv(real, [real, *args])


if __name__ == "__main__":
    main()
