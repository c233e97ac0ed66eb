"""The site's own tests, written against the backend-agnostic job contract."""

from __future__ import annotations

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


@pytest.mark.requires("site.accounting")
def test_the_site_stack_is_the_pinned_one(stack, stack_info) -> None:
    assert stack_info["observed_version"] == stack.version == "24.11.5"
