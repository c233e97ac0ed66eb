"""A site's Slurm, on a double of its login node: which version the preflight checks (the
controller's, not the client tools'), what the site's client reports, and what the run's
teardown may claim about the jobs the run submitted.

The double answers as a real login node does, per Slurm's own sources: ``scontrol show config``
is slurmctld's answer (its ``SLURM_VERSION`` is the controller's build: ``_fill_ctld_conf`` sets
``version = SLURM_VERSION_STRING`` in slurmctld), ``sinfo -V`` prints the client's own build and
asks no daemon; ``squeue -h -u USER -o FMT`` lists that user's pending and running jobs with
the asked fields; ``scancel`` ends the login user's jobs (another user's: permission denied).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from pytest_stacks.backends.slurm.driver import run_comment
from pytest_stacks.backends.slurm.site import SlurmSite
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.manifest import Stack, loads
from pytest_stacks.providers import existing, site_jobs, ssh_access
from pytest_stacks.providers.base import RunContext, StackInfo
from pytest_stacks.transports import CommandResult

REPO = Path(__file__).resolve().parents[2]
LOGIN = "alice"
RUN = "20261201000000-abcdef12"
SITE = """
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
    lanes: [site]
    existing:
      versions: ">=24.11,<27"
      job_root: /srv/pst
      ssh: {login: {host: login, user: alice}, key: /k, known_hosts: /h}
"""
ENDPOINTS = {"ssh": "{}", "login_user": LOGIN, "job_root": "/srv/pst"}
FIELDS = {"%i": "id", "%k": "comment", "%T": "state", "%u": "user"}


@dataclass
class Job:
    id: str
    user: str
    comment: str = ""
    state: str = "RUNNING"
    stays: bool = False  # a job that scancel does not end (a node that never answers)


class LoginNode:
    """The commands the site adapter and its client send, answered as Slurm's tools do."""

    def __init__(self, daemon: str = "24.11.5", client: str = "24.11.5") -> None:
        self.daemon, self.client = daemon, client
        self.jobs: dict[str, Job] = {}
        self.asked: list[tuple[str, ...]] = []

    def queue(self, job_id: str, *, user: str = LOGIN, comment: str = "",
              stays: bool = False) -> None:
        self.jobs[job_id] = Job(job_id, user, comment, stays=stays)

    def run(self, argv: Sequence[str], *, user: str | None = None,
            timeout: float = 60.0) -> CommandResult:
        argv = tuple(argv)
        self.asked.append(argv)
        if argv[:2] == ("sinfo", "-V"):
            return self._ok(argv, f"slurm {self.client}\n")
        if argv[0] == "sinfo":
            return self._ok(argv, "idle 2\n")
        if argv[:3] == ("scontrol", "show", "config"):
            return self._ok(argv, "Configuration data as of 2026-12-01T00:00:00\n"
                                  "AccountingStorageType   = (null)\n"
                                  "SLURM_CONF              = /etc/slurm/slurm.conf\n"
                                  f"SLURM_VERSION           = {self.daemon}\n"
                                  "SlurmctldPort           = 6817\n")
        if argv[0] == "squeue":
            return self._squeue(argv)
        if argv[0] == "scancel":
            return self._scancel(argv)
        if argv[0] == "sh":  # the tools, the job root, the run's folder: all there, removable
            return self._ok(argv, "")
        return CommandResult(argv, 127, "", f"{argv[0]}: command not found\n")

    def _squeue(self, argv: tuple[str, ...]) -> CommandResult:
        owner = argv[argv.index("-u") + 1] if "-u" in argv else None
        fmt = argv[argv.index("-o") + 1] if "-o" in argv else "%i"
        lines = [self._line(fmt, job) for job in self.jobs.values()
                 if owner in (None, job.user)]
        return self._ok(argv, "".join(f"{line}\n" for line in lines))

    @staticmethod
    def _line(fmt: str, job: Job) -> str:
        return re.sub(r"%[ikTu]", lambda m: str(getattr(job, FIELDS[m.group()])), fmt)

    def _scancel(self, argv: tuple[str, ...]) -> CommandResult:
        errors = []
        for job_id in argv[1:]:
            job = self.jobs.get(job_id)
            if job is None:
                errors.append(f"scancel: error: Kill job error on job id {job_id}: "
                              f"Invalid job id specified\n")
            elif job.user != LOGIN:
                errors.append(f"scancel: error: Kill job error on job id {job_id}: "
                              f"Access/permission denied\n")
            elif not job.stays:
                del self.jobs[job_id]
        return CommandResult(argv, 1 if errors else 0, "", "".join(errors))

    @staticmethod
    def _ok(argv: tuple[str, ...], out: str) -> CommandResult:
        return CommandResult(argv, 0, out, "")

    def put_files(self, directory: str, files: Mapping[str, bytes], *, user: str,
                  mode: int = 0o644) -> None:
        pass

    def get_files(self, directory: str, names: Sequence[str]) -> dict[str, bytes]:
        return {}

    def close(self) -> None:
        pass


def _stack(versions: str = ">=24.11,<27") -> Stack:
    return loads(SITE.replace(">=24.11,<27", versions), REPO / "manifest.yaml").stacks[0]


# ------------------------------------------------------------ the versions


def test_the_preflight_checks_the_controllers_version_not_the_clients() -> None:
    """A login node with new client tools in front of an old slurmctld: the range is the
    daemon's, so the site is refused, naming both versions."""
    node = LoginNode(daemon="23.11.10", client="24.11.5")
    with pytest.raises(InfrastructureError) as caught:
        SlurmSite().check(_stack(), node, ENDPOINTS)
    said = str(caught.value)
    assert "slurmctld runs Slurm 23.11.10" in said and "outside the range '>=24.11,<27'" in said
    assert "24.11.5" in said, "the client's version is named too"


