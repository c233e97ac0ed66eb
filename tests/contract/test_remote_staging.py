"""Staging on the resource side, through the stack's real object store: the resource downloads
a job's remote inputs and uploads its remote outputs; the harness never touches the bytes.

The proof is the store's, never the client's: what arrived is read on the store's own disk,
and its access log must show every request for the job's objects coming from the batch nodes'
addresses (the client has no route to the store and no keys; these tests check the log
anyway). The test seeds inputs on the store's disk, so no S3 request of its own is logged.
"""

from __future__ import annotations

import hashlib
import os
import uuid
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.contract import (
    TERMINAL,
    JobClient,
    JobHandle,
    JobSpec,
    JobState,
    JobStatus,
    submitted,
)
from pytest_stacks.manifest import Stack
from pytest_stacks.polling import poll_until

from .store import Store


def _ended(backend: JobClient, handle: JobHandle, timeout: float) -> JobStatus:
    """The job's status once it finished, or once it is held for a reason other than the
    spooling hold a spooled HTCondor job starts in (HTCondor holds a job whose transfer
    failed: that is how it ends there)."""
    def over(status: JobStatus) -> bool:
        return status.state in TERMINAL or (status.state is JobState.HELD
                                            and "spooling" not in status.reason.lower())

    return poll_until(lambda: backend.status([handle])[0], over, timeout=timeout,
                      interval=0.5, first_interval=0.1)


def _reporting(stack: Stack) -> tuple[str, ...] | None:
    """The job reports its digest in digest.txt, an output file, where the backend returns
    files; in its log (the one thing a Kubernetes job returns) otherwise; None where nothing
    the job writes comes back (no shared file system, no ``outputs``): there the job's exit
    code and the store's own disk are the proof."""
    if "outputs" in stack.capabilities:
        return ("digest.txt",)
    if "fs.unshared" in stack.capabilities:
        return None
    assert "logs" in stack.capabilities, (
        f"{stack.name} stages remote files but returns neither output files nor logs")
    return ()


def _reported_digest(backend: JobClient, handle: JobHandle, tmp_path: Path,
                     staged: str) -> str:
    [result] = backend.fetch_outputs([handle], tmp_path)
    assert result.ok, result.error
    assert staged not in result.files, f"{staged} came back through the client"
    report = result.files.get("digest.txt") or result.files["logs.txt"]
    return report.read_text().split()[-1]


def _only_nodes_asked(store: Store, key: str, operation: str) -> None:
    requests = store.requests(key)
    assert requests, f"the store never saw a request for {key}"
    nodes = store.node_addresses()
    strangers = [r for r in requests if r.client not in nodes]
    assert not strangers, f"requests for {key} from outside the batch nodes {nodes}: {strangers}"
    assert any(r.operation == operation and r.status == 200 for r in requests), requests


@pytest.mark.requires("submit", "status", "inputs.remote")
def test_a_remote_input_reaches_the_job_byte_for_byte(backend: JobClient, stack: Stack,
                                                      stack_info: dict[str, Any],
                                                      tmp_path: Path) -> None:
    store = Store.of(stack, stack_info)
    payload = os.urandom(256 * 1024) + b"\x00\r\n"
    key = store.key("in")
    store.seed(key, payload)
    expected = hashlib.sha256(payload).hexdigest()
    reporting = _reporting(stack)
    script = ("sha256sum input.bin | cut -d' ' -f1 | tee digest.txt\n" if reporting is not None
              else f"echo '{expected}  input.bin' | sha256sum -c --strict --status - || exit 9\n")
    spec = JobSpec(script=script, remote_inputs={"input.bin": store.url(key)},
                   credentials=store.credentials, outputs=reporting or ())
    [handle] = submitted(backend.submit([spec]))
    status = _ended(backend, handle, stack.timeouts.job)
    assert status.state is JobState.COMPLETED, status  # where nothing returns: the bytes matched
    if reporting is not None:
        digest = _reported_digest(backend, handle, tmp_path, "input.bin")
        assert digest == expected, "the job read other bytes"
    _only_nodes_asked(store, key, "s3_GetObject")


