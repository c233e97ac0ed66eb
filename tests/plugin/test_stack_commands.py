"""The ``stack_commands`` fixture as users see it: the scheduler's commands on PATH, forwarded
to the stack's login host (here the in-process fakes, through the relay), the shared folder,
the refusals, fake-mpi-operator's kubectl, and nothing left behind when the session ends."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.manifests import Project

pytest_plugins = ["pytester"]

REPO = Path(__file__).resolve().parents[2]

TESTS = '''
import json, os, shutil, subprocess
from pathlib import Path

def run(stack_commands, *argv, **kw):
    return subprocess.run(list(argv), env=stack_commands.env, capture_output=True, text=True,
                          cwd=kw.pop("cwd", stack_commands.shared), **kw)

def test_commands_forward_argv_stdin_output_and_exit_code(stack_commands, monkeypatch):
    Path("seen.json").write_text(json.dumps({"bin": str(stack_commands.bin),
                                             "shared": str(stack_commands.shared)}))
    assert "sbatch" in stack_commands.commands and stack_commands.user == "submitter"
    # The script on stdin, as `sbatch < job.sh` gives it.
    submitted = run(stack_commands, "sbatch", "--parsable",
                    input="#!/bin/sh\\necho from-stdin > stdin.txt\\nsleep 30\\n")
    assert submitted.returncode == 0, submitted.stderr
    job = submitted.stdout.strip()
    state = run(stack_commands, "squeue", "-h", "-o", "%T", "-j", job)
    assert (state.returncode, state.stdout.strip()) == (0, "RUNNING"), state
    unknown = run(stack_commands, "scontrol", "show", "job", "987654")
    assert unknown.returncode == 1 and "Invalid job id" in unknown.stderr, unknown
    assert run(stack_commands, "scancel", job).returncode == 0
    # A job's file lands in the shared folder, on this machine.
    (stack_commands.shared / "w.sh").write_text("#!/bin/sh\\necho written > out.txt\\n")
    wrote = run(stack_commands, "sbatch", "--parsable", "w.sh")
    assert wrote.returncode == 0, wrote.stderr
    import time
    deadline = time.monotonic() + 30
    while not (stack_commands.shared / "out.txt").exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert (stack_commands.shared / "out.txt").read_text() == "written\\n"
    # On PATH through monkeypatch as well.
    monkeypatch.setenv("PATH", stack_commands.env["PATH"])
    assert shutil.which("sbatch") == str(stack_commands.bin / "sbatch")

def test_a_file_the_login_host_cannot_see_is_refused(stack_commands, tmp_path):
    (tmp_path / "job.sh").write_text("#!/bin/sh\\necho hi\\n")
    refused = run(stack_commands, "sbatch", str(tmp_path / "job.sh"), cwd=tmp_path)
    assert refused.returncode == 2
    assert "the login host of stack fake-slurm sees only" in refused.stderr
    assert "stack_commands.shared" in refused.stderr
'''


PROJECT = Project(ini=f"stacks_manifest = {REPO / 'manifest.yaml'}\n",
                  pyfiles={"test_commands": TESTS})


def test_the_schedulers_commands_reach_the_fake_and_are_gone_after(
        project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurm", "-p", "no:randomly", "--stack-results=")
    result.assert_outcomes(passed=2)
    seen = json.loads((project.path / "seen.json").read_text())
    # The bin folder, its relay and the shared folder end with the session.
    assert not Path(seen["bin"]).exists()
    assert not Path(seen["shared"]).exists()


K8S_TESTS = '''
import json, shutil, subprocess
from pathlib import Path

POD = """      template:
        metadata: {annotations: {%s}}
        spec:
          nodeSelector: {type: kwok}
          tolerations: [{key: kwok.x-k8s.io/node, operator: Exists, effect: NoSchedule}]
          containers: [{name: %s, image: mpi:1, command: [mpirun, hostname]}]
