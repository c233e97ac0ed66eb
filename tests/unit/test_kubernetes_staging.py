"""How the Kubernetes driver stages a job's remote files: the Pod it builds (an init container
that downloads, a container that uploads after the payload, the node's credentials and trust
mounted read-only), its containers' scripts run in order with a stand-in curl, and how a failed
staging container becomes the job's exit code and reason."""

from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.backends.kubernetes import objects, staging
from pytest_stacks.contract import JobSpec

URL = "s3://store.pytest-stacks.test/jobs/in/a1.bin"
OUT = "s3://store.pytest-stacks.test/jobs/out/r.bin"
CREDS = "/run/pytest-stacks/store-credentials/store"
STAGER = "pytest-stacks/stager:1"
RUNTIME = objects.Runtime(real=True, pull_policy="Never", cpu_request="100m", stager=STAGER)


def _pod(spec: JobSpec, runtime: objects.Runtime = RUNTIME) -> dict[str, Any]:
    opts = objects.options_of(spec, shape="pod", workers=0, image="worker:1", runtime=runtime)
    return objects.pod(spec, opts, name="p", namespace="ns", run_id="r")


def test_a_pod_with_remote_files_stages_them_in_containers_of_its_own() -> None:
    spec = JobSpec("cat input.bin > result.bin\n", remote_inputs={"input.bin": URL},
                   remote_outputs={"result.bin": OUT}, credentials=CREDS)
    pod_spec = _pod(spec)["spec"]
    [stage_in] = pod_spec["initContainers"]
    job, stage_out = pod_spec["containers"]
    assert (stage_in["name"], job["name"], stage_out["name"]) == ("stage-in", "job", "stage-out")
    assert stage_in["image"] == stage_out["image"] == STAGER
    assert job["image"] == "worker:1" and job["workingDir"] == staging.WORKDIR
    assert {v["name"]: v for v in pod_spec["volumes"]}["store-credentials"] == {
        "name": "store-credentials", "hostPath": {"path": CREDS, "type": "DirectoryOrCreate"}}
    assert pod_spec["shareProcessNamespace"] is True
    assert {m["name"] for m in job["volumeMounts"]} == {"work", "status"}, "keys in the payload"
    for container in (stage_in, stage_out):
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        assert mounts[staging.CREDENTIALS]["readOnly"] and mounts[staging.TRUST]["readOnly"]
        assert container["resources"]["requests"]["cpu"] == staging.STAGING_CPU
        assert container["imagePullPolicy"] == "Never"
        assert container["terminationMessagePolicy"] == "FallbackToLogsOnError"
    assert URL in stage_in["command"][2] and OUT in stage_out["command"][2]
    assert URL not in json.dumps(job) and OUT not in json.dumps(job), "the payload stages"


def test_a_pod_without_remote_files_is_unchanged() -> None:
    pod_spec = _pod(JobSpec("true\n"))["spec"]
    assert "initContainers" not in pod_spec and "volumes" not in pod_spec
    assert [c["name"] for c in pod_spec["containers"]] == ["job"]


@pytest.mark.parametrize(("runtime", "shape", "said"), [
    (objects.SIMULATED, "pod", "pods do not execute"),
    (objects.Runtime(real=True), "pod", "options.stager"),
    (RUNTIME, "mpijob", "not for shape 'mpijob'"),
])
def test_a_stack_that_cannot_stage_refuses_with_the_reason(runtime: objects.Runtime,
                                                           shape: str, said: str) -> None:
    spec = JobSpec("true\n", remote_inputs={"input.bin": URL}, credentials=CREDS)
    assert said in staging.refusal(spec, real=runtime.real, stager=runtime.stager, shape=shape)
    assert staging.refusal(JobSpec("true\n"), real=False, stager="", shape="mpijob") == ""


def _run_pod(tmp_path: Path, spec: JobSpec, curl_exit: int = 0,
             kill_payload: bool = False) -> dict[str, int]:
    """The Pod's containers in the kubelet's order (init, then the payload and the upload
    side by side), each in the shared working directory, with a curl that copies files."""
    bin_dir, work, status = tmp_path / "bin", tmp_path / "work", tmp_path / "status"
    for folder in (bin_dir, work, status):
        folder.mkdir()
    (bin_dir / "curl").write_text(
        '#!/bin/bash\nwhile [ $# -gt 0 ]; do case "$1" in -o) out=$2; shift;; '
        '-T) up=$2; shift;; esac; shift; done\n'
        f'[ {curl_exit} = 0 ] || {{ echo "<Code>NoSuchKey</Code>" > "$out"; exit 22; }}\n'
        '[ -n "${up:-}" ] && cp "$up" "$UPLOADED"; [ -n "${up:-}" ] || '
        'echo downloaded > "$out"; exit 0\n')
    (bin_dir / "curl").chmod(0o755)
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "access_key").write_text("AK")
    (creds / "secret_key").write_text("SECRET")
    spec = JobSpec(spec.script, remote_inputs=spec.remote_inputs,
                   remote_outputs=spec.remote_outputs, credentials=str(creds))
    pod_spec = _pod(spec)["spec"]
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
           "UPLOADED": str(tmp_path / "uploaded")}

    def start(container: dict[str, Any]) -> subprocess.Popen[str]:
        command = [part.replace(staging.STATUS_DIR, str(status)).replace(
            staging.CREDENTIALS, str(creds)) for part in container["command"]]
        return subprocess.Popen(command, cwd=work, env=env, text=True)

    codes = {}
    for container in pod_spec.get("initContainers", []):
        codes[container["name"]] = start(container).wait(timeout=30)
        if codes[container["name"]]:
            return codes
    running = {c["name"]: start(c) for c in pod_spec["containers"]}
    if kill_payload:  # as an OOM kill does: the whole container, before it writes a status
        # (after its pid: a file seen created but not yet written raced the kill under load)
        while not ((status / "pid").exists() and (status / "pid").read_text().strip()):
            time.sleep(0.01)
        running["job"].kill()
    codes.update({name: process.wait(timeout=30) for name, process in running.items()})
    return codes


