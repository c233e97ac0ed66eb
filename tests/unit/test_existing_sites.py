"""Existing deployments, the pure parts: the manifest's ``existing:`` block and its errors, the
route read from the environment, the owner records and who is judged dead, the operator version
read from a pod. The real sites are proven in tests/faults/test_existing_*_site.py."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from pytest_stacks.backends.kubernetes.site_operator import sighting
from pytest_stacks.errors import InfrastructureError, ManifestError
from pytest_stacks.manifest import Stack, loads
from pytest_stacks.providers import site_route
from pytest_stacks.providers.labels import process_start_time
from pytest_stacks.providers.site_owners import RunOwner, is_dead

REPO = Path(__file__).resolve().parents[2]
SLURM_SITE = """
version: 1
capabilities: {submit: s}
backends: {slurm: {window: {anchor: "22.05", leading_edge: "26.05"}}}
stacks:
  - name: site
    backend: slurm
    version: "24.11.5"
    provider: existing
    transport: ssh
    capabilities: [submit]
    configuration: cluster
    lanes: LANES
    existing:
      versions: "VERSIONS"
      job_root: /srv/pst
      ssh:
        login: {host: login.example.org, user: {env: SITE_USER}}
        via: [{host: bastion.example.org, port: {env: SITE_PORT}, user: alice}]
        key: KEY
        known_hosts: {env: SITE_KNOWN_HOSTS}
