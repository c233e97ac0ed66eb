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
from collections.abc import Collection, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait

from pytest_stacks import cancellation, places
from pytest_stacks.errors import InfrastructureError, Problem
from pytest_stacks.lifecycle.rundir import RunDirectory, StackRecord
from pytest_stacks.lifecycle.stack_run import StackRun
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import provider_for
from pytest_stacks.providers.base import Attached, RunContext


class StackPool:
    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.run_dir = RunDirectory(ctx)
        self._attached: dict[str, Attached] = {}
        self._prefetched: dict[str, Future[StackRecord]] = {}
        self._executor: ThreadPoolExecutor | None = None
        self._runs: dict[str, StackRun] = {}

    def _run(self, stack: Stack) -> StackRun:
        """The stack's provider and files, looked up once per run and stack."""
        if stack.name not in self._runs:
            self._runs[stack.name] = StackRun(stack, provider_for(stack),
                                              self.run_dir.stack(stack.name), self.ctx)
        return self._runs[stack.name]

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
        run = self._run(stack)
        if stack.name in self._attached:
            died = run.files.error()  # another process saw it die
            if died is not None:
                raise died
            return self._attached[stack.name]
        started = self._prefetched.get(stack.name)
        if started is not None:
            wait([started])  # its outcome is on record either way: read below
        self.run_dir.ensure()
        self._attached[stack.name] = run.attach(run.ensure_up())
        return self._attached[stack.name]

    def _ensure_up(self, stack: Stack) -> StackRecord:
        self.run_dir.ensure()
        return self._run(stack).ensure_up()

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

    def check_health(self, stack: Stack) -> InfrastructureError | None:
        """Whether a stack this run brought up died under it (recorded for every process)."""
        return self._run(stack).health()

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
                      f"{self._run(stacks[name]).reach(records[name])}. "
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
            problems += self._run(stack).end(record)
        problems.extend(self._sweep(stacks, keep))
        return problems

    def _sweep(self, stacks: dict[str, Stack], keep: Collection[str]) -> list[Problem]:
        """The safety net: what an interrupted bring-up created before it was recorded."""
        problems = []
        for provider_name in sorted({s.provider for s in stacks.values()}):
            stack = next(s for s in stacks.values() if s.provider == provider_name)
            try:
                left = self._run(stack).provider.sweep_run(self.ctx, keep)
            except Exception as exc:
                left = [f"cannot verify teardown of run {self.ctx.run_id}: {exc}"]
            problems += [Problem(None, "teardown", text) for text in left]
        return problems

