"""A site's HTCondor pool, on a double of its login node: the version the preflight checks is
the schedd's (its own ad in the collector, ``condor_status -schedd``), not the login node's
``condor_version``; the run's end looks up each job it submitted in ``condor_q`` by id.

The double answers as the tools do: ``condor_version`` prints the installed (client) build and
asks no daemon; ``condor_status -schedd -af Name CondorVersion`` lists each schedd's own ad;
``condor_q -totals`` names the schedd it asked in its header; ``condor_q -constraint C -af ...``
prints one line per matching job, an undefined attribute as ``undefined``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

import pytest

from pytest_stacks.backends.htcondor.site import HTCondorSite
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.manifest import Stack, loads
from pytest_stacks.transports import CommandResult

REPO = Path(__file__).resolve().parents[2]
RUN = "20261201000000-abcdef12"
SITE = """
version: 1
capabilities: {submit: s}
backends: {htcondor: {window: {anchor: "23.9", leading_edge: "25.14"}}}
stacks:
  - name: site
    backend: htcondor
    version: "25.14.1"
    provider: existing
    transport: ssh
    capabilities: [submit]
    configuration: pool
    lanes: [site]
    existing:
      versions: "RANGE"
      job_root: /srv/pst
      ssh: {login: {host: login, user: alice}, key: /k, known_hosts: /h}
"""
ENDPOINTS = {"ssh": "{}", "login_user": "alice", "job_root": "/srv/pst"}


class LoginNode:
    def __init__(self, schedd: str = "25.14.1", client: str = "25.14.1") -> None:
        self.schedd, self.client = schedd, client
        self.jobs: dict[str, tuple[int, str]] = {}  # id -> (JobStatus, PytestStacksRun)
        self.asked: list[tuple[str, ...]] = []

    def run(self, argv: Sequence[str], *, user: str | None = None,
            timeout: float = 60.0) -> CommandResult:
        argv = tuple(argv)
        self.asked.append(argv)
        if argv == ("condor_version",):
            return self._ok(argv, f"$CondorVersion: {self.client} 2026-11-02 $\n"
                                  "$CondorPlatform: X86_64-Debian_13 $\n")
        if argv[:2] == ("condor_status", "-schedd"):
            return self._ok(argv, f"submit@site $CondorVersion: {self.schedd} 2026-11-02 $\n")
        if argv[:2] == ("condor_status", "-af"):
            return self._ok(argv, "Unclaimed\nClaimed\n")
        if argv[:2] == ("condor_q", "-totals"):
            return self._ok(argv, "\n-- Schedd: submit@site : <10.0.0.3:9618?...>\n"
                                  "Total for query: 0 jobs\n")
        if argv[:2] == ("condor_q", "-constraint"):
            wanted = set(re.findall(r"ClusterId == (\d+) && ProcId == (\d+)", argv[2]))
            lines = [f"{j.split('.')[0]} {j.split('.')[1]} {status} {tag or 'undefined'}"
                     for j, (status, tag) in self.jobs.items()
                     if tuple(j.split(".")) in wanted]
            return self._ok(argv, "".join(f"{line}\n" for line in lines))
        if argv[0] == "sh":
            return self._ok(argv, "")
        return CommandResult(argv, 127, "", f"{argv[0]}: command not found\n")

    @staticmethod
    def _ok(argv: tuple[str, ...], out: str) -> CommandResult:
        return CommandResult(argv, 0, out, "")


def _stack(versions: str = ">=25,<26") -> Stack:
    return loads(SITE.replace("RANGE", versions), REPO / "manifest.yaml").stacks[0]


def test_the_preflight_checks_the_schedds_version_not_the_login_nodes_tools() -> None:
    """New client tools in front of an old schedd: the range is the daemon's."""
    node = LoginNode(schedd="23.9.6", client="25.14.1")
    with pytest.raises(InfrastructureError) as caught:
        HTCondorSite().check(_stack(), node, ENDPOINTS)
    said = str(caught.value)
    assert "the site's schedd runs HTCondor 23.9.6" in said and "25.14.1" in said, said


def test_an_old_client_before_a_schedd_in_range_passes_and_both_are_recorded() -> None:
    node = LoginNode(schedd="25.14.1", client="23.9.6")
    facts = HTCondorSite().check(_stack(), node, ENDPOINTS)
    assert facts == {"htcondor_version": "25.14.1", "htcondor_client_version": "23.9.6"}


def test_teardown_looks_up_each_submitted_job_and_names_one_whose_tag_was_rewritten() -> None:
    node = LoginNode()
    node.jobs = {"7.0": (2, "other-tag"), "9.0": (1, RUN)}
    account = HTCondorSite().account_jobs(_stack(), node, ENDPOINTS, RUN,
                                          ["5.0", "7.0", "9.0"])
    assert account.gone == ("5.0",)
    assert account.left == (
        "job 7.0 is still in condor_q (JobStatus 2; its run tag is 'other-tag', not the "
        "run's, so the tag's sweep did not see it)",
        "job 9.0 is still in condor_q (JobStatus 1)")
    assert "condor_q" in account.where
    empty = HTCondorSite().account_jobs(_stack(), node, ENDPOINTS, RUN, [])
    assert empty.gone == () and empty.left == ()