"""
MPIJOB = ("apiVersion: kubeflow.org/v2beta1\\nkind: MPIJob\\nmetadata: {name: pi}\\nspec:\\n"
          "  mpiReplicaSpecs:\\n    Launcher:\\n      replicas: 1\\n"
          + POD % ('"pytest-stacks.io/exit-code": "0"', "launcher")
          + "    Worker:\\n      replicas: 2\\n" + POD % ("", "worker"))

def kubectl(stack_commands, *argv, **kw):
    return subprocess.run(["kubectl", *argv], env=stack_commands.env, capture_output=True,
                          text=True, timeout=60, **kw)

def test_a_client_that_shells_out_to_kubectl_runs_unchanged(stack_commands, tmp_path,
                                                             monkeypatch):
    Path("seen.json").write_text(json.dumps({"bin": str(stack_commands.bin)}))
    assert stack_commands.commands == ("kubectl",) and stack_commands.shared is None
    (tmp_path / "pi.yaml").write_text(MPIJOB)
    applied = kubectl(stack_commands, "apply", "-n", "default", "-f", "pi.yaml", cwd=tmp_path)
    assert applied.stdout == "mpijob.kubeflow.org/pi created\\n", applied.stderr
    waited = kubectl(stack_commands, "wait", "--for=condition=Succeeded", "mpijob/pi", "-n",
                     "default", "--timeout=60s")
    assert waited.stdout == "mpijob.kubeflow.org/pi condition met\\n", waited.stderr
    path = 'jsonpath={.status.conditions[?(@.type=="Succeeded")].status}'
    got = kubectl(stack_commands, "get", "mpijob", "pi", "-n", "default", "-o", path)
    assert (got.returncode, got.stdout) == (0, "True"), got
    listed = kubectl(stack_commands, "get", "pods", "-n", "default", "-l",
                     "training.kubeflow.org/job-name=pi", "-o", "json")
    pods = json.loads(listed.stdout)["items"]
    launcher = [p["metadata"]["name"] for p in pods
                if p["metadata"]["labels"]["training.kubeflow.org/job-role"] == "launcher"]
    assert len(pods) == 3 and len(launcher) == 1
    logs = kubectl(stack_commands, "logs", launcher[0], "-n", "default")
    assert (logs.returncode, logs.stderr) == (1, "Error from server (NotFound): the server "
        "could not find the requested resource ( pods/log %s)\\n" % launcher[0])
    deleted = kubectl(stack_commands, "delete", "mpijob", "pi", "-n", "default")
    assert deleted.stdout == 'mpijob.kubeflow.org "pi" deleted from default namespace\\n'
    gone = kubectl(stack_commands, "get", "mpijob", "pi", "-n", "default")
    assert gone.returncode == 1
    assert gone.stderr == 'Error from server (NotFound): mpijobs.kubeflow.org "pi" not found\\n'
    monkeypatch.setenv("PATH", stack_commands.env["PATH"])
    assert shutil.which("kubectl") == str(stack_commands.bin / "kubectl")

def test_what_kubectl_applied_is_what_the_fakes_api_server_holds(stack_commands, stack_fake):
    config = "apiVersion: v1\\nkind: ConfigMap\\nmetadata: {name: cfg}\\ndata: {a: b}\\n"
    applied = kubectl(stack_commands, "apply", "-f", "-", input=config)
    assert applied.returncode == 0, applied.stderr
    assert stack_fake.get("ConfigMap", "default", "cfg")["data"] == {"a": "b"}
    unknown = kubectl(stack_commands, "rollout-everything")
    assert (unknown.returncode, unknown.stderr) == (
        1, 'error: unknown command "rollout-everything" for "kubectl"\\n')
'''


def test_kubectl_on_the_fake_kubernetes_stack_and_gone_after(
        pytester: pytest.Pytester) -> None:
    pytester.makeini(f"[pytest]\nstacks_manifest = {REPO / 'manifest.yaml'}\n")
    pytester.makepyfile(test_k8s=K8S_TESTS)
    result = pytester.runpytest("--stack=fake-mpi-operator", "-p", "no:randomly",
                                "--stack-results=")
    result.assert_outcomes(passed=2)
    assert not Path(json.loads((pytester.path / "seen.json").read_text())["bin"]).exists()


def test_exec_on_a_fake_says_what_it_is(capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_stacks.cli import main

    code = main(["--manifest", str(REPO / "manifest.yaml"), "exec", "fake-slurm", "--",
                 "squeue"])
    assert code == 2
    err = capsys.readouterr().err
    assert "in-process fake" in err and "stack_commands" in err


def test_exec_on_a_stack_that_is_not_kept_names_the_fix(
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
        tmp_path: Path) -> None:
    from pytest_stacks.cli import main

    monkeypatch.setenv("TMPDIR", str(tmp_path))  # no kept runs there
    import tempfile
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    code = main(["--manifest", str(REPO / "manifest.yaml"), "shell", "slurm-24.11"])
    assert code == 2
    assert "pytest-stacks up slurm-24.11" in capsys.readouterr().err
