"""The ``existing`` provider: a site's own Slurm, HTCondor pool or Kubernetes cluster, which a
run attaches to and never starts, stops or changes beyond its own objects.

Bring-up is attach and preflight (:meth:`SiteAdapter.check`): reachable, authenticated, the
observed versions in the manifest's range, the capabilities' prerequisites present; then the
dead runs of this host are reaped and the run gets its own place on the site (a working folder,
a namespace) with its owner record. Teardown removes the run's objects and proves them gone by
looking again, then has the site look up each job the run's client submitted by its id
(:mod:`.site_jobs`), and says which it could not look for; the site itself stays as it was.
Routes and secrets come from the manifest's ``existing:`` block through :mod:`.site_route`
(files and environment variables, never inline).
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass

from pytest_stacks import places
from pytest_stacks.backends.site_account import JobAccount
from pytest_stacks.errors import BackendCallError, InfrastructureError, StacksError
from pytest_stacks.gobuild import GoModuleBuild
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import (
    site_adapter,
    site_jobs,
    site_route,
    ssh_access,
    stack_health,
)
from pytest_stacks.providers.base import (
    Attached,
    JobAccounting,
    RunContext,
    SiteAdapter,
    StackInfo,
)
from pytest_stacks.providers.site_owners import RunOwner, is_dead
from pytest_stacks.transports import Transport

#: The whole preflight's budget: a site that cannot be checked in this long is reported then.
PREFLIGHT_TIMEOUT = 30.0
SITE_LOGS = ("(an existing deployment's daemon logs belong to the site; ask its admins, or "
             "read the job's own output above)")


@dataclass
class Site:
    """One existing deployment as the manifest and this machine's environment describe it."""

    stack: Stack
    adapter: SiteAdapter
    endpoints: dict[str, str]

    @classmethod
    def of(cls, stack: Stack, endpoints: Mapping[str, str] | None = None) -> Site:
        return cls(stack, site_adapter(stack),
                   dict(endpoints) if endpoints is not None else site_route.endpoints(stack))

    @contextlib.contextmanager
    def transport(self) -> Iterator[Transport | None]:
        """The SSH route to the login node for the length of the block (None by kubeconfig)."""
        if ssh_access.ENDPOINT not in self.endpoints:
            yield None
            return
        channel = ssh_access.transport(self.endpoints)
        try:
            yield channel
        finally:
            channel.close()

    def check(self) -> dict[str, str]:
        """The preflight; every failure an InfrastructureError naming the check and the fix."""
        started = time.monotonic()
        try:
            with self.transport() as channel:
                facts = self.adapter.check(self.stack, channel, self.endpoints)
        except InfrastructureError:
            raise
        except (BackendCallError, StacksError, OSError) as exc:
            raise InfrastructureError(self.stack.name, (
                f"preflight: the deployment cannot be reached as the manifest says: {exc}. "
                f"Check existing.* in the manifest (host, port, user, key, known_hosts or "
                f"kubeconfig) and that the site answers from here.")) from None
        took = time.monotonic() - started
        if took > PREFLIGHT_TIMEOUT:  # reported, not hidden: a slow site slows every run
            facts["preflight_s"] = f"{took:.1f}"
        return facts

    def dead_runs(self, current_run: str) -> tuple[list[str], list[str]]:
        """(dead runs of this host, places whose owner record cannot be read), from what the
        site holds now."""
        with self.transport() as channel:
            found = self.adapter.runs(self.stack, channel, self.endpoints)
        kept = places.kept_runs()
        dead, unreadable = [], []
        for run_id, record in sorted(found.items()):
            try:
                owner = RunOwner.from_json(record)
            except ValueError as exc:
                if run_id != current_run:
                    unreadable.append(f"run {run_id}: {exc}; left alone")
                continue
            if owner.run_id != run_id:
                unreadable.append(f"run {run_id}: its record names run {owner.run_id}; "
                                  f"left alone")
            elif is_dead(owner, current_run=current_run, kept=kept):
                dead.append(run_id)
        return dead, unreadable

    def remove(self, run_id: str) -> list[str]:
        with self.transport() as channel:
            return self.adapter.remove_run(self.stack, channel, self.endpoints, run_id)

    def account(self, run_id: str, job_ids: tuple[str, ...]) -> JobAccount | None:
        """Each id looked up on the site now; None where its adapter cannot look one up."""
        if not isinstance(self.adapter, JobAccounting):
            return None
        if not job_ids:
            return JobAccount()
        with self.transport() as channel:
            return self.adapter.account_jobs(self.stack, channel, self.endpoints, run_id,
                                             job_ids)


