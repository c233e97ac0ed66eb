"""The ``fake`` provider: in-process doubles, one per process, nothing outside it to clean."""

from __future__ import annotations

from typing import Any

from pytest_stacks.backends.fake_slurm import FakeSlurmHost
from pytest_stacks.backends.slurm import SlurmClient
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.manifest import Stack
from pytest_stacks.providers.base import Attached, RunContext


class FakeProvider:
    def up(self, stack: Stack, ctx: RunContext) -> dict[str, Any]:
        if stack.backend not in ("slurm", "htcondor"):
            raise InfrastructureError(stack.name, f"no fake exists for backend {stack.backend!r}")
        return {"provider": "fake"}

    def attach(self, stack: Stack, info: dict[str, Any], ctx: RunContext) -> Attached:
        if stack.backend == "slurm":
            host = FakeSlurmHost(stack.version,
                                 min_job_age=float(stack.options.get("min_job_age", 1.0)))
            return Attached(SlurmClient(host, stack.name), info, host.daemon_log, host.close)
        from pytest_stacks.backends.fake_htcondor import FakeSchedd
        from pytest_stacks.backends.htcondor import HTCondorClient

        schedd = FakeSchedd(
            stack.version,
            client_version=str(stack.options.get("client_version", "25.14.1")),
            periodic_expr_interval=float(stack.options.get("periodic_expr_interval", 0.2)))
        client = HTCondorClient.for_fake(schedd, stack, ctx.run_dir)
        return Attached(client, info, schedd.daemon_log, schedd.close)

    def down(self, stack: Stack, info: dict[str, Any], ctx: RunContext) -> None:
        """Each process closes its own double when it lets go; nothing is shared."""
