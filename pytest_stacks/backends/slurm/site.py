"""A site's own Slurm, reached over SSH on its login node (provider ``existing``).

The preflight asks what the site's users would: slurmctld's version (``scontrol show config``,
in the manifest's range; the client tools' own, ``sinfo -V``, is recorded apart), the client
tools on the PATH, a node that can take a job now, and a job root the login
user can write. Each run works in ``<job_root>/pst-<run id>/`` and tags its jobs with its id
(name prefix and ``--comment``), so its end finds exactly its own jobs (``squeue -o %k``) and
cancels only those; then it looks up, by id, each job the run's client submitted, which finds
a job whose comment the site rewrote (:meth:`SlurmSite.account_jobs`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_stacks.backends import site_folders
from pytest_stacks.backends.site_account import JobAccount
from pytest_stacks.backends.slurm import parse
from pytest_stacks.backends.slurm.driver import SlurmClient, run_comment
from pytest_stacks.contract import JobClient
from pytest_stacks.errors import BackendCallError, InfrastructureError
from pytest_stacks.manifest import Stack
from pytest_stacks.transports import Transport

TOOLS = ("sbatch", "squeue", "scancel", "sinfo", "scontrol")
FREE_STATES = frozenset({"idle", "mix"})


class SlurmSite(site_folders.FolderSite):
    def check(self, stack: Stack, transport: Transport | None,
              endpoints: Mapping[str, str]) -> dict[str, str]:
        channel = site_folders.need(transport, stack)
        daemon, client = _versions(stack, channel)
        if not stack.accepts_version(daemon):
            raise InfrastructureError(stack.name, (
                f"preflight 'version': the site's slurmctld runs Slurm {daemon} (its client "
                f"tools on the login node: {client}), outside {stack.allowed_versions}. Point "
                f"the stack at a deployment in range, or change existing.versions if the suite "
                f"should cover {daemon}."))
        site_folders.check_tools(stack, channel, TOOLS, "Slurm")
        nodes = channel.run(["sinfo", "-h", "-o", "%t %D"], timeout=15)
        states = {line.split()[0].rstrip("*~#!%$@^-"): line.split()[1]
                  for line in nodes.stdout.splitlines() if len(line.split()) == 2}
        if not nodes.ok or not FREE_STATES & set(states):
            shown = (", ".join(f"{n} {s}" for s, n in states.items()) or nodes.stderr.strip()
                     or "sinfo said nothing")
            raise InfrastructureError(stack.name, (
                f"preflight 'free nodes': no partition has an idle or mixed node ({shown}). "
                f"Run when the site has room, or point the stack at a partition that does."))
        site_folders.check_root(stack, channel, endpoints)
        return {"slurmctld_version": daemon, "slurm_client_version": client}

    def client(self, stack: Stack, transport: Transport | None,
               endpoints: Mapping[str, str], run_dir: Path) -> JobClient:
        return SlurmClient(site_folders.need(transport, stack), stack.name,
                           user=endpoints[site_folders.LOGIN_USER],
                           job_root=site_folders.folder(endpoints, run_dir.name),
                           completion_user=str(stack.options.get("completion_user", "slurm")),
                           run_tag=run_dir.name, ask_controller=True)

    def remove_run(self, stack: Stack, transport: Transport | None,
                   endpoints: Mapping[str, str], run_id: str) -> list[str]:
        """The run's queued and running jobs cancelled and gone from ``squeue``, then its
        folder removed; each looked for again."""
        channel = site_folders.need(transport, stack)
        user = endpoints[site_folders.LOGIN_USER]
        left = site_folders.end_jobs(
            run_id, lambda: _run_jobs(channel, user, run_id),
            lambda: channel.run(["scancel", *_run_jobs(channel, user, run_id)], timeout=30),
            queue="squeue")
        return left + site_folders.remove(channel, endpoints, run_id)

    def account_jobs(self, stack: Stack, transport: Transport | None,
                     endpoints: Mapping[str, str], run_id: str,
                     job_ids: Sequence[str]) -> JobAccount:
        """The run's submitted jobs looked up by id in the login user's queue after its end:
        one the queue no longer lists is neither pending nor running; one it still lists is
        left, with the comment it carries (a site's job_submit plugin that rewrote the run's
        tag hid it from :meth:`remove_run`'s sweep)."""
        user = endpoints[site_folders.LOGIN_USER]
        queued = _queue(site_folders.need(transport, stack), user)
        marker, left = run_comment(run_id), []
        for job_id in (i for i in job_ids if i in queued):
            state, comment = queued[job_id]
            hidden = ("" if comment == marker else f"; its comment is {comment!r}, not the "
                      f"run's tag, so the tag's sweep did not see it")
            left.append(f"job {job_id} is still in squeue ({state}{hidden})")
        return JobAccount(gone=tuple(i for i in job_ids if i not in queued), left=tuple(left),
                          where=f"squeue ({user}'s pending and running jobs)")


def _versions(stack: Stack, channel: Transport) -> tuple[str, str]:
    """(slurmctld's version, the client tools'): the first is what the manifest's range is
    about, and only the controller says it (``scontrol show config``, filled in by slurmctld
    from its own build); ``sinfo -V`` prints the login node's client build and asks nobody."""
    asked = {}
    for what, argv in (("client", ["sinfo", "-V"]), ("daemon", ["scontrol", "show", "config"])):
        said = channel.run(argv, timeout=15)
        if not said.ok:
            raise InfrastructureError(stack.name, (
                f"preflight 'version': {' '.join(argv)} failed on the login node (exit "
                f"{said.returncode}): {(said.stderr or said.stdout).strip()[:300]}. Are "
                f"Slurm's client tools installed for the login user, and does slurmctld "
                f"answer from the login node?"))
        asked[what] = said.stdout
    try:
        return (parse.parse_config_version(asked["daemon"]),
                parse.parse_version(asked["client"]))
    except ValueError as exc:
        raise InfrastructureError(stack.name, f"preflight 'version': {exc}") from None


def _queue(transport: Transport, user: str) -> dict[str, tuple[str, str]]:
    """The login user's jobs still in the queue (pending, running, completing): id ->
    (state, comment)."""
    listed = transport.run(["squeue", "-h", "-u", user, "-o", "%i|%T|%k"], timeout=30)
    if not listed.ok:
        raise BackendCallError(f"squeue failed: {listed.stderr.strip()[:300]}")
    found = {}
    for line in listed.stdout.splitlines():
        job, state, comment = [*line.split("|", 2), "", ""][:3]
        found[job.strip()] = (state.strip(), comment.strip())
    return found


def _run_jobs(transport: Transport, user: str, run_id: str) -> list[str]:
    """The run's jobs still in the queue: by the comment every job of the run carries, among
    the login user's own."""
    marker = run_comment(run_id)
    return [job for job, (_, comment) in _queue(transport, user).items() if comment == marker]
