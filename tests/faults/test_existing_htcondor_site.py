"""An existing HTCondor pool, as a site runs it: our split pool (central manager, submit node,
execute node) kept by ``pytest-stacks up`` and declared with ``provider: existing``, reached over
SSH on its submit node with the login user's own key.

Proven on the pool itself (``docker exec`` into the submit node, as root): the contract and
backend suites pass against it, and afterwards the pool is still up and its queue holds no job
of the run (``PytestStacksRun``) and the login user's home no folder of it; a version outside
the range is an infrastructure error in seconds that creates nothing.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.faults.site_support import (
    ENGINE,
    REPO,
    assert_whole_pass,
    compose_exec,
    infra_in_seconds,
    kept_stack,
    pytest_session,
    write_manifest,
)

pytestmark = ENGINE
POOL = "htcondor-23.9-pool-ssh"
JOB_ROOT = "/home/submitter"
SITE = """
version: 1
catalogue: {{version: "0.1", use: []}}
stacks:
  - name: site-htcondor
    description: A site's HTCondor pool (here, our own split pool, kept by pytest-stacks up).
    backend: htcondor
    version: "23.9.6"
    provider: existing
    transport: ssh
    configuration: split-pool
    capabilities: [submit, status, execution, kill, purge, inputs, outputs, outputs.repeatable]
    lanes: [site]
    existing:
      versions: "{versions}"
      ssh:
        login: {{host: 127.0.0.1, port: {{env: SITE_SUBMIT_PORT}}, user: submitter}}
        key: {{env: SITE_SSH_KEY}}
        known_hosts: {{env: SITE_KNOWN_HOSTS}}
      job_root: {job_root}
    options:
      output_retrieval: repeatable
"""


@dataclass
class Pool:
    project: str
    env: dict[str, str]

    def submit_node(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return compose_exec(self.project, "submit", *argv)

    def run_folders(self) -> list[str]:
        listed = self.submit_node("sh", "-c", f"cd {JOB_ROOT} && ls -1d pst-* 2>/dev/null || :")
        return sorted(listed.stdout.split())

    def tagged_jobs(self) -> list[str]:
        listed = self.submit_node("condor_q", "-allusers", "-constraint",
                                  "PytestStacksRun =!= undefined", "-af", "ClusterId",
                                  "PytestStacksRun")
        assert listed.returncode == 0, listed.stderr
        return listed.stdout.splitlines()

    def manifest(self, where: Path, versions: str = ">=23.9,<25") -> Path:
        return write_manifest(where, SITE.format(versions=versions, job_root=JOB_ROOT))


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Pool]:
    with kept_stack(POOL, tmp_path_factory.mktemp("site-htcondor")) as shown:
        route = json.loads(str(shown["ssh"]))
        yield Pool(str(shown["project"]), {"SITE_SUBMIT_PORT": str(route["hops"][0]["port"]),
                                           "SITE_SSH_KEY": route["key"],
                                           "SITE_KNOWN_HOSTS": route["known_hosts"]})


def test_the_suites_pass_against_the_pool_and_leave_it_as_it_was(pool: Pool,
                                                                 tmp_path: Path) -> None:
    before = pool.run_folders()
    results = tmp_path / "results.json"
    done = pytest_session(
        [str(REPO / "tests/contract"), str(REPO / "tests/backend"), "--stack=site-htcondor",
         f"--stack-manifest={pool.manifest(tmp_path)}", "--stack-unproven=fail",
         f"--stack-results={results}"], env=pool.env, cwd=REPO)
    out = done.stdout + done.stderr
    assert done.returncode == 0, out[-6000:]
    assert_whole_pass(results, "23.9.6")
    # Teardown names the jobs it looked up by id (every one the run's client submitted).
    assert "site-htcondor: looked up by id in condor_q (the schedd's queue)" in out, out[-3000:]
    assert pool.run_folders() == before, "the run's folder is still on the submit node"
    assert pool.tagged_jobs() == [], "a job of the run is still in the queue"
    assert pool.submit_node("condor_q", "-totals").returncode == 0, "the pool must stay up"


def test_a_pool_outside_the_range_is_infra_in_seconds_and_gets_nothing(pool: Pool,
                                                                       tmp_path: Path) -> None:
    before = pool.run_folders()
    infra_in_seconds(tmp_path, "site-htcondor", pool.manifest(tmp_path, ">=25"), pool.env,
                     "the site's schedd runs HTCondor 23.9.6 (its tools on the login node: "
                     "23.9.6), outside the range '>=25'")
    assert pool.run_folders() == before
