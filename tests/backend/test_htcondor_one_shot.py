"""HTCondor's one-shot output retrieval (HTCONDOR-3508), shown raw on the selected stack.

From 25.8.2 the *submitting client* writes a ``LeaveJobInQueue`` under which a completed,
spooled job leaves the queue at the schedd's next periodic evaluation after its first
successful retrieval; a second retrieval then raises nothing and writes nothing. The old 10-day
expression, given as ``leave_in_queue``, keeps the job and makes retrieval repeatable. These
tests state what they observe; they are not bent to pass on a daemon that behaves otherwise.

Which expression a job carries is the client's doing, so a 23.9 client (``condor_submit`` on a
login node, the remote-CLI driver) keeps retrieval repeatable; whether the *schedd* then makes
retrieval one-shot is the daemon's doing, shown with the 25.8.2 expression given explicitly,
whatever the client (:func:`test_the_schedd_makes_retrieval_one_shot_under_the_new_expression`).
"""

from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.backends.htcondor import other_client
from pytest_stacks.backends.htcondor.api import version_tuple
from pytest_stacks.backends.htcondor.driver import NEW_LEAVE_IN_QUEUE, ONE_SHOT_SINCE
from pytest_stacks.backends.htcondor.translate import describe_job
from pytest_stacks.contract import JobClient, JobSpec, JobState, submitted, wait_for
from pytest_stacks.manifest import Stack

pytestmark = [pytest.mark.requires("submit", "status", "outputs"),
              pytest.mark.for_backend("htcondor")]

#: The stacks' PERIODIC_EXPR_INTERVAL when the manifest does not say (45-test-timers.conf sets 1).
DEFAULT_PERIODIC_EXPR_INTERVAL = 1.0


def _driver(backend: JobClient, stack: Stack, output_retrieval: str) -> Any:
    with_options = getattr(backend, "with_options", None)
    if with_options is None:
        pytest.skip("the backend client is not the reference HTCondor driver (no with_options)")
    return with_options(output_retrieval=output_retrieval)


def _interval(stack: Stack) -> float:
    return float(stack.options.get("periodic_expr_interval", DEFAULT_PERIODIC_EXPR_INTERVAL))


def _constraint(job_id: str) -> str:
    cluster, proc = job_id.split(".")
    return f"ClusterId == {int(cluster)} && ProcId == {int(proc)}"


def _finished_job(driver: Any, stack: Stack, token: str) -> Any:
    [handle] = submitted(driver.submit([JobSpec(script=f"echo {token} > out.txt\n",
                                                name="one-shot", outputs=("out.txt",))]))
    [status] = wait_for(driver, [handle], timeout=stack.timeouts.job)
    assert status.state is JobState.COMPLETED, status
    return handle


def _leave_in_queue(driver: Any, job_id: str) -> str:
    ads = driver.schedd.query(_constraint(job_id), ["LeaveJobInQueue"]) or \
        driver.schedd.history(_constraint(job_id), ["LeaveJobInQueue"], match=1)
    return str(ads[0].get("LeaveJobInQueue")) if ads else "(no ad)"


def _first_retrieval(driver: Any, stack: Stack, tmp_path: Path) -> tuple[Any, str, str]:
    token = uuid.uuid4().hex
    handle = _finished_job(driver, stack, token)
    expression = _leave_in_queue(driver, handle.job_id)
    [first] = driver.fetch_outputs([handle], tmp_path / "first")
    assert first.ok, f"first retrieval failed: {first.error}"
    assert first.files["out.txt"].read_text() == f"{token}\n"
    return handle, expression, token


@pytest.mark.client_version("<25.8.2")
def test_an_older_client_keeps_retrieval_repeatable(backend: JobClient, stack: Stack,
                                                    tmp_path: Path) -> None:
    """A client before 25.8.2 writes the old 10-day expression, whatever the daemon."""
    driver = _driver(backend, stack, "one-shot")  # no override: the client's own default
    versions = driver.versions()
    handle, expression, token = _first_retrieval(driver, stack, tmp_path)
    assert version_tuple(versions["client"]) < ONE_SHOT_SINCE
    driver.await_housekeeping(stack.timeouts.job)  # the schedd's periodic evaluation has run
    [second] = driver.fetch_outputs([handle], tmp_path / "second")
    assert second.ok, (f"observed: client {versions['client']} (before 25.8.2) against daemon "
                       f"{versions['daemon']}, LeaveJobInQueue = {expression!r}: the second "
                       f"retrieval failed: {second.error}")
    assert second.files["out.txt"].read_text() == f"{token}\n"
    driver.purge([handle])


