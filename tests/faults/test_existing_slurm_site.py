"""An existing deployment, as a site's admin or a release manager meets it: our own 2-node Slurm
cluster behind its jump host, brought up once with ``pytest-stacks up`` and then declared in a
user project's manifest with ``provider: existing`` (route and key from environment variables).

Proven here, by looking at the site itself (``docker exec`` into its login node, the trusted
channel, never our client's memory): the contract and backend suites pass against it; afterwards
the cluster is still up and holds nothing of the run; a SIGKILLed run's jobs and folder are
reaped by the next run on the site (after which ``pytest-stacks reap NAME`` finds nothing)
while a live run's are untouched (and removed by its own end); a version outside the range, a
wrong host key and an unreachable host are infrastructure errors in seconds that create
nothing.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults.site_support import (
    CLI,
    ENGINE,
    REPO,
    assert_whole_pass,
    closed_port,
    compose_exec,
    infra_in_seconds,
    kept_stack,
    poll,
    pytest_session,
    reap_site,
    start_holder,
    two_holders,
    write_manifest,
)

pytestmark = ENGINE
CLUSTER = "slurm-26.05-cluster-jump"
JOB_ROOT = "/work/jobs"
SITE = """
version: 1
catalogue: {{version: "0.1", use: []}}
stacks:
  - name: site-slurm
    description: A site's Slurm cluster behind a bastion (here, our own, kept by pytest-stacks up).
    backend: slurm
    version: "26.05.5"
    provider: existing
    transport: ssh
    configuration: multi-node-bastion
    capabilities: [submit, status, execution, kill, purge, inputs, outputs, outputs.repeatable, mpi]
    lanes: [site]
    existing:
      versions: "{versions}"
      ssh:
        via: [{{host: 127.0.0.1, port: {{env: SITE_JUMP_PORT}}, user: submitter}}]
        login: {{host: login, user: submitter}}
        key: {{env: SITE_SSH_KEY}}
        known_hosts: {{env: SITE_KNOWN_HOSTS}}
      job_root: {job_root}
"""
NEXT_RUN = """
import pytest
from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for

@pytest.mark.requires("submit", "status")
def test_a_job_runs(backend, stack):
    [job] = submitted(backend.submit([JobSpec(script="true\\n")]))
    [status] = wait_for(backend, [job], timeout=stack.timeouts.job)
    assert status.state is JobState.COMPLETED, status
"""


@dataclass
class Site:
    project: str
    env: dict[str, str]
    route: dict[str, object]

    def login(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return compose_exec(self.project, "login", *argv)

    def run_folders(self) -> list[str]:
        listed = self.login("sh", "-c", f"cd {JOB_ROOT} && ls -1d pst-* 2>/dev/null || true")
        return sorted(listed.stdout.split())

    def owner_of(self, folder: str) -> dict[str, object]:
        read = self.login("cat", f"{JOB_ROOT}/{folder}/.pytest-stacks-owner.json")
        return json.loads(read.stdout) if read.returncode == 0 else {}

    def tagged_jobs(self) -> dict[str, str]:
        """Every queued job carrying a run's comment: job id -> that run id."""
        listed = self.login("squeue", "-h", "-o", "%i|%k")
        jobs = {}
        for line in listed.stdout.splitlines():
            job, _, comment = line.partition("|")
            if comment.startswith("pytest-stacks-run="):
                jobs[job] = comment.removeprefix("pytest-stacks-run=")
        return jobs

    def manifest(self, where: Path, versions: str = ">=24.11,<27") -> Path:
        return write_manifest(where, SITE.format(versions=versions, job_root=JOB_ROOT))


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Site]:
    with kept_stack(CLUSTER, tmp_path_factory.mktemp("site-slurm")) as shown:
        route = json.loads(str(shown["ssh"]))
        env = {"SITE_JUMP_PORT": str(route["hops"][0]["port"]), "SITE_SSH_KEY": route["key"],
               "SITE_KNOWN_HOSTS": route["known_hosts"]}
        yield Site(str(shown["project"]), env, route)


def test_doctor_runs_the_preflight_alone(site: Site, tmp_path: Path) -> None:
    manifest = site.manifest(tmp_path)
    said = subprocess.run([CLI, "--manifest", str(manifest),
                           "doctor", "site-slurm"], capture_output=True, text=True,
                          env={**os.environ, **site.env}, timeout=120, check=False)
    assert said.returncode == 0, said.stdout + said.stderr
    assert ("[ok  ] site site-slurm: reachable, authenticated, slurm client version 26.05.5, "
            "slurmctld version 26.05.5") in said.stdout, said.stdout
    assert "docker" not in said.stdout.lower(), "a site needs nothing of this machine's engine"
    missing = subprocess.run([CLI, "--manifest", str(manifest),
                              "doctor", "site-slurm"], capture_output=True, text=True,
                             env={k: v for k, v in {**os.environ, **site.env}.items()
                                  if k != "SITE_SSH_KEY"},
                             timeout=60, check=False)
    assert missing.returncode == 1
    assert "SITE_SSH_KEY, which is not set here" in missing.stdout, missing.stdout


