"""The drivers' container decisions, pure parts: where Slurm looks for oci.conf, what each
driver answers for a job in an image, and what it would submit."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_stacks.backends.htcondor import containers as condor
from pytest_stacks.backends.htcondor.api import ScheddError
from pytest_stacks.backends.htcondor.driver import HTCondorClient
from pytest_stacks.backends.htcondor.fake import FakeSchedd
from pytest_stacks.backends.htcondor.translate import describe_job
from pytest_stacks.backends.kubernetes import objects
from pytest_stacks.backends.slurm import containers as slurm
from pytest_stacks.backends.slurm.driver import SlurmClient
from pytest_stacks.backends.slurm.fake import FakeSlurmHost
from pytest_stacks.contract import JobSpec

IMAGE = "registry.example/probe:1"


@pytest.mark.parametrize(("show_config", "expected"), [
    ("SLURM_CONF              = /etc/slurm/slurm.conf\n", "/etc/slurm/oci.conf"),
    ("AccountingStorageType = (null)\nSLURM_CONF = /opt/site/etc/slurm.conf\n",
     "/opt/site/etc/oci.conf"),
    ("nothing that names it\n", "/etc/slurm/oci.conf"),
])
def test_oci_conf_is_looked_for_beside_slurm_conf(show_config: str, expected: str) -> None:
    assert slurm.oci_conf_path(show_config) == expected


def test_slurm_without_oci_conf_refuses_and_names_the_file() -> None:
    with pytest.raises(ValueError, match=r"refused at submit: Slurm 24\.11\.5 .*oci\.conf.*"
                                         r"/etc/slurm/oci\.conf is absent"):
        slurm.container_option(IMAGE, "24.11.5", "/etc/slurm/oci.conf", configured=False)


def test_slurm_with_oci_conf_runs_bundles_and_refuses_image_references() -> None:
    with pytest.raises(ValueError, match="OCI bundles"):
        slurm.container_option(IMAGE, "24.11.5", "/etc/slurm/oci.conf", configured=True)
    assert slurm.container_option("/shared/bundles/probe", "24.11.5", "/etc/slurm/oci.conf",
                                  configured=True) == ["--container=/shared/bundles/probe"]


@pytest.mark.parametrize(("version", "reason"), [
    ("24.11.5", "oci.conf configures an OCI runtime"),
    ("20.11.4", "unrecognized option '--container="),  # the old sbatch's own answer
])
def test_the_slurm_driver_refuses_container_jobs_per_job(version: str, reason: str) -> None:
    fake = FakeSlurmHost(version)
    try:
        client = SlurmClient(fake, "fake")
        refused, accepted = client.submit([JobSpec("true\n", container=IMAGE), JobSpec("true\n")])
        assert not refused.ok and reason in refused.error, refused.error
        assert accepted.ok, accepted.error
    finally:
        fake.close()


class _Slots:
    def __init__(self, ads: list[dict[str, object]] | Exception) -> None:
        self.ads = ads

    def slot_ads(self, constraint: str, projection: object) -> list[dict[str, object]]:
        if isinstance(self.ads, Exception):
            raise self.ads
        return self.ads


def test_htcondor_refuses_when_no_slot_advertises_a_runtime() -> None:
    assert "no execute slot in the pool advertises a container runtime" in condor.refusal(
        IMAGE, _Slots([]))
    assert condor.refusal(IMAGE, _Slots([{"Name": "slot1@node", "HasContainer": True}])) == ""


def test_a_pool_that_cannot_be_asked_refuses_the_job_not_the_bulk_submit(
        tmp_path: Path) -> None:
    assert "cannot ask the pool" in condor.refusal(IMAGE, _Slots(ScheddError("collector down")))
    assert "cannot ask the pool" in condor.refusal(IMAGE, object())  # no slot queries at all
    fake = FakeSchedd("23.9.6")
    try:
        fake.slot_ads = lambda *a, **k: (_ for _ in ()).throw(ScheddError("down"))  # type: ignore[method-assign]
        client = HTCondorClient(fake, "fake", tmp_path)
        plain, boxed = client.submit([JobSpec("true\n"), JobSpec("true\n", container=IMAGE)])
        assert plain.ok and not boxed.ok and "cannot ask the pool" in boxed.error
    finally:
        fake.close()


def test_htcondor_submits_a_container_job_to_the_container_universe(tmp_path: Path) -> None:
    description = describe_job(JobSpec("true\n", container=IMAGE), tmp_path / "job", None)
    assert description["universe"] == "container"
    assert description["container_image"] == IMAGE
    plain = describe_job(JobSpec("true\n"), tmp_path / "plain", None)
    assert plain["universe"] == "vanilla" and "container_image" not in plain


def test_a_kubernetes_job_in_an_image_puts_every_container_in_it() -> None:
    spec = JobSpec("true\n", container=IMAGE)
    opts = objects.options_of(spec, shape="pod", workers=2, image="worker:1")
    pod = objects.pod(spec, opts, name="p", namespace="ns", run_id="r")
    assert [c["image"] for c in pod["spec"]["containers"]] == [IMAGE]
    mpijob = objects.mpijob(spec, objects.options_of(spec, shape="mpijob", workers=2,
                                                     image="worker:1"),
                            name="m", namespace="ns", run_id="r")
    replicas = mpijob["spec"]["mpiReplicaSpecs"].values()
    assert {c["image"] for r in replicas for c in r["template"]["spec"]["containers"]} == {IMAGE}


def test_a_kubernetes_stack_that_pulls_nothing_refuses_an_image_no_node_has() -> None:
    real = objects.Runtime(real=True, pull_policy="Never")
    nodes = [{"status": {"images": [{"names": ["docker.io/pytest-stacks/probe:1"]}]}}]
    assert objects.image_refusal("pytest-stacks/probe:1", real, lambda: nodes) == ""
    assert "no node has image" in objects.image_refusal("other:2", real, lambda: nodes)
    pulls = objects.Runtime(real=True, pull_policy="IfNotPresent")
    assert objects.image_refusal("other:2", pulls, lambda: []) == ""
    assert objects.image_refusal("other:2", objects.SIMULATED, lambda: []) == ""
