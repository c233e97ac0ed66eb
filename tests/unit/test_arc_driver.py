"""The ARC driver's pure parts: A-REX's states in the contract's terms, the xRSL it writes,
the two shapes of A-REX's per-job answers, and the refusals made before anything is sent."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_stacks.backends.arc import driver, rest, states
from pytest_stacks.contract import JobHandle, JobSpec, JobState
from pytest_stacks.errors import BackendCallError


@pytest.mark.parametrize(("native", "exit_code", "expected"), [
    ("ACCEPTED", None, JobState.PENDING), ("QUEUING", None, JobState.PENDING),
    ("RUNNING", None, JobState.RUNNING), ("KILLING", None, JobState.RUNNING),
    ("FINISHING", None, JobState.RUNNING), ("FINISHED", 0, JobState.COMPLETED),
    ("FINISHED", 3, JobState.FAILED), ("FINISHED", None, JobState.FAILED),
    ("FAILED", 3, JobState.FAILED), ("KILLED", None, JobState.CANCELLED),
    ("HELD", None, JobState.HELD), ("WIPED", None, JobState.UNKNOWN),
    ("SOMETHING-NEW", None, JobState.UNKNOWN),
])
def test_arex_states_map_onto_the_contract(native: str, exit_code: int | None,
                                           expected: JobState) -> None:
    assert states.normalise(native, exit_code) is expected


def test_one_entry_and_a_list_of_entries_read_alike() -> None:
    one = {"job": {"id": "a", "status-code": "201"}}
    many = {"job": [{"id": "a", "status-code": "201"}, {"id": "b", "status-code": "404"}]}
    assert rest.entries(one) == [{"id": "a", "status-code": "201"}]
    assert [rest.code(e) for e in rest.entries(many)] == [201, 404]
    assert rest.entries({"nothing": 1}) == [] and rest.code({"status-code": "x"}) == 0


def test_xrsl_names_every_file_and_quotes_what_it_must() -> None:
    spec = JobSpec(script="true\n", name='odd "name"/x', inputs={"in put.bin": b"1"},
                   outputs=("out.txt",), cpus=2, walltime_s=61)
    text = driver._xrsl(spec)
    assert '(inputfiles=("job.sh" "")("in put.bin" ""))' in text
    assert '(outputfiles=("out.txt" "")("job.stdout" "")("job.stderr" ""))' in text
    assert '(jobname="odd__name__x")' in text
    assert "(count=2)" in text and '(walltime="2")' in text
    assert driver._quoted('a"b') == '"a""b"'


def test_the_script_carries_environment_and_arguments_quoted() -> None:
    spec = JobSpec(script="#!/bin/sh\necho \"$1\"\n", args=("it's",), env={"K": "a b"})
    assert driver._script(spec) == ("#!/bin/bash\nexport K='a b'\nset -- 'it'\"'\"'s'\n"
                                    "echo \"$1\"\n")


@pytest.mark.parametrize(("spec", "words"), [
    (JobSpec(script="true\n", container="img:1"), "no container jobs"),
    (JobSpec(script="true\n", remote_inputs={"a": "s3://h/b/k"}), "remote inputs"),
    (JobSpec(script="true\n", outputs=("job.stdout",)), "driver's own"),
])
def test_what_the_driver_cannot_run_is_refused_before_submitting(spec: JobSpec,
                                                                 words: str) -> None:
    class Unreachable:
        def create(self, description: str) -> list[object]:
            raise AssertionError("nothing may be sent for a refused job")

    client = driver.ArcClient(Unreachable(), None, "arc", {})  # type: ignore[arg-type]
    [result] = client.submit([spec])
    assert not result.ok and words in result.error


def test_a_status_entry_without_an_arcrest_state_is_unknown_with_the_answer() -> None:
    handle = JobHandle("arc", "abc")
    seen = driver._status(handle, {"status-code": "200", "info_document": {
        "ComputingActivity": {"State": ["nordugrid:FINISHED"], "ExitCode": "0"}}})
    assert seen.state is JobState.UNKNOWN and "nordugrid:FINISHED" in seen.reason
    done = driver._status(handle, {"status-code": "200", "info_document": {
        "ComputingActivity": {"State": ["nordugrid:FINISHED", "arcrest:FINISHED"],
                              "ExitCode": "7"}}})
    assert (done.state, done.native_state, done.exit_code) == (JobState.FAILED, "FINISHED", 7)
    assert driver._status(handle, {"status-code": "404"}).state is JobState.UNKNOWN


def test_an_endpoint_that_is_not_https_or_a_missing_certificate_is_a_clear_error(
        tmp_path: Path) -> None:
    creds = rest.Credentials(ca=str(tmp_path / "ca.pem"), cert=str(tmp_path / "c.pem"),
                             key=str(tmp_path / "k.pem"))
    with pytest.raises(BackendCallError, match="not an https URL"):
        rest.ArexRest("http://localhost:1/arex", creds)
    with pytest.raises(BackendCallError, match=r"CA certificate .*ca\.pem"):
        rest.ArexRest("https://localhost:1/arex", creds)