def test_an_old_client_before_a_daemon_in_range_passes_and_both_are_recorded() -> None:
    node = LoginNode(daemon="25.05.3", client="24.05.8")
    facts = SlurmSite().check(_stack(">=25.05,<27"), node, ENDPOINTS)
    assert facts == {"slurmctld_version": "25.05.3", "slurm_client_version": "24.05.8"}
    assert ("scontrol", "show", "config") in node.asked


def test_a_controller_that_does_not_answer_fails_the_preflight() -> None:
    node = LoginNode()
    real = node.run

    def down(argv: Sequence[str], **kw: object) -> CommandResult:
        if tuple(argv[:2]) == ("scontrol", "show"):
            return CommandResult(tuple(argv), 1, "", "slurm_load_ctl_conf error: Unable to "
                                 "contact slurm controller (connect failure)\n")
        return real(argv)
    node.run = down  # type: ignore[method-assign]
    with pytest.raises(InfrastructureError) as caught:
        SlurmSite().check(_stack(), node, ENDPOINTS)
    assert "Unable to contact slurm controller" in str(caught.value)


def test_the_site_client_reports_the_daemon_and_the_client_apart(tmp_path: Path) -> None:
    """What the run records as observed (``daemon``, ``client``) is read from slurmctld and
    from the client tools, each; the lifecycle checks the range against ``daemon``."""
    node = LoginNode(daemon="25.05.3", client="24.05.8")
    client = SlurmSite().client(_stack(), node, ENDPOINTS, tmp_path / RUN)
    assert client.versions() == {"daemon": "25.05.3", "client": "24.05.8"}


# ------------------------------------------------------------ the run's end


@pytest.fixture
def node(monkeypatch: pytest.MonkeyPatch) -> LoginNode:
    """The login node, reached by the site's SSH route (here, the double itself)."""
    made = LoginNode()
    monkeypatch.setattr(ssh_access, "transport", lambda endpoints: made)
    return made


def _down(tmp_path: Path, ours: Sequence[str] = (), suites: Sequence[str] = ()) -> list[str]:
    """The run's end, as its owner does it, after its tests submitted ``ours`` (through
    pytest-stacks' client) and ``suites`` (through the suite's own client)."""
    ctx = RunContext.for_this_process(RUN, tmp_path / RUN)
    ctx.run_dir.mkdir()
    site_jobs.note(ctx.run_dir, "site", list(ours), ours=True)
    site_jobs.note(ctx.run_dir, "site", list(suites), ours=False)
    info = StackInfo(provider="existing", endpoints=dict(ENDPOINTS), private={"run_id": RUN})
    return existing.ExistingProvider().down(_stack(), info, ctx)


def test_a_job_of_the_run_whose_tag_the_site_rewrote_is_not_proven_gone(
        node: LoginNode, tmp_path: Path) -> None:
    """A site's job_submit plugin that sets every job's comment (accounting) hides the run's
    tag: the sweep by tag finds nothing, and used to say the run's jobs were gone. Looked up
    by the ids the run's client submitted, job 101 is still running: not proven gone."""
    node.queue("101", comment="project=hpc42")  # the run's, its tag overwritten
    node.queue("102", comment=run_comment(RUN))  # the run's, tagged
    node.queue("300", user="bob", comment="project=hpc42")  # another user's
    with pytest.raises(InfrastructureError) as caught:
        _down(tmp_path, ours=["100", "101", "102"])
    said = str(caught.value)
    assert "job 101 is still in squeue (RUNNING; its comment is 'project=hpc42'" in said
    assert "102" not in node.jobs, "the tagged job was cancelled"
    assert "101" in node.jobs and "300" in node.jobs, "nothing is cancelled by id alone"


def test_teardown_says_which_jobs_it_looked_up_and_which_it_cannot_vouch_for(
        node: LoginNode, tmp_path: Path) -> None:
    """Every job pytest-stacks' client submitted is looked up by id and named gone; the
    suite's own client's jobs (untagged: teardown cannot tell them from a colleague's) are
    "not tracked", never "gone", and are left alone."""
    node.queue("103", comment=run_comment(RUN))
    node.queue("7001")  # the suite's own client's job, still running
    said = _down(tmp_path, ours=["101", "102", "103"], suites=["7001", "7002"])
    assert said == [
        "looked up by id in squeue (alice's pending and running jobs) after the run's end, "
        "3 job(s) of the run are gone: 101..103",
        "not tracked: 2 job(s) the suite's own client (pytest_stacks_backend) submitted "
        "(7001..7002); teardown neither ended nor looked for them, and does not say they "
        "are gone"]
    assert set(node.jobs) == {"7001"}
    assert ("squeue", "-h", "-u", LOGIN, "-o", "%i|%T|%k") in node.asked


def test_a_run_that_submitted_nothing_says_nothing(node: LoginNode, tmp_path: Path) -> None:
    assert _down(tmp_path) == []


def test_jobs_accounted_for_are_not_accounted_for_again(node: LoginNode, tmp_path: Path) -> None:
    """A stack ended early and brought up again in the same run: its second end speaks of the
    jobs submitted since, not of the first's again."""
    assert _down(tmp_path, ours=["101"]) != []
    ctx = RunContext.for_this_process(RUN, tmp_path / RUN)
    info = StackInfo(provider="existing", endpoints=dict(ENDPOINTS), private={"run_id": RUN})
    assert existing.ExistingProvider().down(_stack(), info, ctx) == []
