"""A user's own MPIJob through ``kubectl`` (the ``stack_commands`` fixture), the same command
lines on every compose Kubernetes stack and on fake-mpi-operator (issue 55): the pinned kubectl
against the real API server and operator there, the fake's kubectl against its in-process API
server here, so the answers the fake gives a client that shells out are checked against the
real ones, run by run.

What is asserted is what the cluster did: the operator's conditions on the MPIJob, the pods
the operator made (by its labels), the launcher's log where a kubelet ran it, and the MPIJob
gone after ``delete``. On the kwok planes (and the fake) a pod ends only by the exit code its
annotation names (the stacks' kwok Stage): an MPIJob without it runs until deleted, on both.
"""

from __future__ import annotations

import json
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_stacks.manifest import Stack

pytestmark = [pytest.mark.for_backend("mpi-operator"),
              pytest.mark.for_provider("compose", "fake")]

JOB_NAME = "training.kubeflow.org/job-name"
JOB_ROLE = "training.kubeflow.org/job-role"
EXIT_CODE = "pytest-stacks.io/exit-code"  # what the kwok Stage ends a pod with


def _real(stack: Stack) -> bool:
    return str(stack.options.get("execution", "simulated")) == "real"


def _pod(stack: Stack, role: str, command: list[str], annotations: dict[str, str]) -> Any:
    """A replica's pod template as a user writes it for this stack: the kwok node's selector
    and toleration on a simulated plane; the imported worker image (no registry: never pulled)
    and a small CPU request where a kubelet runs it."""
    container: dict[str, Any] = {"name": role, "command": command}
    spec: dict[str, Any] = {"containers": [container]}
    if _real(stack):
        container["image"] = str(stack.options["image"])
        container["imagePullPolicy"] = str(stack.options.get("image_pull_policy", "Never"))
        container["resources"] = {"requests": {"cpu": str(stack.options.get("cpu_request",
                                                                            "100m"))}}
    else:
        container["image"] = "mpi:1"
        spec["nodeSelector"] = {"type": "kwok"}
        spec["tolerations"] = [{"key": "kwok.x-k8s.io/node", "operator": "Exists",
                                "effect": "NoSchedule"}]
    return {"metadata": {"annotations": annotations}, "spec": spec}


def _mpijob(stack: Stack, name: str, *, finishes: bool = True) -> str:
    """An MPIJob of the operator's v2beta1 shape with two workers (sshd, as the operator's
    examples) and a launcher that prints the hostfile the operator mounted for it."""
    launcher = ["/bin/sh", "-c", "cat /etc/mpi/hostfile; echo launched"]
    ends = {EXIT_CODE: "0"} if finishes and not _real(stack) else {}
    job = {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob",
           "metadata": {"name": name},
           "spec": {"slotsPerWorker": 1, "mpiReplicaSpecs": {
               "Launcher": {"replicas": 1, "template": _pod(stack, "launcher", launcher, ends)},
               "Worker": {"replicas": 2, "template": _pod(stack, "worker",
                                                          ["/usr/sbin/sshd", "-De"], {})}}}}
    return yaml.safe_dump(job, sort_keys=False)


def _kubectl(commands: Any, *argv: str, cwd: Path | None = None,
             timeout: float = 120) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["kubectl", *argv], env=commands.env, cwd=cwd, capture_output=True,
                          text=True, timeout=timeout, check=False)


def _pods(commands: Any, name: str) -> list[dict[str, Any]]:
    listed = _kubectl(commands, "get", "pods", "-n", "default", "-l", f"{JOB_NAME}={name}",
                      "-o", "json")
    assert listed.returncode == 0, listed.stderr
    return list(json.loads(listed.stdout)["items"])