"""


def _site(lanes: str = "[site]", versions: str = ">=24.11,<27", key: str = "{env: SITE_KEY}"
          ) -> Stack:
    text = (SLURM_SITE.replace("LANES", lanes).replace("VERSIONS", versions)
            .replace("KEY", key))
    return loads(text, REPO / "manifest.yaml").stacks[0]


def test_an_existing_stack_reads_with_its_range_and_needs_no_engine() -> None:
    stack = _site()
    assert stack.provider == "existing" and stack.requires == ()
    assert stack.existing is not None and stack.existing.job_root == "/srv/pst"
    assert stack.accepts_version("24.11.5") and stack.accepts_version("26.05.1")
    assert not stack.accepts_version("23.11.10") and not stack.accepts_version("27.05.0")
    assert stack.allowed_versions == "the range '>=24.11,<27'"


@pytest.mark.parametrize(("change", "said"), [
    ({"lanes": "[pr, site]"}, "runs in the 'site' lane only"),
    ({"versions": "24.11+"}, "is not a PEP 440 version specifier"),
    ({"key": '"-----BEGIN OPENSSH PRIVATE KEY-----"'}, "looks like the secret itself"),
])
def test_bad_existing_blocks_are_refused_naming_the_field(change: dict[str, str],
                                                          said: str) -> None:
    with pytest.raises(ManifestError) as caught:
        _site(**change)
    assert said in str(caught.value)
    assert "manifest.yaml:" in str(caught.value), "the error names the file and line"


def test_a_compose_stack_cannot_borrow_the_site_lane_or_block() -> None:
    text = SLURM_SITE.replace("provider: existing", "provider: compose\n    compose: "
                              "{directory: stacks/slurm, service: slurm}")
    with pytest.raises(ManifestError) as caught:
        loads(text.replace("LANES", "[site]").replace("VERSIONS", ">=1").replace("KEY", "k"),
              REPO / "manifest.yaml")
    assert "only a stack with provider 'existing' takes an 'existing' block" in str(caught.value)
    assert "lane 'site' is for deployments that already exist" in str(caught.value)


def test_ssh_without_a_job_root_is_refused() -> None:
    text = SLURM_SITE.replace("      job_root: /srv/pst\n", "")
    with pytest.raises(ManifestError) as caught:
        loads(text.replace("LANES", "[site]").replace("VERSIONS", ">=1").replace("KEY", "k"),
              REPO / "manifest.yaml")
    assert "needs existing.job_root" in str(caught.value)


def _route_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "id").write_text("a key")
    (tmp_path / "known_hosts").write_text("bastion.example.org ssh-ed25519 AAAA\n")
    monkeypatch.setenv("SITE_KEY", str(tmp_path / "id"))
    monkeypatch.setenv("SITE_KNOWN_HOSTS", str(tmp_path / "known_hosts"))
    monkeypatch.setenv("SITE_USER", "alice")
    monkeypatch.setenv("SITE_PORT", "2222")


def test_the_route_comes_from_the_environment(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    _route_files(tmp_path, monkeypatch)
    endpoints = site_route.endpoints(_site())
    route = json.loads(endpoints["ssh"])
    assert route["hops"] == [{"host": "bastion.example.org", "port": 2222, "user": "alice"},
                             {"host": "login.example.org", "port": 22, "user": "alice"}]
    assert route["key"] == str(tmp_path / "id")
    assert endpoints["login_user"] == "alice" and endpoints["job_root"] == "/srv/pst"


@pytest.mark.parametrize(("variable", "value", "said"), [
    ("SITE_KEY", None, "reads the environment variable SITE_KEY, which is not set here"),
    ("SITE_KEY", "/nonexistent/id", "existing.ssh.key: no file at /nonexistent/id"),
    ("SITE_PORT", "ssh", "existing.ssh.via[0].port: 'ssh' is not a TCP port"),
])
def test_a_broken_route_names_the_field_and_the_variable(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, variable: str, value: str | None,
        said: str) -> None:
    _route_files(tmp_path, monkeypatch)
    if value is None:
        monkeypatch.delenv(variable)
    else:
        monkeypatch.setenv(variable, value)
    with pytest.raises(InfrastructureError) as caught:
        site_route.endpoints(_site())
    assert said in str(caught.value)


def _owner(**change: object) -> RunOwner:
    me = os.getpid()
    values: dict[str, object] = {"run_id": "r1", "stack": "site", "host": os.uname().nodename,
                                 "pid": me, "start": process_start_time(me)}
    values.update(change)
    return RunOwner.from_mapping(values)


def test_only_this_hosts_runs_whose_owner_is_gone_are_dead() -> None:
    assert not is_dead(_owner(), current_run="other"), "a live owner"
    gone = _owner(pid=2 ** 22 + 7)  # above the kernel's pid_max default: never a process
    assert is_dead(gone, current_run="other")
    assert not is_dead(gone, current_run="r1"), "the current run is never its own dead run"
    assert not is_dead(gone, current_run="other", kept={"r1"}), "kept by pytest-stacks up"
    assert not is_dead(_owner(pid=2 ** 22 + 7, host="another-host"), current_run="other"), \
        "another host's run is not ours to judge"
    reused = _owner(start="1")  # our pid, another start time: the owner is gone
    assert is_dead(reused, current_run="other")


def test_an_unreadable_owner_record_is_refused() -> None:
    with pytest.raises(ValueError):
        RunOwner.from_json("not json")
    with pytest.raises(ValueError):
        RunOwner.from_json(json.dumps({"run_id": "r1"}))
    assert RunOwner.from_json(_owner().to_json()) == _owner()


def test_the_operator_version_is_a_ready_operator_pods_release_tag() -> None:
    """Without the binary's word (its log empty), an operator pod's image tag names its
    version when it is a release (which pods are the operator's: test_site_kubernetes)."""
    class NoLogs:
        def logs(self, namespace: str, pod: str, limit_bytes: int = 65536, *,
                 container: str = "") -> str:
            return ""

    def version(image: str, ready: bool = True, container: str = "mpi-operator") -> str:
        pod = {"metadata": {"namespace": "mpi-operator", "name": "op"},
               "spec": {"containers": [{"name": container, "image": image}]},
               "status": {"conditions": [{"type": "Ready",
                                          "status": "True" if ready else "False"}]}}
        seen = sighting(NoLogs(), pod)  # type: ignore[arg-type]
        return "(not the operator)" if seen is None else seen.version
    assert version("mpioperator/mpi-operator:0.8.2") == "0.8.2"
    assert version("registry.local:5000/mpi-operator:v0.8.2@sha256:ab") == "0.8.2"
    assert version("registry.local:5000/mpi-operator@sha256:ab") == ""
    assert version("mpioperator/mpi-operator:0.8.2", ready=False) == ""
    assert version("pytest-stacks/mpi-operator:v0.8.2-754416ab0c213b38") == "0.8.2"
    assert version("mpioperator/mpi-operator:latest") == ""
    assert version("mpioperator/mpi-operator:0.9.0-rc.1") == ""
    assert version("mpioperator/mpi-operator:0.8.2", container="sidecar") == "(not the operator)"


def test_a_shared_namespace_loses_only_the_runs_objects() -> None:
    """``existing.namespace``: the run's objects go by their label; a colleague's object and
    the namespace itself stay (on the in-process cluster double, whose API answers alike)."""
    from pytest_stacks.backends.kubernetes.api import LABEL_RUN
    from pytest_stacks.backends.kubernetes.cleanup import delete_labelled
    from pytest_stacks.backends.kubernetes.fake import FakeCluster

    cluster = FakeCluster()
    try:
        cluster.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})

        def config_map(name: str, labels: dict[str, str]) -> None:
            cluster.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {
                "name": name, "namespace": "team", "labels": labels}})

        config_map("ours", {LABEL_RUN: "r1"})
        config_map("another-run", {LABEL_RUN: "r2"})
        config_map("colleague", {})
        assert delete_labelled(cluster, "team", "r1", [], timeout=5) == []
        left = sorted(o["metadata"]["name"] for o in cluster.list("ConfigMap", "team"))
        assert left == ["another-run", "colleague"]
        assert cluster.get("Namespace", None, "team") is not None
    finally:
        cluster.close()