@pytest.mark.client_version(">=25.8.2")
def test_one_shot_retrieval_with_a_new_client(backend: JobClient, stack: Stack,
                                              tmp_path: Path) -> None:
    driver = _driver(backend, stack, "one-shot")
    versions = driver.versions()
    client = versions["client"]
    handle, expression, _ = _first_retrieval(driver, stack, tmp_path)

    # A 25.8.2+ client: the job must leave at the schedd's next periodic evaluation.
    started = time.monotonic()
    deadline = started + max(stack.timeouts.job, _interval(stack) * 4)
    while driver.in_queue([handle]) == [True] and time.monotonic() < deadline:
        time.sleep(min(0.5, _interval(stack) / 4))
    waited = time.monotonic() - started
    assert driver.in_queue([handle]) == [False], (
        f"observed: client {client}, daemon {versions['daemon']}, LeaveJobInQueue = "
        f"{expression!r}: job {handle.job_id} was still in the queue {waited:.1f}s after its "
        f"first retrieval; expected it to leave (one-shot retrieval, HTCONDOR-3508)")

    [ad] = driver.schedd.history(_constraint(handle.job_id), ["SUBMIT_Iwd", "JobStatus"],
                                 match=1)
    if stack.transport == "bindings":
        # The raw second retrieval through the bindings: no job in the queue, so nothing
        # arrives, and nothing says so. A spooled job's Iwd is the schedd's spool; the
        # client's initialdir is SUBMIT_Iwd (on this host: the bindings submitted from here;
        # over SSH it is the login node's folder, and condor_transfer_data says "no match").
        iwd = Path(str(ad["SUBMIT_Iwd"]))
        for leftover in iwd.iterdir():
            leftover.unlink()
        try:
            driver.schedd.retrieve(handle.job_id)
            raised = None
        except Exception as exc:  # what the bindings raise, if they do
            raised = exc
        arrived = sorted(p.name for p in iwd.iterdir())
        assert arrived == [], (f"observed: a second retrieval of job {handle.job_id} after it "
                               f"left the queue wrote {arrived}")
        assert raised is None, (f"observed: a second retrieval of job {handle.job_id} after "
                                f"it left the queue raised {type(raised).__name__}: {raised} "
                                f"(the silent case documented for 25.14 bindings did not "
                                f"occur)")

    # The driver turns the silent case into a per-job error; the final state is in history.
    [second] = driver.fetch_outputs([handle], tmp_path / "second")
    assert not second.ok and "one-shot" in second.error, second
    [status] = driver.status([handle])
    assert status.state is JobState.COMPLETED and ad["JobStatus"] == 4, status


def test_leave_in_queue_override_keeps_retrieval_repeatable(backend: JobClient, stack: Stack,
                                                            tmp_path: Path) -> None:
    driver = _driver(backend, stack, "repeatable")
    versions = driver.versions()
    token = uuid.uuid4().hex
    handle = _finished_job(driver, stack, token)
    expression = _leave_in_queue(driver, handle.job_id)
    try:
        [first] = driver.fetch_outputs([handle], tmp_path / "first")
        assert first.ok, f"first retrieval failed: {first.error}"
        driver.await_housekeeping(stack.timeouts.job)  # a periodic evaluation has run
        assert driver.in_queue([handle]) == [True], (
            f"observed: client {versions['client']}, daemon {versions['daemon']}, "
            f"leave_in_queue = {expression!r}: job {handle.job_id} left the queue after its "
            f"first retrieval despite the override")
        [second] = driver.fetch_outputs([handle], tmp_path / "second")
        assert second.ok, f"second retrieval failed: {second.error}"
        assert second.files["out.txt"].read_bytes() == first.files["out.txt"].read_bytes() \
            == f"{token}\n".encode()
    finally:
        driver.purge([handle])


def test_the_schedd_makes_retrieval_one_shot_under_the_new_expression(
        backend: JobClient, stack: Stack, tmp_path: Path) -> None:
    """The daemon's half of HTCONDOR-3508, whatever the client: a spooled job whose
    ``LeaveJobInQueue`` is the 25.8.2+ expression leaves the queue after its first successful
    retrieval, and a second retrieval raises nothing and writes nothing. Raw schedd calls
    (the same on the bindings, the remote CLI and the double)."""
    driver = _driver(backend, stack, "one-shot")
    schedd = driver.schedd
    versions = driver.versions()
    token = uuid.uuid4().hex
    root = tmp_path / "job"
    description = describe_job(JobSpec(script=f"echo {token} > out.txt\n", name="raw-one-shot",
                                       outputs=("out.txt",)), root, NEW_LEAVE_IN_QUEUE)
    submitted_job = schedd.submit(description, spool=True, count=1)
    schedd.spool(submitted_job)
    [job_id] = submitted_job.job_ids
    constraint = _constraint(job_id)
    iwd = root / "iwd"
    try:
        deadline = time.monotonic() + stack.timeouts.job
        ads = schedd.query(constraint, ["JobStatus", "LeaveJobInQueue"])
        while ads and ads[0].get("JobStatus") != 4 and time.monotonic() < deadline:
            time.sleep(0.5)
            ads = schedd.query(constraint, ["JobStatus", "LeaveJobInQueue"])
        assert ads and ads[0].get("JobStatus") == 4, f"job {job_id} did not complete: {ads}"
        expression = str(ads[0].get("LeaveJobInQueue"))

        schedd.retrieve(job_id)
        assert (iwd / "out.txt").read_text() == f"{token}\n", sorted(os.listdir(iwd))

        started = time.monotonic()
        deadline = started + max(stack.timeouts.job, _interval(stack) * 4)
        while schedd.query(constraint, ["JobStatus"]) and time.monotonic() < deadline:
            time.sleep(min(0.5, _interval(stack) / 4))
        waited = time.monotonic() - started
        assert schedd.query(constraint, ["JobStatus"]) == [], (
            f"observed: daemon {versions['daemon']}, LeaveJobInQueue = {expression!r}: job "
            f"{job_id} was still in the queue {waited:.1f}s after its first retrieval")

        for leftover in iwd.iterdir():
            leftover.unlink()
        schedd.retrieve(job_id)  # raises nothing: the silent case
        assert sorted(os.listdir(iwd)) == [], (
            f"observed: a second retrieval of job {job_id} after it left the queue wrote "
            f"{sorted(os.listdir(iwd))}")
        [ad] = schedd.history(constraint, ["JobStatus"], match=1)
        assert ad["JobStatus"] == 4, ad
    finally:
        if schedd.query(constraint, ["JobStatus"]):
            schedd.act("remove", [job_id], "pytest-stacks: test cleanup")


