"""How the Slurm driver is used inside a compose stack: readiness, logs, the client."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from pytest_stacks.backends.slurm import SlurmClient
from pytest_stacks.contract import JobClient
from pytest_stacks.manifest import Stack
from pytest_stacks.transports import Transport

LOG_FILES = ("/var/log/slurm/slurmctld.log", "/var/log/slurm/slurmd.log",
             "/var/log/slurm/jobcomp.log")


class SlurmComposeAdapter:
    def wait_ready(self, transport: Transport, timeout: float) -> None:
        """Ready = slurmctld answers ``scontrol ping`` and the node is idle in ``sinfo``.

        A running container or a live process is liveness, not readiness; jobs submitted
        before the node registers sit pending and make the first test flaky.
        """
        deadline = time.monotonic() + timeout
        last = "no answer yet"
        while time.monotonic() < deadline:
            ping = transport.run(["scontrol", "ping"], timeout=10)
            if ping.ok and "UP" in ping.stdout:
                node = transport.run(["sinfo", "-h", "-n", "localhost", "-o", "%t"], timeout=10)
                state = node.stdout.strip()
                if node.ok and state in {"idle", "mix", "alloc"}:
                    return
                last = f"slurmctld UP, node state {state or '?'} {node.stderr.strip()}"
            else:
                last = (ping.stdout + ping.stderr).strip() or f"exit {ping.returncode}"
            time.sleep(0.25)
        raise TimeoutError(f"last answer: {last}")

    def prepare(self, stack: Stack, transport: Transport, run_dir: Path,
                ports: dict[str, int]) -> dict[str, Any]:
        """Nothing per run beyond what the entrypoint did (fresh munge key at start)."""
        return {}

    def client(self, stack: Stack, transport: Transport, info: dict[str, Any],
               run_dir: Path) -> JobClient:
        return SlurmClient(transport, stack.name)

    def daemon_logs(self, transport: Transport) -> str:
        parts = []
        for path in LOG_FILES:
            result = transport.run(["tail", "-n", "150", path], timeout=20)
            parts.append(f"== {path}\n{result.stdout or result.stderr}")
        return "\n".join(parts)
