"""What the refusal of remote outputs on an HTCondor 25.10+ access point rests on, shown raw on
every stack that declares it (``outputs.remote.refused``): the driver's own description of such
a job, submitted past its refusal, is held by the schedd after the execute node uploaded the
file, with the shadow's "illegal sandbox path" as the reason.

Measured on 25.14.1 (Debian sid): the starter asks the shadow to sign the ``s3://`` URL under
an empty file name, which 25.10's shadow counts as an illegal sandbox path (HTCONDOR-3499,
``FileTransfer::LegalPathInSandbox``); the curl plugin's upload itself succeeds. On 23.9.6 the
same description completes (``test_a_remote_output_reaches_the_store_byte_for_byte``). If a
release fixes the shadow, this test fails, and the capability moves back to ``outputs.remote``.
"""

from __future__ import annotations

import hashlib
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.backends.htcondor.driver import OLD_LEAVE_IN_QUEUE
from pytest_stacks.backends.htcondor.staging import UNSIGNABLE_OUTPUTS_SINCE
from pytest_stacks.backends.htcondor.translate import describe_job, job_constraint
from pytest_stacks.contract import JobClient, JobSpec
from pytest_stacks.manifest import Stack
from pytest_stacks.polling import poll_until
from pytest_stacks.providers import object_store

pytestmark = [pytest.mark.requires("submit", "outputs.remote.refused"),
              pytest.mark.for_backend("htcondor")]

HELD = 5
#: HoldReasonCode 12: "Transfer output files failure"; subcode 1 is the shadow's EPERM.
OUTPUT_TRANSFER_FAILED = 12


def _store_container(stack_info: dict[str, Any]) -> str:
    done = subprocess.run(
        ["docker", "ps", "-q", "--filter", f"label=com.docker.compose.project="
         f"{stack_info['project']}", "--filter",
         f"label=com.docker.compose.service={object_store.SERVICE}"],
        capture_output=True, text=True, timeout=30, check=True)
    [container] = done.stdout.split()
    return container


def _stored_sha256(container: str, key: str) -> str | None:
    path = f"{object_store.DATA}/{object_store.BUCKET}/{key}"
    done = subprocess.run(["docker", "exec", container, "sha256sum", path],
                          capture_output=True, text=True, timeout=60)
    return done.stdout.split()[0] if done.returncode == 0 else None


def test_the_access_point_holds_the_job_after_its_s3_upload(
        backend: JobClient, stack: Stack, stack_info: dict[str, Any], tmp_path: Path) -> None:
    schedd: Any = getattr(backend, "schedd", None)
    if schedd is None:
        pytest.skip("the backend client is not the reference HTCondor driver (no schedd)")
    versions = backend.versions()
    key = f"refused/{uuid.uuid4().hex}.bin"
    payload = f"{uuid.uuid4().hex}\n"
    spec = JobSpec(script=f"printf '%s\\n' {payload.strip()} > result.bin\n",
                   remote_outputs={"result.bin": f"s3://{object_store.HOST}/"
                                                 f"{object_store.BUCKET}/{key}"},
                   credentials=f"{object_store.CREDENTIALS}/store")
    # The driver's own description, past its refusal: what a client without it would send.
    submitted = schedd.submit(describe_job(spec, tmp_path / "job", OLD_LEAVE_IN_QUEUE),
                              spool=True, count=1)
    schedd.spool(submitted)
    [job_id] = submitted.job_ids
    projection = ["JobStatus", "HoldReason", "HoldReasonCode", "HoldReasonSubCode"]
    try:
        def ad() -> dict[str, Any]:
            found = schedd.query(job_constraint([job_id]), projection) or schedd.history(
                job_constraint([job_id]), projection, match=1)
            return found[0] if found else {}

        def ended(now: dict[str, Any]) -> bool:
            spooling = "spool" in str(now.get("HoldReason") or "").lower()
            return now.get("JobStatus") in (3, 4) or (now.get("JobStatus") == HELD
                                                       and not spooling)

        seen = poll_until(ad, ended, timeout=stack.timeouts.job, interval=0.5,
                          first_interval=0.2,
                          on_timeout=lambda last: f"job {job_id} still {last!r}")
    finally:
        schedd.act("remove", [job_id], "pytest-stacks: raw remote-output probe")
    observed = (f"observed on daemon {versions['daemon']} (client {versions['client']}): "
                f"{seen!r}")
    assert seen.get("JobStatus") == HELD, observed
    assert seen.get("HoldReasonCode") == OUTPUT_TRANSFER_FAILED, observed
    assert "illegal sandbox path" in str(seen.get("HoldReason")), observed
    assert tuple(int(p) for p in versions["daemon"].split(".")) >= UNSIGNABLE_OUTPUTS_SINCE, (
        f"{observed}: the driver refuses remote outputs only from "
        f"{'.'.join(map(str, UNSIGNABLE_OUTPUTS_SINCE))} on")
    # The upload itself happened before the hold: the bytes are in the store.
    stored = _stored_sha256(_store_container(stack_info), key)
    assert stored == hashlib.sha256(payload.encode()).hexdigest(), (
        f"{observed}; the store holds {stored!r} under {key}")
