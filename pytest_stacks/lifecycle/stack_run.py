"""One stack within one run, followed in one direction: its files -> its provider -> up (or
borrowed) -> proven -> recorded -> attached -> its objects ended -> down.

The pool decides *when* (once per run, in which thread, in which order at teardown); this
decides *how*, for one stack, holding the stack's provider and its files in the run directory,
each looked up once. Nothing here knows about pytest.
"""

from __future__ import annotations

import contextlib
import dataclasses
import time

from pytest_stacks import progress
from pytest_stacks.errors import InfrastructureError, Problem, said
from pytest_stacks.lifecycle.probe import functional_probe
from pytest_stacks.lifecycle.rundir import StackFiles, StackRecord
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import outage_words
from pytest_stacks.providers.base import Attached, Provider, RunContext


@dataclasses.dataclass
class StackRun:
    stack: Stack
    provider: Provider
    files: StackFiles
    ctx: RunContext

    def ensure_up(self, holder: int | None = None) -> StackRecord:
        """The stack's record, bringing it up under its lock if no process of the run has yet.
        A bring-up that failed in any process is raised again, unchanged. ``holder`` (a pid)
        is written as holding the stack under the same lock, so the owner never ends a stack
        between a process finding its record and using it."""
        with self.files.lock():
            error = self.files.error()
            if error is not None:
                raise error
            record = self.files.record()
            if record is None:
                with progress.for_stack(self.stack.name):
                    record = self._borrow_kept() or self._bring_up()
            if holder is not None:
                self.files.hold(holder)
            return record

    def attach(self, record: StackRecord) -> Attached:
        """This process's client of the recorded stack, carrying the versions proven for it."""
        try:
            attached = self.provider.attach(self.stack, record.info, self.ctx)
        except InfrastructureError:
            raise
        except Exception as exc:
            raise InfrastructureError(self.stack.name, f"cannot attach: {exc}") from exc
        return dataclasses.replace(attached, observed_version=record.observed_version,
                                   client_version=record.client_version)

    def _borrow_kept(self) -> StackRecord | None:
        """Attach to a stack kept by ``pytest-stacks up`` instead of starting another one.

        Only in the pinned lane, only if its bring-up was proven for today's pin and inputs,
        and only while it still answers; this run records it as borrowed, so its teardown
        leaves it running.
        """
        if self.ctx.lane != "pinned" or self.ctx.keeps:
            return None
        for record in self.files.kept():
            if record.observed_version != self.stack.version:
                continue  # not proven, or built for another pin (a bump since `up`)
            try:
                if not self.provider.is_current(self.stack, record.info):
                    continue  # its stack files or build args changed since `up`
                attached = self.provider.attach(self.stack, record.info, self.ctx)
                attached.client.versions()
                attached.close()
            except Exception:  # gone or broken: start our own
                continue
            borrowed = dataclasses.replace(
                record, info=dataclasses.replace(record.info, kept=True), startup_s=0.0)
            self.files.write(borrowed)
            return borrowed
        return None

    def _bring_up(self, attempt: int = 1) -> StackRecord:
        started, started_at = time.monotonic(), time.time()
        attached: Attached | None = None
        try:
            with progress.step("bring-up"):
                info = self.provider.up(self.stack, self.ctx)
            # Recorded before it is proven, so teardown finds it even when the proof fails.
            self.files.write(StackRecord(self.stack.name, info, started_at=started_at,
                                         attempt=attempt))
            attached = self.provider.attach(self.stack, info, self.ctx)
            observed, client = self._prove(attached)
            record = StackRecord(self.stack.name, info, observed, client,
                                 startup_s=time.monotonic() - started, started_at=started_at,
                                 attempt=attempt)
            self.files.write(record)
            return record
        except Exception as exc:
            error = _as_infrastructure_error(self.stack, exc, attached)
            self.files.write_error(error)
            raise error from exc
        finally:
            if attached is not None:
                attached.close()

    def _prove(self, attached: Attached) -> tuple[str, str]:
        """The daemon's and the client's versions, once the daemon's is what the lane allows
        (the pin, or an existing site's range; in the canary lane the pin's series or a later
        one) and a probe job has run to completion."""
        versions = attached.client.versions()
        observed = versions.get("daemon", "")
        if self.ctx.lane == "canary" and not self.stack.accepts_floated(observed):
            raise InfrastructureError(
                self.stack.name, f"the daemon reports version {observed!r}, older than the "
                f"pin's series ({self.stack.pin_series}): a canary floats forward from its pin, "
                f"never back. Fix the stack's canary reference.")
        if self.ctx.lane != "canary" and not self.stack.accepts_version(observed):
            fix = ("Point the stack at a deployment in that range, or widen existing.versions."
                   if self.stack.existing else "Rebuild the stack's image, or fix the pin.")
            raise InfrastructureError(
                self.stack.name, f"the daemon reports version {observed!r} but the manifest "
                f"allows {self.stack.allowed_versions}. {fix}")
        with progress.step("functional probe"):
            functional_probe(self.stack, attached)
        return observed, versions.get("client", "")

    def health(self, failure: str = "", held: int | None = None) -> InfrastructureError | None:
        """Whether the stack this run brought up broke under it, asked when a test on it
        failed (``failure``: what that test's failure said). Broken: the provider finds a
        fault (a container dead, paused or cut off its network, the route or the backend's
        liveness question unanswered), or the failure is in the backend's words for "the
        service is not there" (a schedd killed and restarted by its master between the call
        and this question). Then the fault is recorded, so every later test on the stack (in
        any process) is an infrastructure error at once; the daemon's words are kept.
        ``held``: the bring-up (attempt) the asking process used; the fault is recorded only
        while that is still the stack's, so a process that was late to see a fault never
        marks the fresh stack an infra retry brought up meanwhile as broken."""
        record = self.files.record()
        if record is None:
            return None
        if held is not None and record.attempt != held:
            return InfrastructureError(
                self.stack.name, f"the stack was brought up fresh (infra retry, attempt "
                f"{record.attempt}) while this test ran on attempt {held}", during_run=True)
        try:
            why, logs = self.provider.health(self.stack, record.info)
        except Exception as exc:  # cannot even ask: say so rather than guess
            why, logs = f"cannot check the stack's health: {exc}", ""
        reading = outage_words(self.stack).read(failure) if failure else None
        if not why and reading is not None and reading.meaning == "gone":
            why = str(reading)
        elif why and reading is not None and reading.meaning == "gone":
            why += f"; the failed call said: {reading.words}"
        if not why:
            return None
        error = InfrastructureError(self.stack.name, f"the stack died during the run: {why}",
                                    logs, during_run=True)
        with self.files.lock():
            now = self.files.record()
            if now is not None and now.attempt == record.attempt:
                self.files.write_error(error)
        return error

    def replace(self, seen: int, retries: int) -> Replacement:
        """An infra retry: the stack that broke under the run's tests brought down and up
        fresh, under its lock, at most ``retries`` times in the run (counted across every
        process by the record's attempt). ``seen``: the attempt the asking process held; a
        later one means another process replaced it already (the asker attaches to that,
        costing no retry). Nothing is brought up again when the stack did not break during
        the run (a failed bring-up fails the same way again), when it is not this run's to
        replace (borrowed from ``pytest-stacks up``, or a site's), when the retries are
        spent, or when the broken stack's teardown was not proven (its record stays, so the
        run's teardown fails closed on it). A fresh bring-up that fails raises its
        infrastructure error, recorded for every process as any bring-up failure is."""
        with self.files.lock():
            record, error = self.files.record(), self.files.error()
            if record is not None and record.attempt > seen and error is None:
                return Replacement(record, broken=seen)
            if error is None or not error.during_run or record is None:
                return Replacement(None, broken=seen)
            why_not = self._not_replaceable(record, retries)
            if why_not:
                return Replacement(None, broken=record.attempt, why_not=why_not)
            with progress.for_stack(self.stack.name), \
                    progress.step(f"infra retry {record.attempt}: the broken stack goes down"):
                problems = self.end(record)
            unproven = [p.text for p in problems if p.failing]
            if unproven:
                return Replacement(None, broken=record.attempt,
                                   why_not="not brought up again: the broken stack's teardown "
                                           "was not proven: " + "; ".join(unproven))
            self.files.clear_error()
            with progress.for_stack(self.stack.name), \
                    progress.step(f"infra retry {record.attempt}: fresh bring-up"):
                fresh = self._bring_up(attempt=record.attempt + 1)
            return Replacement(fresh, broken=record.attempt, replaced=True,
                               notes=tuple(p.text for p in problems))

    def _not_replaceable(self, record: StackRecord, retries: int) -> str:
        if record.info.kept:
            return ("not brought up again: it is borrowed from `pytest-stacks up`, not this "
                    "run's to replace (`pytest-stacks down` ends it)")
        if record.info.provider in SITE_PROVIDERS:
            return "not brought up again: a site's deployment is not this run's to replace"
        used = record.attempt - 1
        if used >= retries:
            said = "none were allowed" if retries == 0 else \
                f"{'the' if retries == 1 else 'all'} {retries} allowed {_retries(retries)} " \
                f"{'is' if retries == 1 else 'are'} spent"
            return f"not brought up again: {said} (--stack-infra-retry={retries})"
        return ""

    def reach(self, record: StackRecord) -> str:
        return self.provider.reach(self.stack, record.info)

    def end(self, record: StackRecord) -> list[Problem]:
        """Owner only: the run's objects inside the stack removed, then the stack itself down
        (unless it was borrowed from ``pytest-stacks up``, which stays up). Problems are kind
        ``teardown``: what was not proven gone; and, not failing, what the provider says it
        could not look for."""
        problems = self._end_objects(record)
        if record.info.kept:
            self.files.forget()
            return problems
        try:
            notes = self.provider.down(self.stack, record.info, self.ctx)
        except Exception as exc:
            problems.append(Problem(self.stack.name, "teardown",
                                    f"teardown not proven: {said(exc)}"))
        else:
            self.files.forget()
            if record.info.provider not in SITE_PROVIDERS:
                problems = [_gone_with_the_stack(p) for p in problems]
            problems += [Problem(self.stack.name, "teardown", line, failing=False)
                         for line in notes or ()]
        return problems

    def _end_objects(self, record: StackRecord) -> list[Problem]:
        """What the run made inside the stack (a Kubernetes namespace) removed and proven gone
        by the driver (a client with ``end_run``), before the stack itself goes, or stays when
        it is kept. A stack that is gone already cannot be asked: ``down`` proves that."""
        if self.stack.is_fake:
            return []  # in-process doubles end with their process
        try:
            attached = self.provider.attach(self.stack, record.info, self.ctx)
        except Exception as exc:
            if not record.info.kept:
                return []
            return [Problem(self.stack.name, "teardown", f"cannot attach to remove the run's "
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
        return [Problem(self.stack.name, "teardown", "the run's objects were not proven gone: "
                        + "; ".join(left))]


@dataclasses.dataclass(frozen=True)
class Replacement:
    """What :meth:`StackRun.replace` did: the stack to attach to now (None: none, and
    ``why_not`` says why when a retry was refused rather than not asked for), the attempt
    that broke, whether this call brought the fresh one up, and what the broken one's
    teardown said without failing."""

    record: StackRecord | None
    broken: int
    replaced: bool = False
    why_not: str = ""
    notes: tuple[str, ...] = ()


def _retries(count: int) -> str:
    return "retry" if count == 1 else "retries"


#: Providers whose ``down`` leaves the backend running (a site's): what the run made inside it
#: is proven gone only by the driver's own removal.
SITE_PROVIDERS = frozenset({"existing"})


def _gone_with_the_stack(problem: Problem) -> Problem:
    """A stack of ours holds the run's objects in its own containers and volumes (the API
    server's etcd, the nodes' containerd): once ``down`` proved those gone, a removal through
    the API that could not run (the stack broke: its network cut, its control plane killed)
    lost nothing. Said, not failing."""
    if not problem.failing:
        return problem
    return Problem(problem.stack, problem.kind,
                   f"{problem.text}; they went with the stack's own teardown, which was "
                   f"proven", failing=False)


def _as_infrastructure_error(stack: Stack, exc: Exception,
                             attached: Attached | None) -> InfrastructureError:
    """A failed bring-up, with the daemons' logs where they can still be read."""
    logs = exc.logs if isinstance(exc, InfrastructureError) else ""
    if not logs and attached is not None:
        try:
            logs = attached.logs()
        except Exception as log_exc:  # logs are best effort; the cause matters more
            logs = f"(could not read logs: {log_exc})"
    message = (exc.message if isinstance(exc, InfrastructureError)
               else f"bring-up failed: {said(exc)}")
    started = exc.started if isinstance(exc, InfrastructureError) else True
    return InfrastructureError(stack.name, message, logs, started=started)
