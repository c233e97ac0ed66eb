"""One bring-up per stack per run, shared by every process of the run, torn down once.

The first process that needs a stack takes a file lock, brings it up, proves it (readiness, the
daemon's version against the pin, a functional probe job) and writes what others need to attach
into the run directory. Others wait on the lock and attach. A failed bring-up is written down
too, so every later test on that stack fails fast with the same infrastructure error instead of
retrying. Only the run's owner (the xdist controller, or the single pytest process) tears down,
after the last worker is gone. Nothing here knows about pytest.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import stat
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from filelock import FileLock

from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for
from pytest_stacks.errors import InfrastructureError, StacksError
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import provider_for
from pytest_stacks.providers.base import Attached, RunContext, owner_alive


def runs_root() -> Path:
    """This user's private folder of run directories (0700, owned by us, not a symlink).

    Run directories hold per-run credentials (IDTOKENs), so a shared /tmp must not let another
    user pre-create or read the folder.
    """
    root = Path(tempfile.gettempdir()) / f"pytest-stacks-{os.getuid()}"
    root.mkdir(mode=0o700, exist_ok=True)
    info = os.lstat(root)
    if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise StacksError(f"{root} is not a directory owned by this user; remove it and rerun")
    if stat.S_IMODE(info.st_mode) != 0o700:
        root.chmod(0o700)
    return root


def reap_dead_run_dirs() -> list[Path]:
    """Remove run directories (and the tokens in them) left by runs whose owner is dead."""
    removed = []
    for folder in runs_root().iterdir():
        # Folders of runs from before owner.json existed, or whose start was cut short.
        if (folder.is_dir() and folder.name != "kept" and not (folder / "owner.json").exists()
                and time.time() - folder.stat().st_mtime > 86400):
            shutil.rmtree(folder, ignore_errors=True)
            removed.append(folder)
    for owner_file in runs_root().glob("*/owner.json"):
        try:
            owner = json.loads(owner_file.read_text())
        except (OSError, ValueError):
            continue
        if not owner_alive(int(owner.get("pid", 0)), str(owner.get("start", ""))):
            shutil.rmtree(owner_file.parent, ignore_errors=True)
            removed.append(owner_file.parent)
    return removed


def kept_root() -> Path:
    """Where ``pytest-stacks up`` records stacks it keeps for a development loop."""
    return runs_root() / "kept"


def new_run_id() -> str:
    return f"{time.strftime('%Y%m%d%H%M%S')}-{uuid.uuid4().hex[:8]}"


@dataclass
class StackRecord:
    """What the run directory says about one stack."""

    stack: str
    info: dict[str, Any]
    observed_version: str
    client_version: str
    startup_s: float


class StackPool:
    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self._attached: dict[str, Attached] = {}

    def _ensure_run_dir(self) -> None:
        """Created on first use, so a run that never needs a stack leaves nothing behind."""
        if self.ctx.run_dir.is_dir():
            return
        with contextlib.suppress(StacksError, OSError):
            reap_dead_run_dirs()
        self.ctx.run_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        owner = self.ctx.run_dir / "owner.json"
        if not owner.exists():
            owner.write_text(json.dumps({"pid": self.ctx.owner_pid,
                                         "start": self.ctx.owner_start}))

    # ------------------------------------------------------------ files of the run

    def _state(self, stack: Stack) -> Path:
        return self.ctx.run_dir / f"{stack.name}.json"

    def _error(self, stack: Stack) -> Path:
        return self.ctx.run_dir / f"{stack.name}.error.json"

    def records(self) -> list[StackRecord]:
        out = []
        for path in sorted(self.ctx.run_dir.glob("*.json")):
            if path.name.endswith(".error.json") or path.name == "owner.json":
                continue
            data = json.loads(path.read_text())
            out.append(StackRecord(**data))
        return out

    # ------------------------------------------------------------ acquire

    def attached(self, name: str) -> Attached | None:
        """The stack as this process already holds it, without bringing anything up."""
        return self._attached.get(name)

    def acquire(self, stack: Stack) -> Attached:
        if stack.name in self._attached:
            return self._attached[stack.name]
        self._ensure_run_dir()
        with FileLock(str(self.ctx.run_dir / f"{stack.name}.lock")):
            if self._error(stack).exists():
                saved = json.loads(self._error(stack).read_text())
                raise InfrastructureError(stack.name, saved["message"], saved.get("logs", ""))
            if not self._state(stack).exists():
                self._bring_up(stack)
            record = StackRecord(**json.loads(self._state(stack).read_text()))
        provider = provider_for(stack)
        try:
            attached = provider.attach(stack, record.info, self.ctx)
        except InfrastructureError:
            raise
        except Exception as exc:
            raise InfrastructureError(stack.name, f"cannot attach: {exc}") from exc
        attached.info = {**record.info, "observed_version": record.observed_version,
                         "client_version": record.client_version}
        self._attached[stack.name] = attached
        return attached

    def _reuse_kept(self, stack: Stack) -> bool:
        """Attach to a stack kept by ``pytest-stacks up`` instead of starting another one.

        Only in the pinned lane, only if its bring-up was proven, and only while it still
        answers; this run records it as borrowed, so its teardown leaves it running.
        """
        if self.ctx.lane != "pinned" or self.ctx.owner_start == "keep":
            return False
        for path in sorted(kept_root().glob(f"*/{stack.name}.json")):
            try:
                data = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if data.get("observed_version") != stack.version:
                continue  # not proven, or built for another pin (a bump since `up`)
            provider = provider_for(stack)
            is_current = getattr(provider, "is_current", None)
            try:
                if is_current is not None and not is_current(stack, data["info"]):
                    continue  # its stack files or build args changed since `up`
                attached = provider_for(stack).attach(stack, data["info"], self.ctx)
                attached.client.versions()
                attached.close()
            except Exception:  # gone or broken: start our own
                continue
            info = {**data["info"], "kept": True, "kept_run": path.parent.name}
            self._write_state(stack, info, data["observed_version"], data["client_version"],
                              0.0)
            return True
        return False

    def _bring_up(self, stack: Stack) -> None:
        if stack.provider != "fake" and self._reuse_kept(stack):
            return
        provider = provider_for(stack)
        started = time.monotonic()
        attached: Attached | None = None
        try:
            info = provider.up(stack, self.ctx)
            # Recorded before it is proven, so teardown finds it even when the proof fails.
            self._write_state(stack, info, "", "", 0.0)
            attached = provider.attach(stack, info, self.ctx)
            versions = attached.client.versions()
            observed = versions.get("daemon", "")
            if self.ctx.lane != "canary" and observed != stack.version:
                raise InfrastructureError(
                    stack.name, f"the daemon reports version {observed!r} but the manifest pins "
                    f"{stack.version!r}. Rebuild the stack's image, or fix the pin.")
            _functional_probe(stack, attached)
            self._write_state(stack, info, observed, versions.get("client", ""),
                              time.monotonic() - started)
        except Exception as exc:
            logs = exc.logs if isinstance(exc, InfrastructureError) else ""
            if not logs and attached is not None:
                try:
                    logs = attached.logs()
                except Exception as log_exc:  # logs are best effort; the cause matters more
                    logs = f"(could not read logs: {log_exc})"
            message = exc.message if isinstance(exc, InfrastructureError) \
                else f"bring-up failed: {exc}"
            self._error(stack).write_text(json.dumps({"message": message, "logs": logs}))
            raise InfrastructureError(stack.name, message, logs) from exc
        finally:
            if attached is not None:
                attached.close()

    def _write_state(self, stack: Stack, info: dict[str, Any], observed: str, client: str,
                     startup: float) -> None:
        record = {"stack": stack.name, "info": info, "observed_version": observed,
                  "client_version": client, "startup_s": round(startup, 2)}
        tmp = self._state(stack).with_suffix(".tmp")
        tmp.write_text(json.dumps(record))
        tmp.replace(self._state(stack))

    # ------------------------------------------------------------ release and teardown

    def release(self) -> None:
        """Let go of this process's clients (every process does this at its end)."""
        for attached in self._attached.values():
            with contextlib.suppress(Exception):  # closing must not mask the run's outcome
                attached.close()
        self._attached.clear()

    def teardown(self, stacks: dict[str, Stack]) -> list[str]:
        """Owner only: bring down every stack this run brought up. Returns problems.

        ``stacks`` are the run's selected stacks by name.
        """
        self.release()
        problems = []
        for path in sorted(self.ctx.run_dir.glob("*.json")):
            if path.name.endswith(".error.json") or path.name == "owner.json":
                continue
            data = json.loads(path.read_text())
            stack = stacks.get(data["stack"])
            if stack is None:
                continue
            if data["info"].get("kept"):
                path.unlink()  # borrowed from `pytest-stacks up`: it stays up
                continue
            try:
                provider_for(stack).down(stack, data["info"], self.ctx)
            except Exception as exc:
                problems.append(f"{stack.name}: teardown not proven: {exc}")
            else:
                path.unlink()
        if any(s.provider != "fake" for s in stacks.values()):
            # The safety net: what an interrupted bring-up created before it was recorded.
            from pytest_stacks.providers import reaper

            try:
                problems.extend(reaper.sweep_run(self.ctx.run_id))
            except Exception as exc:
                problems.append(f"cannot verify teardown of run {self.ctx.run_id}: {exc}")
        return problems