def test_every_submit_on_a_site_is_written_down_with_whose_client_made_it(
        tmp_path: Path) -> None:
    """The recording client writes each id its submits returned for the run's teardown to look
    up; ids of pytest-stacks' client and of the suite's own are kept apart, each once."""
    import functools

    from pytest_stacks.contract import JobHandle, JobSpec, SubmitResult
    from pytest_stacks.plugin.fixtures import RecordingClient
    from pytest_stacks.providers import site_jobs

    class Client:
        def __init__(self, ids: list[str]) -> None:
            self.ids = iter(ids)

        def submit(self, specs: list[JobSpec]) -> list[SubmitResult]:
            return [SubmitResult(JobHandle("site", next(self.ids))), SubmitResult(None, "no")]

    ours = RecordingClient(Client(["101", "102"]), functools.partial(
        site_jobs.note, tmp_path, "site", ours=True))
    theirs = RecordingClient(Client(["a-1"]), functools.partial(
        site_jobs.note, tmp_path, "site", ours=False))
    ours.submit([JobSpec(script="true\n")])
    theirs.submit([JobSpec(script="true\n")])
    ours.submit([JobSpec(script="true\n")])
    assert site_jobs.read(tmp_path, "site") == site_jobs.Submitted(("101", "102"), ("a-1",))
    assert site_jobs.read(tmp_path, "other") == site_jobs.Submitted()


def test_a_site_that_cannot_look_a_job_up_claims_no_job_gone() -> None:
    """An adapter without a look-up by id (HTCondor's, for now): its tag's sweep is all it
    proved, and teardown says so rather than naming any job gone."""
    from pytest_stacks.providers import site_jobs

    said = site_jobs.said(site_jobs.Submitted(("12.0", "13.0")), None)
    assert said == ["the 2 job(s) pytest-stacks' client submitted (12.0, 13.0) were not looked "
                    "up by id: this site's teardown proves only that no job carrying the "
                    "run's tag is left"]