def test_the_suites_pass_against_the_site_and_leave_it_as_it_was(site: Site,
                                                                 tmp_path: Path) -> None:
    before = site.run_folders()
    results = tmp_path / "results.json"
    done = pytest_session(
        [str(REPO / "tests/contract"), str(REPO / "tests/backend"), "--stack=site-slurm",
         f"--stack-manifest={site.manifest(tmp_path)}", "--stack-unproven=fail",
         f"--stack-results={results}"], env=site.env, cwd=REPO)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    summary = out.strip().splitlines()[-1]
    assert " passed" in summary and "failed" not in summary and "infra" not in summary, summary
    assert_whole_pass(results, "26.05.5")
    # Teardown names the jobs it looked up by id (every one the run's client submitted).
    assert "site-slurm: looked up by id in squeue (submitter's pending and running jobs)" \
        in out, out[-3000:]
    # The site afterwards: up, and nothing of the run on it.
    assert site.run_folders() == before, "the run's folder is still on the site"
    assert site.tagged_jobs() == {}, "a job of the run is still queued"
    assert site.login("scontrol", "ping").stdout.count("UP") >= 1, "the site must stay up"


def _start(site: Site, where: Path) -> subprocess.Popen[str]:
    return start_holder(where, "site-slurm", site.manifest(where), site.env)


def _run_of(site: Site, pid: int) -> str:
    """The run id whose owner record names ``pid``, once that run has a job queued."""
    def find() -> str:
        for folder in site.run_folders():
            owner = site.owner_of(folder)
            if owner.get("pid") == pid and owner["run_id"] in site.tagged_jobs().values():
                return str(owner["run_id"])
        return ""
    return poll(find, timeout=180, what=f"a queued job of the run with owner pid {pid}")


def test_a_killed_runs_objects_are_reaped_and_a_live_runs_are_not(site: Site,
                                                                  tmp_path: Path) -> None:
    with two_holders(lambda where: _start(site, where), tmp_path) as holders:
        dead_run, live_run = _run_of(site, holders.dead.pid), _run_of(site, holders.live.pid)
        holders.kill_dead()
        # The next run on the site reaps the dead one's objects as it attaches.
        (tmp_path / "test_next.py").write_text(NEXT_RUN)
        after = pytest_session([str(tmp_path / "test_next.py"), "--stack=site-slurm",
                                f"--stack-manifest={site.manifest(tmp_path)}",
                                "--stack-unproven=warn"], env=site.env, cwd=tmp_path)
        assert after.returncode == 0, (after.stdout + after.stderr)[-3000:]
        said = reap_site(site.manifest(tmp_path), "site-slurm", site.env)
        assert "nothing to reap" in said, f"the next run left the dead one's: {said}"
        jobs = site.tagged_jobs()
        assert dead_run not in jobs.values(), f"the dead run's job is still queued: {jobs}"
        assert f"pst-{dead_run}" not in site.run_folders()
        assert live_run in jobs.values(), "the live run's job was touched"
        assert f"pst-{live_run}" in site.run_folders(), "the live run's folder was touched"
    # The live run's own end (after Ctrl-C) removed its objects and proved it.
    assert live_run not in site.tagged_jobs().values(), holders.live_output[-3000:]
    assert f"pst-{live_run}" not in site.run_folders(), holders.live_output[-3000:]


def _swapped_host_keys(site: Site, where: Path) -> str:
    """known_hosts with the login node pinned to the jump host's key: a key the site does not
    have for that host, as after a man-in-the-middle or an unannounced re-key."""
    lines = Path(str(site.route["known_hosts"])).read_text().splitlines()
    jump_key = lines[0].split(" ", 1)[1]
    swapped = [lines[0], f"{lines[1].split(' ', 1)[0]} {jump_key}"]
    path = where / "known_hosts"
    path.write_text("\n".join(swapped) + "\n")
    return str(path)


@pytest.mark.parametrize("fault", ["version outside the range", "wrong host key",
                                   "unreachable host"])
def test_a_site_that_fails_its_preflight_is_infra_in_seconds_and_gets_nothing(
        site: Site, tmp_path: Path, fault: str) -> None:
    env, versions = dict(site.env), ">=24.11,<27"
    expected = ""
    if fault == "version outside the range":
        versions, expected = ">=27", "slurmctld runs Slurm 26.05.5"
    elif fault == "wrong host key":
        env["SITE_KNOWN_HOSTS"] = _swapped_host_keys(site, tmp_path)
        expected = "host key"
    else:
        env["SITE_JUMP_PORT"], expected = str(closed_port()), "cannot be reached"
    before = site.run_folders()
    infra_in_seconds(tmp_path, "site-slurm", site.manifest(tmp_path, versions), env, expected)
    assert site.run_folders() == before, "a failed preflight created something on the site"
