"""One bring-up per stack per run, shared by every process of the run, torn down by its owner.

The first process that needs a stack takes its lock, brings it up, proves it (readiness, the
daemon's version against the pin, a functional probe job) and records how to attach. Others wait
on the lock and attach. The owner may start the stacks it knows will be needed ahead of time, in
background threads and several at once (:meth:`StackPool.prefetch`): a run over a whole
version window then waits for its slowest stack, not for the sum of them. A failed bring-up is
recorded too, so every later test on that stack fails fast with the same infrastructure error
instead of retrying. Only the run's owner (the
xdist controller, or the single pytest process) tears down: a stack as soon as its last test is
over and every process that held it has let go (:meth:`StackPool.end_early`, so a window's
finished stacks stop costing the machine while the others run), and the rest after the last
worker is gone. Nothing here knows about pytest.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Collection, Iterable
from concurrent.futures import Future, ThreadPoolExecutor, wait

from pytest_stacks import cancellation, places, progress
from pytest_stacks.errors import InfrastructureError, Problem, said
from pytest_stacks.lifecycle.rundir import RunDirectory, StackRecord
from pytest_stacks.lifecycle.stack_run import Replacement, StackRun
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import provider_for
from pytest_stacks.providers.base import Attached, RunContext


class StackPool:
    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self.run_dir = RunDirectory(ctx)
        self._attached: dict[str, Attached] = {}
        self._attempt: dict[str, int] = {}  # the bring-up (attempt) each attached one is of
        self._prefetched: dict[str, Future[StackRecord]] = {}
        self._executor: ThreadPoolExecutor | None = None
        self._runs: dict[str, StackRun] = {}
        self._let_go: dict[str, Attached] = {}  # closed, still telling what it ran against
        self._ended: dict[str, StackRecord] = {}
        self._ending: dict[str, Future[list[Problem]]] = {}
        self._early_problems: dict[str, list[Problem]] = {}
        self._release_executor: ThreadPoolExecutor | None = None

    def _run(self, stack: Stack) -> StackRun:
        """The stack's provider and files, looked up once per run and stack."""
        if stack.name not in self._runs:
            self._runs[stack.name] = StackRun(stack, provider_for(stack),
                                              self.run_dir.stack(stack.name), self.ctx)
        return self._runs[stack.name]

    def records(self) -> list[StackRecord]:
        """The stacks this run brought up, those already ended early included."""
        current = {r.stack: r for r in self.run_dir.records()}
        ended = dict(self._ended)  # a copy: an early ending may add to it meanwhile
        return sorted([*current.values(),
                       *(r for n, r in ended.items() if n not in current)],
                      key=lambda r: r.stack)

    def attached(self, name: str) -> Attached | None:
        """The stack as this process holds it (or held it, once let go: its versions still say
        what the last test ran against), without bringing anything up."""
        return self._attached.get(name) or self._let_go.get(name)

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
        """This process's client of the stack, brought up (or found) once per run; a stack
        another process replaced meanwhile (an infra retry) is attached to afresh."""
        run = self._run(stack)
        if stack.name in self._attached:
            died = run.files.error()  # another process saw it die
            if died is not None:
                raise died
            record = run.files.record()
            if record is None or record.attempt == self._attempt.get(stack.name, 1):
                return self._attached[stack.name]
            self._drop(stack.name)  # replaced under this process: attach to the fresh one
        started = self._prefetched.get(stack.name)
        if started is not None:
            wait([started])  # its outcome is on record either way: read below
        self.run_dir.ensure()
        record = run.ensure_up(holder=os.getpid())
        self._attached[stack.name] = run.attach(record)
        self._attempt[stack.name] = record.attempt
        return self._attached[stack.name]

    def replace(self, stack: Stack, retries: int) -> Replacement:
        """An infra retry of a stack that broke under this process's test
        (:meth:`StackRun.replace`): on success this process holds the fresh stack (or the
        one another process brought up meanwhile), and its next :meth:`acquire` returns it."""
        run = self._run(stack)
        seen = self._attempt.get(stack.name, 1)
        self._drop(stack.name)
        self.run_dir.ensure()
        done = run.replace(seen, retries)
        if done.record is not None:
            run.files.hold(os.getpid())
            self._attached[stack.name] = run.attach(done.record)
            self._attempt[stack.name] = done.record.attempt
        return done

    def _drop(self, name: str) -> None:
        attached = self._attached.pop(name, None)
        if attached is not None:
            with contextlib.suppress(Exception):  # a client of a broken stack may not close
                attached.close()

    def let_go(self, stack: Stack) -> None:
        """This process is done with the stack (its fixtures on it are finalized)."""
        attached = self._attached.pop(stack.name, None)
        if attached is not None:
            with contextlib.suppress(Exception):
                attached.close()
            self._let_go[stack.name] = attached
        self._run(stack).files.let_go(os.getpid())

    def end_early(self, stack: Stack) -> bool:
        """Owner only: bring the stack down now, in the background, if every process that held
        it has let go (asked again under the stack's lock when the ending runs; a process that
        took it meanwhile keeps it up until the run's teardown). A test that asks for it after
        the ending brings it up again, and the run's teardown ends that one. Returns whether
        there is nothing left to wait for (the ending queued now or before, or a fake)."""
        if stack.is_fake or stack.name in self._ending:
            return True
        run = self._run(stack)
        if not run.files.all_let_go():
            return False
        if self._release_executor is None:
            self._release_executor = ThreadPoolExecutor(
                max_workers=2, thread_name_prefix="pytest-stacks-down")
        self._ending[stack.name] = self._release_executor.submit(self._end_now, run)
        return True

    def _end_now(self, run: StackRun) -> list[Problem]:
        # Under the stack's lock: a process that found the record meanwhile holds it (and the
        # run's teardown ends it); one that comes later finds no record and starts anew.
        with run.files.lock():
            record = run.files.record()
            if record is None or not run.files.all_let_go():
                return []
            self._ended[run.stack.name] = record
            with progress.for_stack(run.stack.name), \
                    progress.step("its tests are over: early teardown"):
                return run.end(record)

    def settle(self) -> None:
        """Owner only: wait for the early endings still running (their problems are returned
        by :meth:`teardown`). Done first at the run's end, so the records, the stacks kept and
        teardown all see them finished."""
        for name, future in sorted(self._ending.items()):
            try:
                self._early_problems[name] = future.result()
            except Exception as exc:
                self._early_problems[name] = [Problem(name, "teardown",
                                                      f"teardown not proven: {said(exc)}")]
        if self._release_executor is not None:
            self._release_executor.shutdown(wait=True)
            self._release_executor = None

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

    def check_health(self, stack: Stack, failure: str = "") -> InfrastructureError | None:
        """Whether a stack this run brought up broke under it (recorded for every process);
        ``failure``: what the failed test said (the backend's words are read in it)."""
        return self._run(stack).health(failure, held=self._attempt.get(stack.name))

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
        proven is an infrastructure error; one that is not ``failing`` is for a person to
        read: what a site's teardown could not look for).

        ``stacks`` are the run's selected stacks by name.
        """
        self.release()
        self.settle()  # before cancelling anything: an early ending in flight finishes
        self._stop_prefetch()
        problems = [p for name in sorted(self._early_problems)
                    for p in self._early_problems[name]]
        idle = self._providers_that_made_nothing(stacks)
        for record in self.run_dir.records():
            stack = stacks.get(record.stack)
            if stack is None or stack.name in keep:
                continue
            problems += self._run(stack).end(record)
        problems.extend(self._sweep(stacks, keep, skip=idle))
        return problems

    def _providers_that_made_nothing(self, stacks: dict[str, Stack]) -> set[str]:
        """Providers none of whose stacks this run made anything of (never tried, or refused
        in preflight: no engine). Sweeping them would only ask an engine the bring-up already
        said is not there, and fail closed on a run that left nothing behind."""
        busy: set[str] = {s.provider for s in stacks.values() if s.name in self._ended
                          or not self.run_dir.stack(s.name).made_nothing()}
        return {str(s.provider) for s in stacks.values()} - busy

    def _sweep(self, stacks: dict[str, Stack], keep: Collection[str],
               skip: Collection[str] = ()) -> list[Problem]:
        """The safety net: what an interrupted bring-up created before it was recorded."""
        problems = []
        for provider_name in sorted({s.provider for s in stacks.values()} - set(skip)):
            stack = next(s for s in stacks.values() if s.provider == provider_name)
            try:
                left = self._run(stack).provider.sweep_run(self.ctx, keep)
            except Exception as exc:
                left = [f"cannot verify teardown of run {self.ctx.run_id}: {exc}"]
            problems += [Problem(None, "teardown", text) for text in left]
        return problems

