"""One bring-up per stack per run, shared by every process of the run, torn down once.

The first process that needs a stack takes its lock, brings it up, proves it (readiness, the
daemon's version against the pin, a functional probe job) and records how to attach. Others wait
on the lock and attach. The owner may start the stacks it knows will be needed ahead of time, in
background threads and several at once (:meth:`StackPool.prefetch`): a run over a whole
version window then waits for its slowest stack, not for the sum of them. A failed bring-up is
recorded too, so every later test on that stack fails fast with the same infrastructure error
instead of retrying. Only the run's owner (the
xdist controller, or the single pytest process) tears down, after the last worker is gone.
Nothing here knows about pytest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time
from collections.abc import Collection, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait

from pytest_stacks import cancellation, places, progress
from pytest_stacks.errors import InfrastructureError, Problem
from pytest_stacks.lifecycle.probe import functional_probe
from pytest_stacks.lifecycle.rundir import RunDirectory, StackRecord, kept_records
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import provider_for
from pytest_stacks.providers.base import Attached, Provider, RunContext, StackInfo


class StackPool:
    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.run_dir = RunDirectory(ctx)
        self._attached: dict[str, Attached] = {}
        self._prefetched: dict[str, Future[StackRecord]] = {}
        self._executor: ThreadPoolExecutor | None = None
        self._providers: dict[str, Provider] = {}

    def _provider(self, stack: Stack) -> Provider:
        """The stack's provider, looked up once per run and stack."""
        if stack.name not in self._providers:
            self._providers[stack.name] = provider_for(stack)
        return self._providers[stack.name]

    def records(self) -> list[StackRecord]:
        return self.run_dir.records()

    def attached(self, name: str) -> Attached | None:
        """The stack as this process already holds it, without bringing anything up."""
        return self._attached.get(name)

    def prefetch(self, stacks: Iterable[Stack], parallel: int) -> list[str]:
        """Start bringing these stacks up in the background, at most ``parallel`` at once.

        Owner only. A stack another process already holds is simply found under its lock; a
        failure is recorded like any bring-up failure and raised by :meth:`acquire`, so the
        tests that need the stack report it. Returns the names started.
        """
        todo = [s for s in stacks if not s.is_fake and s.name not in self._prefetched]
        if not todo:
            return []
        # The longest first: stacks whose programs are built from Go modules take minutes
        # on a new machine, and the others come up meanwhile.
        todo.sort(key=lambda s: "go" not in s.requires)
        self.run_dir.ensure()
        if self._executor is None:
            self._executor = ThreadPoolExecutor(max_workers=max(1, parallel),
                                                thread_name_prefix="pytest-stacks-up")
        for stack in todo:
            self._prefetched[stack.name] = self._executor.submit(self._ensure_up, stack)
        return [s.name for s in todo]

    def acquire(self, stack: Stack) -> Attached:
        if stack.name in self._attached:
            died = self.run_dir.error(stack.name)  # another process saw it die
            if died is not None:
                raise died
            return self._attached[stack.name]
        started = self._prefetched.get(stack.name)
        if started is not None:
            wait([started])  # its outcome is on record either way: read below
        record = self._ensure_up(stack)
        try:
            attached = self._provider(stack).attach(stack, record.info, self.ctx)
        except InfrastructureError:
            raise
        except Exception as exc:
            raise InfrastructureError(stack.name, f"cannot attach: {exc}") from exc
        attached = dataclasses.replace(attached, observed_version=record.observed_version,
                                       client_version=record.client_version)
        self._attached[stack.name] = attached
        return attached

    def _ensure_up(self, stack: Stack) -> StackRecord:
        """The stack's record, bringing it up under its lock if no process has yet."""
        self.run_dir.ensure()
        with self.run_dir.lock(stack.name):
            error = self.run_dir.error(stack.name)
            if error is not None:
                raise error
            return self.run_dir.record(stack.name) or self._bring_up(stack)

    def _stop_prefetch(self) -> list[str]:
        """Let no bring-up run behind teardown's back: finished ones are done; unfinished ones
        (an interrupted run) are cancelled, their children killed, their threads joined."""
        if self._executor is None:
            return []
        unfinished = [name for name, f in self._prefetched.items() if not f.done()]
        if unfinished:
            cancellation.cancel()
        try:
            self._executor.shutdown(wait=True, cancel_futures=True)
        finally:
            cancellation.reset()
            self._executor = None
        return unfinished

    def _borrow_kept(self, stack: Stack) -> StackRecord | None:
        """Attach to a stack kept by ``pytest-stacks up`` instead of starting another one.

        Only in the pinned lane, only if its bring-up was proven for today's pin and inputs,
        and only while it still answers; this run records it as borrowed, so its teardown
        leaves it running.
        """
        if self.ctx.lane != "pinned" or self.ctx.keeps:
            return None
        provider = self._provider(stack)
        for record in kept_records(stack.name):
            if record.observed_version != stack.version:
                continue  # not proven, or built for another pin (a bump since `up`)
            try:
                if not provider.is_current(stack, record.info):
                    continue  # its stack files or build args changed since `up`
                attached = provider.attach(stack, record.info, self.ctx)
                attached.client.versions()
                attached.close()
            except Exception:  # gone or broken: start our own
                continue
            borrowed = StackRecord(record.stack, dataclasses.replace(record.info, kept=True),
                                   record.observed_version, record.client_version, 0.0,
                                   record.started_at)
            self.run_dir.write_record(borrowed)
            return borrowed
        return None

    def _bring_up(self, stack: Stack) -> StackRecord:
        with progress.for_stack(stack.name):
            return self._bring_up_here(stack)

    def _bring_up_here(self, stack: Stack) -> StackRecord:
        borrowed = self._borrow_kept(stack)
        if borrowed is not None:
            return borrowed
        provider = self._provider(stack)
        started, started_at = time.monotonic(), time.time()
        attached: Attached | None = None
        try:
            with progress.step("bring-up"):
                info = provider.up(stack, self.ctx)
            # Recorded before it is proven, so teardown finds it even when the proof fails.
            self.run_dir.write_record(StackRecord(stack.name, info, started_at=started_at))
            attached = provider.attach(stack, info, self.ctx)
            record = self._prove(stack, info, attached)
            record.startup_s = time.monotonic() - started
            record.started_at = started_at
            self.run_dir.write_record(record)
            return record
        except Exception as exc:
            error = _as_infrastructure_error(stack, exc, attached)
            self.run_dir.write_error(error)
            raise error from exc
        finally:
            if attached is not None:
                attached.close()

    def _prove(self, stack: Stack, info: StackInfo, attached: Attached) -> StackRecord:
        versions = attached.client.versions()
        observed = versions.get("daemon", "")
        if self.ctx.lane != "canary" and observed != stack.version:
            raise InfrastructureError(
                stack.name, f"the daemon reports version {observed!r} but the manifest pins "
                f"{stack.version!r}. Rebuild the stack's image, or fix the pin.")
        with progress.step("functional probe"):
            functional_probe(stack, attached)
        return StackRecord(stack.name, info, observed, versions.get("client", ""))

    def check_health(self, stack: Stack) -> InfrastructureError | None:
        """Whether a stack this run brought up died under it. If so the death is recorded,
        so every later test on it (in any process) is an infrastructure error at once."""
        record = self.run_dir.record(stack.name)
        if record is None:
            return None
        try:
            why, logs = self._provider(stack).health(stack, record.info)
        except Exception as exc:  # cannot even ask: say so rather than guess
            why, logs = f"cannot check the stack's health: {exc}", ""
        if not why:
            return None
        error = InfrastructureError(stack.name, f"the stack died during the run: {why}", logs)
        with self.run_dir.lock(stack.name):
            self.run_dir.write_error(error)
        return error

    def release(self) -> None:
        """Let go of this process's clients (every process does this at its end)."""
        for attached in self._attached.values():
            with contextlib.suppress(Exception):  # closing must not mask the run's outcome
                attached.close()
        self._attached.clear()

    def keep(self, stacks: dict[str, Stack], names: Collection[str], why: str
             ) -> dict[str, str]:
        """Owner only, before :meth:`teardown`: these stacks (of those this run brought up)
        outlive the run, with its run directory, recorded as kept (no reaper touches them;
        ``pytest-stacks down`` ends them). Returns, per stack kept, one line: how to reach it
        and how to end it."""
        records = {r.stack: r for r in self.run_dir.records()}
        chosen = sorted(n for n in names if n in records and n in stacks
                        and not stacks[n].is_fake and not records[n].info.kept)
        if not chosen:
            return {}
        places.mark_kept(self.ctx.run_id, self.ctx.run_dir, chosen, why)
        return {name: f"{name} is kept ({why}). Reach it: "
                      f"{self._provider(stacks[name]).reach(stacks[name], records[name].info)}. "
                      f"End it: pytest-stacks down {name}" for name in chosen}

    def teardown(self, stacks: dict[str, Stack], keep: Collection[str] = ()) -> list[Problem]:
        """Owner only: bring down every stack this run brought up, but those it keeps
        (:meth:`keep`). Returns problems (kind ``teardown``: a stack whose teardown was not
        proven is an infrastructure error).

        ``stacks`` are the run's selected stacks by name.
        """
        self.release()
        self._stop_prefetch()
        problems = []
        for record in self.run_dir.records():
            stack = stacks.get(record.stack)
            if stack is None or stack.name in keep:
                continue
            problems += self._end_run(stack, record)
            if record.info.kept:
                self.run_dir.forget(stack.name)  # borrowed from `pytest-stacks up`: stays up
                continue
            try:
                self._provider(stack).down(stack, record.info, self.ctx)
            except Exception as exc:
                problems.append(Problem(stack.name, "teardown", f"teardown not proven: {exc}"))
            else:
                self.run_dir.forget(stack.name)
        problems.extend(self._sweep(stacks, keep))
        return problems

    def _end_run(self, stack: Stack, record: StackRecord) -> list[Problem]:
        """What the run made inside the stack (a Kubernetes namespace) removed and proven gone
        by the driver (a client with ``end_run``), before the stack itself goes, or stays when
        it is kept. A stack that is gone already cannot be asked: ``down`` proves that."""
        if stack.is_fake:
            return []  # in-process doubles end with their process
        try:
            attached = self._provider(stack).attach(stack, record.info, self.ctx)
        except Exception as exc:
            if not record.info.kept:
                return []
            return [Problem(stack.name, "teardown", f"cannot attach to remove the run's "
                                                    f"objects: {exc}")]
        try:
            end = getattr(attached.client, "end_run", None)
            left = list(end()) if end is not None else []
        except Exception as exc:
            left = [f"removing them failed: {exc}"]
        finally:
            with contextlib.suppress(Exception):
                attached.close()
        if not left:
            return []
        return [Problem(stack.name, "teardown", "the run's objects were not proven gone: "
                        + "; ".join(left))]

    def _sweep(self, stacks: dict[str, Stack], keep: Collection[str]) -> list[Problem]:
        """The safety net: what an interrupted bring-up created before it was recorded."""
        problems = []
        for provider_name in sorted({s.provider for s in stacks.values()}):
            stack = next(s for s in stacks.values() if s.provider == provider_name)
            try:
                left = self._provider(stack).sweep_run(self.ctx, keep)
            except Exception as exc:
                left = [f"cannot verify teardown of run {self.ctx.run_id}: {exc}"]
            problems += [Problem(None, "teardown", text) for text in left]
        return problems


def _as_infrastructure_error(stack: Stack, exc: Exception,
                             attached: Attached | None) -> InfrastructureError:
    """A failed bring-up, with the daemons' logs where they can still be read."""
    logs = exc.logs if isinstance(exc, InfrastructureError) else ""
    if not logs and attached is not None:
        try:
            logs = attached.logs()
        except Exception as log_exc:  # logs are best effort; the cause matters more
            logs = f"(could not read logs: {log_exc})"
    message = exc.message if isinstance(exc, InfrastructureError) else f"bring-up failed: {exc}"
    return InfrastructureError(stack.name, message, logs)
