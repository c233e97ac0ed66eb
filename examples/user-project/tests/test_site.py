"""The site's own tests, written against the backend-agnostic job contract.

The reusable workflow runs them with ``--stack-unproven=fail``: every capability a stack of
this project declares (the catalogue's stacks declare theirs) must be required by a test that
passed on it, so each capability the site relies on has one test here.
"""

from __future__ import annotations

import re
import subprocess
import time
import uuid
from pathlib import Path

import pytest

from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for


@pytest.mark.requires("submit", "status", "outputs")
def test_a_job_writes_its_result(backend, stack, tmp_path: Path) -> None:
    [job] = submitted(backend.submit([JobSpec(script="echo 42 > answer.txt\n",
                                              outputs=("answer.txt",))]))
    [status] = wait_for(backend, [job], timeout=stack.timeouts.job)
    assert status.state is JobState.COMPLETED, status
    [result] = backend.fetch_outputs([job], tmp_path)
    assert result.files["answer.txt"].read_text() == "42\n"


@pytest.mark.requires("submit", "status", "execution")
def test_a_failing_job_reports_its_exit_code(backend, stack) -> None:
    [job] = submitted(backend.submit([JobSpec(script="exit 7\n")]))
    [status] = wait_for(backend, [job], timeout=stack.timeouts.job)
    assert status.state is JobState.FAILED and status.exit_code == 7, status


@pytest.mark.requires("submit", "status", "inputs", "outputs")
def test_an_input_file_reaches_the_job(backend, stack, tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    [job] = submitted(backend.submit([JobSpec(script="tr a-f A-F < in.txt > out.txt\n",
                                              inputs={"in.txt": token.encode()},
                                              outputs=("out.txt",))]))
    wait_for(backend, [job], timeout=stack.timeouts.job)
    [result] = backend.fetch_outputs([job], tmp_path)
    assert result.files["out.txt"].read_text() == token.upper()


@pytest.mark.requires("submit", "status", "outputs", "outputs.repeatable")
def test_results_can_be_fetched_again(backend, stack, tmp_path: Path) -> None:
    [job] = submitted(backend.submit([JobSpec(script="echo again > out.txt\n",
                                              outputs=("out.txt",))]))
    wait_for(backend, [job], timeout=stack.timeouts.job)
    [first] = backend.fetch_outputs([job], tmp_path / "first")
    [second] = backend.fetch_outputs([job], tmp_path / "second")
    assert first.ok and second.ok, (first.error, second.error)
    assert second.files["out.txt"].read_text() == first.files["out.txt"].read_text() == "again\n"


@pytest.mark.requires("submit", "status", "kill")
def test_a_running_job_can_be_cancelled(backend, stack) -> None:
    [job] = submitted(backend.submit([JobSpec(script="sleep 300\n",
                                              backend_options={"keep_running": True})]))
    wait_for(backend, [job], until=frozenset({JobState.RUNNING}), timeout=stack.timeouts.job)
    [killed] = backend.kill([job])
    assert killed.ok, killed.error
    [status] = wait_for(backend, [job], timeout=stack.timeouts.job)
    assert status.state is JobState.CANCELLED, status


@pytest.mark.requires("submit", "status", "purge", "outputs")
def test_a_purged_job_leaves_nothing_to_fetch(backend, stack, tmp_path: Path) -> None:
    [job] = submitted(backend.submit([JobSpec(script="echo x > out.txt\n",
                                              outputs=("out.txt",))]))
    wait_for(backend, [job], timeout=stack.timeouts.job)
    [purged] = backend.purge([job])
    assert purged.ok, purged.error
    [after] = backend.fetch_outputs([job], tmp_path)
    assert not after.ok


@pytest.mark.requires("submit", "status", "logs")
def test_the_daemon_logs_name_our_job(backend, stack, stack_logs) -> None:
    """slurmctld's own log, as a failure report would attach it: a line that was not there
    before names the job (``JobId=N``, a whole token)."""
    before = set(stack_logs().splitlines())
    [job] = submitted(backend.submit([JobSpec(script="true\n")]))
    wait_for(backend, [job], timeout=stack.timeouts.job)
    named = re.compile(rf"\bJobId={re.escape(job.job_id)}\b")
    deadline = time.monotonic() + stack.timeouts.job
    while not any(named.search(line) for line in stack_logs().splitlines()
                  if line not in before):
        assert time.monotonic() < deadline, f"no new log line names JobId={job.job_id}"
        time.sleep(0.5)  # daemons write their logs a moment after the state changes


@pytest.mark.requires("submit", "status", "container.refused")
def test_a_job_in_an_image_is_refused_not_run_bare(backend, stack) -> None:
    """Our site has no container runtime on its nodes: a job that asks for an image must be
    refused at submit with the reason, never run on the bare node; the plain job of the same
    submit still runs."""
    in_image, plain = backend.submit([
        JobSpec(script="true\n", name="in-image", container="docker.io/library/debian:trixie"),
        JobSpec(script="true\n", name="plain")])
    assert not in_image.ok and "container" in in_image.error.lower(), in_image
    [status] = wait_for(backend, submitted([plain]), timeout=stack.timeouts.job)
    assert status.state is JobState.COMPLETED, status


@pytest.mark.requires("site.accounting")
def test_the_site_stack_is_the_pinned_one(stack, stack_info) -> None:
    assert stack_info["observed_version"] == stack.version == "24.11.5"


@pytest.mark.requires("submit", "status", "accounting")
def test_accounting_reports_a_finished_job(backend, stack, stack_commands) -> None:
    """The scheduler's own ``sacct``, as the site's users run it, knows the job's end."""
    [job] = submitted(backend.submit([JobSpec(script="exit 3\n")]))
    wait_for(backend, [job], timeout=stack.timeouts.job)
    deadline = time.monotonic() + 30  # the job's end reaches accounting asynchronously
    while True:
        said = subprocess.run(["sacct", "-j", job.job_id, "-X", "-n", "-P", "-o",
                               "State,ExitCode"], env=stack_commands.env,
                              capture_output=True, text=True, timeout=60, check=False)
        if said.stdout.strip() == "FAILED|3:0" or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    assert said.stdout.strip() == "FAILED|3:0", (said.stdout, said.stderr)
