"""A run's working folder on a site's shared filesystem (Slurm and HTCondor login nodes):
``<job_root>/pst-<run id>/``, holding the run's owner record and every job folder of the run,
so a run's files are one ``rm -rf`` away and another run's are never in reach.
"""

from __future__ import annotations

import shlex
from collections.abc import Callable, Collection, Mapping

from pytest_stacks.errors import BackendCallError, InfrastructureError
from pytest_stacks.manifest import Stack
from pytest_stacks.polling import poll_until
from pytest_stacks.transports import Transport

PREFIX = "pst-"
OWNER_FILE = ".pytest-stacks-owner.json"
JOB_ROOT = "job_root"
LOGIN_USER = "login_user"


def folder(endpoints: Mapping[str, str], run_id: str) -> str:
    return f"{endpoints[JOB_ROOT].rstrip('/')}/{PREFIX}{run_id}"


def need(transport: Transport | None, stack: Stack) -> Transport:
    if transport is None:
        raise InfrastructureError(stack.name, "an existing deployment of this backend is "
                                              "reached over ssh: set existing.ssh")
    return transport


def check_root(stack: Stack, transport: Transport, endpoints: Mapping[str, str]) -> None:
    """The job root exists and the login user may write in it (nothing is created)."""
    root = endpoints[JOB_ROOT]
    probe = transport.run(["sh", "-c", f"test -d {shlex.quote(root)} && "
                                       f"test -w {shlex.quote(root)}"], timeout=15)
    if not probe.ok:
        raise InfrastructureError(stack.name, (
            f"preflight 'job_root': {root} is not a folder the login user "
            f"{endpoints.get(LOGIN_USER, '?')} can write to on the login node. Create it on "
            f"the shared filesystem (mkdir -p {root}), or set existing.job_root to one."))


def check_tools(stack: Stack, transport: Transport, tools: tuple[str, ...], what: str) -> None:
    script = " && ".join(f"command -v {t} >/dev/null" for t in tools)
    found = transport.run(["sh", "-c", script], timeout=15)
    if not found.ok:
        missing = transport.run(["sh", "-c", "for t in " + " ".join(tools) + "; do command -v "
                                 "$t >/dev/null || echo $t; done"], timeout=15).stdout.split()
        raise InfrastructureError(stack.name, (
            f"preflight 'tools': {', '.join(missing) or ' '.join(tools)} not on the login "
            f"user's PATH on the login node. Log in as the site's users do and check that "
            f"{what}'s client tools are there."))


def open_run(transport: Transport, endpoints: Mapping[str, str], run_id: str,
             owner_record: str) -> None:
    transport.put_files(folder(endpoints, run_id), {OWNER_FILE: owner_record.encode()},
                        user=endpoints[LOGIN_USER], mode=0o600)


def runs(transport: Transport, endpoints: Mapping[str, str]) -> dict[str, str]:
    """Every run folder under the job root: run id -> its owner record ("" if none)."""
    root = shlex.quote(endpoints[JOB_ROOT])
    script = (f"cd {root} 2>/dev/null || exit 0; for d in {PREFIX}*/; do d=${{d%/}}; "
              f"[ -d \"$d\" ] || continue; printf '\\n==PST== %s\\n' \"$d\"; "
              f"cat \"$d/{OWNER_FILE}\" 2>/dev/null; done")
    listing = transport.run(["sh", "-c", script], timeout=30)
    if not listing.ok:
        raise BackendCallError(f"listing the runs' folders under {endpoints[JOB_ROOT]} "
                               f"failed: {listing.stderr.strip()[:300]}")
    found: dict[str, str] = {}
    for block in listing.stdout.split("\n==PST== ")[1:]:
        name, _, record = block.partition("\n")
        found[name.strip()[len(PREFIX):]] = record.strip()
    return found


def end_jobs(run_id: str, listed: Callable[[], Collection[str]], cancel: Callable[[], object], *,
             queue: str, timeout: float = 60.0) -> list[str]:
    """Cancel the run's queued jobs (``cancel``) and wait until ``listed`` (the queue, asked
    again each time) shows none of them; what is left, one line, or []."""
    try:
        if listed():
            cancel()
            poll_until(listed, lambda jobs: not jobs, timeout=timeout, interval=0.5,
                       first_interval=0.1)
    except TimeoutError:
        return [f"jobs {' '.join(listed())} of run {run_id} are still in {queue} "
                f"{timeout:.0f}s after they were cancelled"]
    except BackendCallError as exc:
        return [f"the run's jobs could not be listed: {exc}"]
    return []


def remove(transport: Transport, endpoints: Mapping[str, str], run_id: str) -> list[str]:
    """The run's folder removed and looked for again; what is left, or []."""
    path = shlex.quote(folder(endpoints, run_id))
    removed = transport.run(["sh", "-c", f"rm -rf -- {path}; test ! -e {path}"], timeout=120)
    if removed.ok:
        return []
    return [f"{folder(endpoints, run_id)} is still there ({removed.stderr.strip()[:200]})"]


class FolderSite:
    """What Slurm's and HTCondor's site adapters share: the run's place is its folder on the
    login node's shared filesystem, holding its owner record."""

    def open_run(self, stack: Stack, transport: Transport | None,
                 endpoints: Mapping[str, str], run_id: str, owner_record: str) -> None:
        open_run(need(transport, stack), endpoints, run_id, owner_record)

    def runs(self, stack: Stack, transport: Transport | None,
             endpoints: Mapping[str, str]) -> dict[str, str]:
        return runs(need(transport, stack), endpoints)