def _functional_probe(stack: Stack, attached: Attached) -> None:
    """A trivial job must run to completion before any test: readiness is not enough."""
    client = attached.client
    token = uuid.uuid4().hex
    handles = submitted(client.submit([JobSpec(script=f"echo {token} > probe.txt\n",
                                               name="pytest-stacks-probe",
                                               outputs=("probe.txt",))]))
    try:
        [status] = wait_for(client, handles, timeout=stack.timeouts.job)
    except TimeoutError as exc:
        raise InfrastructureError(stack.name, f"functional probe job did not finish: {exc}",
                                  attached.logs()) from exc
    if status.state is not JobState.COMPLETED:
        raise InfrastructureError(
            stack.name, f"functional probe job ended {status.state} ({status.native_state}, "
            f"exit {status.exit_code}) instead of completed", attached.logs())
    if "outputs" in stack.capabilities:
        with tempfile.TemporaryDirectory(prefix="pytest-stacks-probe-") as folder:
            [result] = client.fetch_outputs(handles, Path(folder))
            got = result.files.get("probe.txt")
            if not result.ok or got is None or got.read_text().strip() != token:
                raise InfrastructureError(
                    stack.name, f"functional probe job's output did not come back intact "
                    f"({result.error or 'wrong or missing probe.txt'})", attached.logs())
    if "purge" in stack.capabilities:
        client.purge(handles)
