"""What the HTCondor driver does differently for a 25.x pool, without a pool: container jobs in
the Apptainer sandboxes the nodes keep, remote outputs refused where a 25.10+ access point
would hold the job, and the stack entries that declare both."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.backends.htcondor import containers, staging
from pytest_stacks.backends.htcondor.driver import HTCondorClient
from pytest_stacks.backends.htcondor.fake import FakeSchedd
from pytest_stacks.backends.htcondor.translate import describe_job
from pytest_stacks.contract import JobSpec
from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import Stack, load
from pytest_stacks.providers import apptainer_images

REPO = Path(__file__).resolve().parents[2]
PROBE = "pytest-stacks/container-probe:1"
SANDBOX = f"{containers.SANDBOXES}/container-probe"
REMOTE = JobSpec("echo x > r.bin\n", remote_outputs={"r.bin": "s3://store:9000/b/k"},
                 credentials="/creds/store")


def _stack(name: str = "htcondor-25", **options: Any) -> Stack:
    stack = load(REPO / "manifest.yaml").get(name)
    return dataclasses.replace(stack, options=options) if options else stack


def test_the_leading_edge_runs_containers_in_a_sandbox_of_the_probe() -> None:
    stack = _stack()
    assert "container" in stack.capabilities and "container.refused" not in stack.capabilities
    assert containers.stack_sandboxes(stack) == {PROBE: SANDBOX}
    assert apptainer_images.build_args(stack) == {"CONTAINER_RUNTIME": "apptainer"}
    for name in ("htcondor-23.9", "htcondor-25-pool-ssh"):  # no runtime: refused there
        assert containers.stack_sandboxes(_stack(name)) == {}
        assert "container.refused" in _stack(name).capabilities


def test_an_unknown_runtime_names_the_field_and_the_choices() -> None:
    with pytest.raises(StacksError, match=r"htcondor-25: options\.container_runtime must be one "
                                          r"of apptainer .*got 'docker'"):
        containers.runtime_of(_stack(container_runtime="docker"))


def test_a_kept_image_runs_from_its_sandbox_and_any_other_goes_to_htcondor_as_named(
        tmp_path: Path) -> None:
    kept = describe_job(JobSpec("true\n", container=PROBE), tmp_path / "a", None,
                        {PROBE: SANDBOX})
    assert (kept["universe"], kept["container_image"], kept["transfer_container"]) == (
        "container", SANDBOX, "false")
    other = describe_job(JobSpec("true\n", container="docker://debian:13"), tmp_path / "b",
                         None, {PROBE: SANDBOX})
    assert other["container_image"] == "docker://debian:13" and "transfer_container" not in other


def test_a_job_in_an_image_runs_under_the_images_own_sh(tmp_path: Path) -> None:
    """The probe image has BusyBox and no bash: a #!/bin/bash job never started there."""
    describe_job(JobSpec("echo hi\n", container=PROBE), tmp_path / "c", None)
    assert (tmp_path / "c" / "job.sh").read_text().startswith("#!/bin/sh\n")
    describe_job(JobSpec("echo hi\n"), tmp_path / "d", None)
    assert (tmp_path / "d" / "job.sh").read_text().startswith("#!/bin/bash\n")


@pytest.mark.parametrize(("daemon", "refused"), [
    ((23, 9, 6), False), ((25, 0, 14), False), ((25, 8, 2), False),
    ((25, 10, 0), True), ((25, 14, 1), True), ((26, 0, 0), True)])
def test_remote_outputs_are_refused_from_the_first_access_point_that_holds_them(
        daemon: tuple[int, ...], refused: bool) -> None:
    reason = staging.output_refusal(REMOTE, daemon)
    assert bool(reason) is refused
    if refused:
        assert "illegal sandbox path" in reason and "r.bin" in reason
    assert staging.output_refusal(JobSpec("true\n"), daemon) == ""  # nothing remote: fine


@pytest.mark.parametrize(("version", "refused"), [("23.9.6", False), ("25.14.1", True)])
def test_the_driver_refuses_per_job_by_the_schedds_version(tmp_path: Path, version: str,
                                                           refused: bool) -> None:
    fake = FakeSchedd(version)
    try:
        client = HTCondorClient(fake, "fake", tmp_path)
        plain, remote = client.submit([JobSpec("true\n"), REMOTE])
        assert plain.ok
        if refused:
            assert not remote.ok and "remote outputs (r.bin)" in remote.error, remote
        else:
            assert remote.ok or "remote outputs" not in remote.error, remote
    finally:
        fake.close()


def test_show_says_the_name_is_this_stacks_and_how_the_same_line_is_had_otherwise() -> None:
    from pytest_stacks import tables

    manifest = load(REPO / "manifest.yaml")
    shown = tables.stack_details(manifest.get("htcondor-25"), None, manifest)
    assert "same line (htcondor 25.x), other stacks:" in shown
    assert "upstream image htcondor/mini:25.13.2-el9, needs docker, registry" in shown
    assert "--stack=htcondor-25 runs this stack (built here)" in shown
    assert "same line" not in tables.stack_details(manifest.get("fake-htcondor"), None,
                                                   manifest)
