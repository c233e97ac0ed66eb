"""A site's own HTCondor pool, reached over SSH on a submit (login) node (provider ``existing``),
with HTCondor's command-line tools as the site's users run them.

The preflight: the tools on the PATH, the schedd answering ``condor_q``, the *schedd's* version
(its own ad in the collector, not the login node's ``condor_version``) in the manifest's range,
an unclaimed slot in the collector, a job root the login user can write. Each run's jobs carry
``PytestStacksRun`` (a job attribute) and live in the run's own folder, so its end removes
exactly them: ``condor_rm`` by that constraint, then ``-forcex`` for what stays in the removed
state.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_stacks.backends import site_folders
from pytest_stacks.backends.htcondor.api import ScheddError, parse_condor_version
from pytest_stacks.backends.htcondor.driver import HTCondorClient
from pytest_stacks.backends.htcondor.remote_cli import RUN_ATTRIBUTE, RemoteCliSchedd
from pytest_stacks.backends.htcondor.schedd_version import schedd_version
from pytest_stacks.backends.htcondor.translate import job_constraint, job_ids_of
from pytest_stacks.backends.site_account import JobAccount
from pytest_stacks.contract import JobClient
from pytest_stacks.errors import BackendCallError, InfrastructureError
from pytest_stacks.manifest import Stack
from pytest_stacks.transports import Transport

TOOLS = ("condor_submit", "condor_q", "condor_rm", "condor_history", "condor_transfer_data",
         "condor_status", "condor_version")
REMOVED = "3"


def run_constraint(run_id: str) -> str:
    return f'{RUN_ATTRIBUTE.removeprefix("MY.")} == "{run_id}"'


class HTCondorSite(site_folders.FolderSite):
    def check(self, stack: Stack, transport: Transport | None,
              endpoints: Mapping[str, str]) -> dict[str, str]:
        channel = site_folders.need(transport, stack)
        said = channel.run(["condor_version"], timeout=15)
        found = re.search(r"\$CondorVersion:\s*(\d+\.\d+\.\d+)", said.stdout)
        if not said.ok or not found:
            raise InfrastructureError(stack.name, (
                f"preflight 'version': condor_version failed on the login node (exit "
                f"{said.returncode}): {(said.stderr or said.stdout).strip()[:300]}. Is "
                f"HTCondor's client installed for the login user?"))
        client = found.group(1)
        site_folders.check_tools(stack, channel, TOOLS, "HTCondor")
        queue = channel.run(["condor_q", "-totals"], timeout=30)
        if not queue.ok:
            raise InfrastructureError(stack.name, (
                f"preflight 'schedd': condor_q does not reach the schedd from the login node: "
                f"{(queue.stderr or queue.stdout).strip()[:300]}"))
        # The range is the daemon's: the schedd's own ad, not the login node's tools.
        try:
            daemon = parse_condor_version(schedd_version(
                lambda argv: channel.run(argv, timeout=30)))
        except (ScheddError, ValueError) as exc:
            raise InfrastructureError(stack.name, f"preflight 'version': {exc}") from None
        if not stack.accepts_version(daemon):
            raise InfrastructureError(stack.name, (
                f"preflight 'version': the site's schedd runs HTCondor {daemon} (its tools "
                f"on the login node: {client}), outside {stack.allowed_versions}. Point the "
                f"stack at a pool in range, or change existing.versions if the suite should "
                f"cover {daemon}."))
        slots = channel.run(["condor_status", "-af", "State"], timeout=30)
        if not slots.ok or "Unclaimed" not in slots.stdout.split():
            shown = (" ".join(sorted(set(slots.stdout.split()))) or slots.stderr.strip()[:200]
                     or "no slots at all")
            raise InfrastructureError(stack.name, (
                f"preflight 'free slots': the collector lists no unclaimed slot ({shown}). "
                f"Run when the pool has room."))
        site_folders.check_root(stack, channel, endpoints)
        return {"htcondor_version": daemon, "htcondor_client_version": client}

    def client(self, stack: Stack, transport: Transport | None,
               endpoints: Mapping[str, str], run_dir: Path) -> JobClient:
        schedd = RemoteCliSchedd(site_folders.need(transport, stack),
                                 user=endpoints[site_folders.LOGIN_USER],
                                 job_root=site_folders.folder(endpoints, run_dir.name),
                                 run_tag=run_dir.name)
        return HTCondorClient(schedd, stack, run_dir)

    def remove_run(self, stack: Stack, transport: Transport | None,
                   endpoints: Mapping[str, str], run_id: str) -> list[str]:
        """The run's jobs removed from the queue (``condor_rm``, then ``-forcex`` for those
        the schedd keeps in the removed state) and gone from ``condor_q``; then its folder."""
        channel = site_folders.need(transport, stack)
        constraint = run_constraint(run_id)

        def listed() -> dict[str, str]:
            jobs = _run_jobs(channel, constraint)
            if REMOVED in jobs.values():  # kept in the removed state: take them out
                channel.run(["condor_rm", "-forcex", "-constraint",
                             f"{constraint} && JobStatus == {REMOVED}"], timeout=30)
            return jobs

        left = site_folders.end_jobs(
            run_id, listed, lambda: channel.run(["condor_rm", "-constraint", constraint],
                                                timeout=30), queue="condor_q")
        return left + site_folders.remove(channel, endpoints, run_id)

    def account_jobs(self, stack: Stack, transport: Transport | None,
                     endpoints: Mapping[str, str], run_id: str,
                     job_ids: Sequence[str]) -> JobAccount:
        """The run's submitted jobs looked up by id in the schedd's queue after its end: one
        ``condor_q`` no longer lists is gone from the queue; one it still lists is left, with
        the run tag it carries (a job whose tag a site's submit transform rewrote hid from
        :meth:`remove_run`'s sweep)."""
        channel = site_folders.need(transport, stack)
        ids = job_ids_of(job_ids)
        listed = channel.run(["condor_q", "-constraint", job_constraint(ids), "-af",
                              "ClusterId", "ProcId", "JobStatus",
                              RUN_ATTRIBUTE.removeprefix("MY.")], timeout=30) if ids else None
        if listed is not None and not listed.ok:
            raise BackendCallError(
                f"condor_q failed: {(listed.stderr or listed.stdout).strip()[:300]}")
        queued: dict[str, tuple[str, str]] = {}
        for line in (listed.stdout if listed else "").splitlines():
            parts = line.split(None, 3)
            if len(parts) >= 3:
                queued[f"{parts[0]}.{parts[1]}"] = (parts[2], parts[3] if len(parts) > 3 else "")
        left = []
        for job_id in (i for i in job_ids if i in queued):
            status, tag = queued[job_id]
            hidden = ("" if tag.strip('"') == run_id else f"; its run tag is {tag!r}, not "
                      f"the run's, so the tag's sweep did not see it")
            left.append(f"job {job_id} is still in condor_q (JobStatus {status}{hidden})")
        return JobAccount(gone=tuple(i for i in job_ids if i not in queued), left=tuple(left),
                          where="condor_q (the schedd's queue)")


def _run_jobs(transport: Transport, constraint: str) -> dict[str, str]:
    """The run's jobs in the queue: job id -> JobStatus."""
    listed = transport.run(["condor_q", "-constraint", constraint, "-af", "ClusterId",
                            "ProcId", "JobStatus"], timeout=30)
    if not listed.ok:
        raise BackendCallError(f"condor_q failed: {(listed.stderr or listed.stdout)[:300]}")
    jobs = {}
    for line in listed.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3:
            jobs[f"{parts[0]}.{parts[1]}"] = parts[2]
    return jobs