@pytest.mark.requires("submit", "status", "outputs.remote")
def test_a_remote_output_reaches_the_store_byte_for_byte(backend: JobClient, stack: Stack,
                                                         stack_info: dict[str, Any],
                                                         tmp_path: Path) -> None:
    store = Store.of(stack, stack_info)
    key = store.key("out")
    reporting = _reporting(stack)
    if reporting is not None:  # random bytes, their digest reported by the job
        script = "head -c 262144 /dev/urandom > result.bin\n"
    else:  # nothing comes back: bytes the test can compute, fresh per run
        token = uuid.uuid4().hex
        script = f"yes {token} | head -c 262144 > result.bin\n"
        made = (f"{token}\n" * (262144 // (len(token) + 1) + 1)).encode()[:262144]
    spec = JobSpec(script=script + "sha256sum result.bin | cut -d' ' -f1 | tee digest.txt\n",
                   remote_outputs={"result.bin": store.url(key)}, credentials=store.credentials,
                   outputs=reporting or ())
    [handle] = submitted(backend.submit([spec]))
    status = _ended(backend, handle, stack.timeouts.job)
    assert status.state is JobState.COMPLETED, status
    digest = (_reported_digest(backend, handle, tmp_path, "result.bin") if reporting is not None
              else hashlib.sha256(made).hexdigest())
    assert store.sha256(key) == digest, "what arrived in the store is not what the job wrote"
    _only_nodes_asked(store, key, "s3_PutObject")


@pytest.mark.requires("submit", "outputs.remote.refused")
def test_a_remote_output_the_backend_cannot_stage_is_refused_at_submit(
        backend: JobClient, stack: Stack, stack_info: dict[str, Any]) -> None:
    """Refused per job, with the reason, in the submit's own answer; the plain job beside it
    is accepted and completes, and the store never heard of the refused one's object."""
    store = Store.of(stack, stack_info)
    key = store.key("refused")
    in_store = JobSpec(script="echo kept > result.bin\n", name="remote-out",
                       remote_outputs={"result.bin": store.url(key)},
                       credentials=store.credentials)
    refused, accepted = backend.submit([in_store, JobSpec(script="true\n", name="plain")])
    assert not refused.ok, "a job with a remote output was accepted where it cannot be staged"
    assert "remote output" in refused.error.lower(), refused.error
    assert accepted.ok and accepted.handle is not None, accepted.error
    status = _ended(backend, accepted.handle, stack.timeouts.job)
    assert status.state is JobState.COMPLETED, status
    assert store.requests(key) == [], "the store was asked for the refused job's object"


def _requires_for(failure: str) -> Any:
    """Each failure needs the staging direction it exercises, and only that one."""
    direction = "outputs.remote" if failure == "an upload the store refuses" else "inputs.remote"
    return pytest.mark.requires("submit", "status", direction)


#: Each payload succeeds on its own: a driver that went on after a failed transfer would
#: report the job completed, which fails the test.
FAILURES = {
    "a missing object": lambda store, key: JobSpec(
        script="true\n", remote_inputs={"input.bin": store.url(key)},
        credentials=store.credentials),
    "credentials the store never issued": lambda store, key: JobSpec(
        script="true\n", remote_inputs={"input.bin": store.url(key)},
        credentials=store.unknown_credentials),
    "an upload the store refuses": lambda store, key: JobSpec(
        script="echo kept > result.bin\n",
        remote_outputs={"result.bin": store.url(key, bucket="no-such-bucket")},
        credentials=store.credentials),
}


@pytest.mark.parametrize("failure", [pytest.param(f, marks=_requires_for(f)) for f in FAILURES])
def test_a_failed_transfer_ends_the_job_with_the_reason(backend: JobClient, stack: Stack,
                                                        stack_info: dict[str, Any],
                                                        failure: str) -> None:
    """Never a hang and never a success: the job fails (or, on HTCondor, is held) with the
    backend's own words, and the store logged the refused request from a node."""
    store = Store.of(stack, stack_info)
    key = store.key("fail")
    if failure == "credentials the store never issued":
        store.seed(key, b"never read\n")
    [handle] = submitted(backend.submit([FAILURES[failure](store, key)]))
    status = _ended(backend, handle, stack.timeouts.job)
    assert status.state in (JobState.FAILED, JobState.HELD), status
    direction = "output" if failure == "an upload the store refuses" else "input"
    if status.state is JobState.HELD:  # HTCondor's own words: "Transfer input files failure"
        assert f"transfer {direction} files failure" in status.reason.lower(), status
    else:
        assert status.exit_code not in (None, 0), status
    refused = store.requests(key)
    assert refused and all(r.status >= 400 for r in refused), refused
    assert {r.client for r in refused} <= store.node_addresses(), refused