def test_the_containers_download_run_and_upload_what_the_payload_wrote(
        tmp_path: Path) -> None:
    spec = JobSpec("sleep 0.5; cat input.bin > result.bin\nexit 3\n",
                   remote_inputs={"input.bin": URL}, remote_outputs={"result.bin": OUT})
    codes = _run_pod(tmp_path, spec)
    assert codes == {"stage-in": 0, "job": 3, "stage-out": 0}
    assert (tmp_path / "uploaded").read_text() == "downloaded\n", "uploaded before the payload"
    assert not list((tmp_path / "work").glob("*.part"))


def test_a_failed_download_stops_the_pod_before_its_payload(tmp_path: Path) -> None:
    codes = _run_pod(tmp_path, JobSpec("touch ran\n", remote_inputs={"input.bin": URL}),
                     curl_exit=22)
    assert codes == {"stage-in": staging.STAGE_IN_FAILED}
    assert not (tmp_path / "work" / "input.bin").exists()


def test_a_failed_upload_after_a_good_payload_fails_the_upload_container(
        tmp_path: Path) -> None:
    codes = _run_pod(tmp_path, JobSpec("echo r > result.bin\n",
                                       remote_outputs={"result.bin": OUT}), curl_exit=22)
    assert codes == {"job": 0, "stage-out": staging.STAGE_OUT_FAILED}


def _ended(name: str, code: int, message: str = "") -> dict[str, Any]:
    return {"name": name, "state": {"terminated": {"exitCode": code, "message": message}}}


@pytest.mark.parametrize(("status", "exit_code", "reason"), [
    ({"initContainerStatuses": [_ended("stage-in", 90, "<Code>NoSuchKey</Code>")],
      "containerStatuses": [{"name": "job", "state": {"waiting": {"reason": "PodInitializing"}}}]},
     90, "stage-in failed (exit 90): <Code>NoSuchKey</Code>"),
    ({"containerStatuses": [_ended("job", 0), _ended("stage-out", 91, "AccessDenied")]},
     91, "stage-out failed (exit 91): AccessDenied"),
    ({"containerStatuses": [_ended("job", 3), _ended("stage-out", 91)]}, 3, ""),
])
def test_a_failed_staging_container_is_the_jobs_exit_code_and_reason(
        status: dict[str, Any], exit_code: int, reason: str) -> None:
    state, _, code, said = objects.pod_state({"status": {"phase": "Failed", **status}})
    assert (state, code, said) == ("failed", exit_code, reason)


def test_an_upload_does_not_wait_for_a_payload_killed_before_its_status(
        tmp_path: Path) -> None:
    codes = _run_pod(tmp_path, JobSpec("echo r > result.bin; sleep 30\n",
                                       remote_outputs={"result.bin": OUT}), kill_payload=True)
    assert codes == {"job": -9, "stage-out": 0}, "the upload waited, or claimed the exit"
    assert not (tmp_path / "uploaded").exists()


def test_an_output_that_links_elsewhere_is_not_uploaded(tmp_path: Path) -> None:
    codes = _run_pod(tmp_path, JobSpec("ln -s /etc/hostname result.bin\n",
                                       remote_outputs={"result.bin": OUT}))
    assert codes == {"job": 0, "stage-out": staging.STAGE_OUT_FAILED}
    assert not (tmp_path / "uploaded").exists()


def test_a_stager_image_no_node_has_is_refused_at_submit() -> None:
    spec = JobSpec("true\n", remote_outputs={"r.bin": OUT}, credentials=CREDS)
    opts = objects.options_of(spec, shape="pod", workers=0, image="worker:1", runtime=RUNTIME)
    nodes = [{"status": {"images": [{"names": ["docker.io/worker:1"]}]}}]
    assert STAGER in objects.refusal(spec, opts, lambda: nodes)
    nodes[0]["status"]["images"].append({"names": [f"docker.io/{STAGER}"]})
    assert objects.refusal(spec, opts, lambda: nodes) == ""


def test_a_pod_finishes_when_its_last_container_does() -> None:
    pod = {"status": {"containerStatuses": [
        {"state": {"terminated": {"finishedAt": "2026-12-03T02:00:01Z"}}},
        {"state": {"terminated": {"finishedAt": "2026-12-03T02:00:04Z"}}}]}}
    assert objects.finished_at(pod) == "2026-12-03T02:00:04Z"