def test_an_mpijob_applied_with_kubectl_runs_is_read_back_and_deleted(
        stack: Stack, stack_commands: Any, tmp_path: Path) -> None:
    name = f"pi-{uuid.uuid4().hex[:6]}"
    (tmp_path / "pi.yaml").write_text(_mpijob(stack, name))
    applied = _kubectl(stack_commands, "apply", "-n", "default", "-f", "pi.yaml", cwd=tmp_path)
    assert (applied.returncode, applied.stdout) == (0, f"mpijob.kubeflow.org/{name} created\n"), \
        applied.stderr
    try:
        waited = _kubectl(stack_commands, "wait", "--for=condition=Succeeded", f"mpijob/{name}",
                          "-n", "default", f"--timeout={int(stack.timeouts.job)}s",
                          timeout=stack.timeouts.job + 30)
        assert waited.stdout == f"mpijob.kubeflow.org/{name} condition met\n", (
            waited.stderr, _pods(stack_commands, name))
        path = 'jsonpath={.status.conditions[?(@.type=="Succeeded")].status}'
        got = _kubectl(stack_commands, "get", "mpijob", name, "-n", "default", "-o", path)
        assert (got.returncode, got.stdout) == (0, "True"), got
        pods = _pods(stack_commands, name)
        roles = sorted(p["metadata"]["labels"][JOB_ROLE] for p in pods)
        assert roles == ["launcher", "worker", "worker"], roles
        [launcher] = [p for p in pods if p["metadata"]["labels"][JOB_ROLE] == "launcher"]
        assert launcher["status"]["phase"] == "Succeeded", launcher["status"]
        pod = launcher["metadata"]["name"]
        logs = _kubectl(stack_commands, "logs", pod, "-n", "default")
        if _real(stack):
            # The kubelet ran it: the hostfile the operator wrote names both workers.
            workers = sorted(p["metadata"]["name"] for p in pods
                             if p["metadata"]["labels"][JOB_ROLE] == "worker")
            assert logs.returncode == 0, logs.stderr
            assert logs.stdout.rstrip("\n").endswith("launched"), logs.stdout
            assert all(worker in logs.stdout for worker in workers), (workers, logs.stdout)
        else:  # kwok's node runs nothing and serves no log: the API server says so
            assert (logs.returncode, logs.stdout, logs.stderr) == (
                1, "", "Error from server (NotFound): the server could not find the requested "
                       f"resource ( pods/log {pod})\n")
    finally:
        deleted = _kubectl(stack_commands, "delete", "mpijob", name, "-n", "default")
    assert deleted.returncode == 0, deleted.stderr
    assert deleted.stdout == f'mpijob.kubeflow.org "{name}" deleted from default namespace\n'
    gone = _kubectl(stack_commands, "get", "mpijob", name, "-n", "default")
    assert (gone.returncode, gone.stderr) == (
        1, f'Error from server (NotFound): mpijobs.kubeflow.org "{name}" not found\n')


def test_a_launcher_without_an_exit_code_runs_until_deleted_under_kwok_only(
        stack: Stack, stack_commands: Any, tmp_path: Path) -> None:
    """Under kwok (and the fake) the annotation is the pod's only way to end; a kubelet runs
    the same MPIJob to its end and reads no annotation."""
    name = f"plain-{uuid.uuid4().hex[:6]}"
    (tmp_path / "plain.yaml").write_text(_mpijob(stack, name, finishes=False))
    assert _kubectl(stack_commands, "apply", "-n", "default", "-f", "plain.yaml",
                    cwd=tmp_path).returncode == 0
    try:
        if _real(stack):
            ended = _kubectl(stack_commands, "wait", "--for=condition=Succeeded",
                             f"mpijob/{name}", "-n", "default",
                             f"--timeout={int(stack.timeouts.job)}s",
                             timeout=stack.timeouts.job + 30)
            assert ended.returncode == 0, (ended.stderr, _pods(stack_commands, name))
            return
        running = _kubectl(stack_commands, "wait", "--for=condition=Running", f"mpijob/{name}",
                           "-n", "default", "--timeout=60s", timeout=90)
        assert running.returncode == 0, running.stderr
        done = _kubectl(stack_commands, "wait", "--for=condition=Succeeded", f"mpijob/{name}",
                        "-n", "default", "--timeout=3s")
        assert (done.returncode, done.stderr) == (
            1, f"error: timed out waiting for the condition on mpijobs/{name}\n")
        phases = sorted(p["status"].get("phase", "") for p in _pods(stack_commands, name))
        assert phases == ["Running"] * 3, phases
    finally:
        deleted = _kubectl(stack_commands, "delete", "mpijob", name, "-n", "default")
    assert deleted.returncode == 0, deleted.stderr