#: The client release a user who has not upgraded holds: the 25.0 LTS bindings, before the
#: 25.8.2 client changed the spooled job's default ``LeaveJobInQueue``.
OLDER_CLIENT = "25.0.14"


@pytest.mark.requires("submit", "status", "outputs", "outputs.repeatable")
def test_a_pre_25_8_client_keeps_retrieval_repeatable_on_this_schedd(
        backend: JobClient, stack: Stack, stack_info: dict[str, Any], tmp_path: Path) -> None:
    """The client's half of HTCONDOR-3508, on the stack's own schedd: a job submitted by the
    PyPI bindings of an older release (their own environment, their own default
    ``LeaveJobInQueue``) stays in the queue after a retrieval and a periodic evaluation, and a
    second retrieval by that client returns the same file. Read from the schedd's queue, by
    this process's client; the older client only submits and retrieves."""
    if "collector" not in stack_info or "token_dir" not in stack_info:
        pytest.skip(f"{stack.name} has no collector and token another process can reach (an "
                    f"in-process double, or a pool reached over {stack.transport}): the older "
                    f"client is a process of its own, as a user's is")
    driver = _driver(backend, stack, "one-shot")
    schedd = driver.schedd
    versions = driver.versions()
    python = other_client.client_python(OLDER_CLIENT)
    pool = {"collector": stack_info["collector"], "token_dir": stack_info["token_dir"]}
    token = uuid.uuid4().hex
    root = tmp_path / "job"
    # No leave_in_queue: the older client writes its own default.
    description = describe_job(JobSpec(script=f"echo {token} > out.txt\n", name="older-client",
                                       outputs=("out.txt",)), root, None)
    answer = other_client.call(python, {**pool, "call": "submit", "description": description})
    assert version_tuple(answer["client"]) < ONE_SHOT_SINCE, answer
    job_id = answer["job_id"]
    constraint = _constraint(job_id)
    iwd = root / "iwd"
    try:
        deadline = time.monotonic() + stack.timeouts.job
        ads = schedd.query(constraint, ["JobStatus", "LeaveJobInQueue"])
        while ads and ads[0].get("JobStatus") != 4 and time.monotonic() < deadline:
            time.sleep(0.5)
            ads = schedd.query(constraint, ["JobStatus", "LeaveJobInQueue"])
        assert ads and ads[0].get("JobStatus") == 4, f"job {job_id} did not complete: {ads}"
        expression = str(ads[0].get("LeaveJobInQueue"))
        observed = (f"observed: client {answer['client']} against daemon "
                    f"{versions['daemon']}, LeaveJobInQueue = {expression!r}")
        assert "StageOutFinish" not in expression, observed  # not the 25.8.2 expression

        other_client.call(python, {**pool, "call": "retrieve", "job_id": job_id})
        assert (iwd / "out.txt").read_text() == f"{token}\n", observed
        (iwd / "out.txt").unlink()
        driver.await_housekeeping(stack.timeouts.job)  # the schedd's periodic evaluation ran
        assert schedd.query(constraint, ["JobStatus"]), f"{observed}: job {job_id} left"
        other_client.call(python, {**pool, "call": "retrieve", "job_id": job_id})
        assert (iwd / "out.txt").read_text() == f"{token}\n", (
            f"{observed}: the second retrieval brought {sorted(os.listdir(iwd))}")
    finally:
        if schedd.query(constraint, ["JobStatus"]):
            schedd.edit([job_id], "LeaveJobInQueue", "false")