class ExistingProvider:
    def preflight(self, stack: Stack, ctx: RunContext) -> None:
        Site.of(stack).check()

    def programs(self, stack: Stack) -> list[GoModuleBuild]:
        return []

    def build(self, stack: Stack, ctx: RunContext) -> None:
        """Nothing to build for a site; its route is checked (no contact) so that a missing
        variable or file shows now."""
        site_route.endpoints(stack)

    def up(self, stack: Stack, ctx: RunContext) -> StackInfo:
        site = Site.of(stack)
        facts = site.check()
        # Housekeeping: what cannot be reaped now is left for `pytest-stacks reap NAME`,
        # which names it; it must not keep this run off a site that passed its preflight.
        with contextlib.suppress(StacksError):
            reap(site, ctx.run_id, echo=lambda line: None)
        owner = RunOwner.of_run(ctx, stack.name)
        with site.transport() as channel:
            site.adapter.open_run(stack, channel, site.endpoints, ctx.run_id, owner.to_json())
        return StackInfo(provider="existing", endpoints={**site.endpoints, **facts},
                         private={"run_id": ctx.run_id})

    def attach(self, stack: Stack, info: StackInfo, ctx: RunContext) -> Attached:
        site = Site.of(stack, info.endpoints)
        channel = (ssh_access.transport(info.endpoints)
                   if ssh_access.ENDPOINT in info.endpoints else None)
        try:
            client = site.adapter.client(stack, channel, info.endpoints, ctx.run_dir)
        except Exception:
            if channel is not None:
                channel.close()
            raise

        def close() -> None:
            client.close()
            if channel is not None:
                channel.close()

        return Attached(client, info, lambda: SITE_LOGS, close)

    def down(self, stack: Stack, info: StackInfo, ctx: RunContext) -> list[str]:
        """The run's objects removed (again: the client's ``end_run`` went first where it has
        one) and proven gone, then each job the run's client submitted looked up by its id;
        the deployment itself is left as it was. Returns what teardown looked up and found
        gone, and what it could not look for (the suite's own client's jobs: not tracked)."""
        run_id = info.private.get("run_id", ctx.run_id)
        site = Site.of(stack, info.endpoints)
        left = site.remove(run_id)
        submitted = site_jobs.read(ctx.run_dir, stack.name)
        account = site.account(run_id, submitted.ours)
        left += account.left if account is not None else ()
        said = site_jobs.said(submitted, account)
        if left:
            raise InfrastructureError(stack.name, f"run {run_id}'s objects on the site were "
                                                  f"not proven gone: " + "; ".join(left + said))
        site_jobs.forget(ctx.run_dir, stack.name)
        return said

    def is_current(self, stack: Stack, info: StackInfo) -> bool:
        return False  # each run attaches on its own, with its own place on the site

    def health(self, stack: Stack, info: StackInfo) -> tuple[str, str]:
        """The route to the site (SSH, its bastions) answering; the site's daemons are not
        ours to watch: a failed call's own words say whether its service was there."""
        if ssh_access.ENDPOINT not in info.endpoints:
            return "", ""
        return stack_health.route_fault(ssh_access.transport(info.endpoints)), ""

    def sweep_run(self, ctx: RunContext, keep: Collection[str] = ()) -> list[str]:
        return []  # bring-up creates the run's place last; down removes it

    def reach(self, stack: Stack, info: StackInfo) -> str:
        if ssh_access.ENDPOINT in info.endpoints:
            return ssh_access.command_line(info.endpoints)
        context = info.endpoints.get(site_route.CONTEXT)
        return (f"kubectl --kubeconfig {info.endpoints.get(site_route.KUBECONFIG, '?')}"
                + (f" --context {context}" if context else ""))


def reap(site: Site, current_run: str, *, echo: Callable[[str], None],
         dry_run: bool = False) -> tuple[list[str], list[str]]:
    """Remove the objects of this host's dead runs on the site. Returns (runs removed,
    problems: records that cannot be read, removals not proven)."""
    dead, problems = site.dead_runs(current_run)
    removed = []
    for run_id in dead:
        if dry_run:
            echo(f"would remove run {run_id}'s objects on {site.stack.name}")
            removed.append(run_id)
            continue
        left = site.remove(run_id)
        if left:
            problems.append(f"run {run_id}: " + "; ".join(left))
        else:
            echo(f"removed run {run_id}'s objects on {site.stack.name} (its owner is gone)")
            removed.append(run_id)
    return removed, problems
