"""Reference drivers, and how each backend is driven inside a compose stack.

A :class:`ComposeAdapter` is the backend-specific half of the compose provider: how to tell the
daemons really serve, what to prepare per run (tokens), how to build a client, which logs matter.
The provider owns the lifecycle; adapters never start or stop containers.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from pytest_stacks.contract import JobClient
from pytest_stacks.manifest import Stack
from pytest_stacks.transports import Transport


class ComposeAdapter(Protocol):
    def wait_ready(self, transport: Transport, timeout: float) -> None:
        """Return once the daemons answer their own readiness query; raise TimeoutError."""
        ...

    def prepare(self, stack: Stack, transport: Transport, run_dir: Path,
                ports: dict[str, int]) -> dict[str, Any]:
        """Per-run set-up after readiness (e.g. mint a token). Returns JSON-able info."""
        ...

    def client(self, stack: Stack, transport: Transport, info: dict[str, Any],
               run_dir: Path) -> JobClient: ...

    def daemon_logs(self, transport: Transport) -> str:
        """The daemons' own logs, for failure reports."""
        ...


def compose_adapter(backend: str) -> ComposeAdapter:
    if backend == "slurm":
        from pytest_stacks.backends.slurm_stack import SlurmComposeAdapter
        return SlurmComposeAdapter()
    if backend == "htcondor":
        from pytest_stacks.backends.htcondor_stack import HTCondorComposeAdapter
        return HTCondorComposeAdapter()
    raise KeyError(backend)
