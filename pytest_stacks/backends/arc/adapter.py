"""How the ARC driver is used inside a compose stack: readiness (Slurm and A-REX's REST
interface both), this run's copies of the per-start certificates, daemon logs, the client."""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pytest_stacks.backends.arc.driver import ArcClient
from pytest_stacks.backends.arc.rest import ArexRest, Credentials
from pytest_stacks.contract import JobClient
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.gobuild import GoModuleBuild
from pytest_stacks.manifest import Stack
from pytest_stacks.polling import poll_until
from pytest_stacks.transports import Transport

#: The image's readiness check: Slurm's own, then A-REX's REST info with the user's cert.
HEALTHCHECK = "/usr/local/share/pytest-stacks/arc/healthcheck.sh"
#: Where the entrypoint leaves this start's credentials (the key of the CA never leaves).
USER_FOLDER = "/home/submitter/.globus"
CA_FOLDER = "/etc/grid-security/certificates"
CA_FILE = "ARC-TestCA-stacks.pem"
PORT = "ARC_REST_PORT"
LOG_FILES = ("/var/log/arc/arex.log", "/var/log/arc/ws-interface.log",
             "/var/log/arc/arex-jobs.log", "/var/log/slurm/slurmctld.log",
             "/var/log/slurm/slurmd.log", "/var/log/slurm/jobcomp.log")


class ArcComposeAdapter:
    def host_programs(self, stack: Stack) -> list[GoModuleBuild]:
        return []

    def host_environment(self, stack: Stack, timeout: float) -> dict[str, str]:
        """Nothing: the image holds everything (Debian packages)."""
        return {}

    def wait_ready(self, transport: Transport, timeout: float) -> None:
        """Ready = Slurm's node takes jobs and A-REX answers ``GET rest/1.1/info`` over https
        with this start's user certificate (the image's check, asked through the engine): a
        listening port alone is not a CE that accepts jobs."""
        def ask() -> tuple[bool, str]:
            said = transport.run([HEALTHCHECK], timeout=15)
            return said.ok, (said.stdout + said.stderr).strip() or f"exit {said.returncode}"

        poll_until(ask, lambda answer: answer[0], timeout=timeout, interval=0.5,
                   on_timeout=lambda answer: f"last answer: {answer[1]}")

    def liveness(self, transport: Transport) -> str:
        said = transport.run([HEALTHCHECK], timeout=15)
        return "" if said.ok else (said.stdout + said.stderr).strip()[:300] or "unhealthy"

    def prepare(self, stack: Stack, transport: Transport, run_dir: Path,
                ports: dict[str, int]) -> dict[str, str]:
        """This run's copies of the CA certificate and the user's certificate and key (owner
        only: a key), and the endpoint on the published port."""
        if PORT not in ports:
            raise InfrastructureError(stack.name, f"compose.ports must name {PORT} (the "
                                      "published port of A-REX's https interface)")
        folder = run_dir / "tokens" / stack.name / "arc"  # never in CI's artifacts
        folder.mkdir(parents=True, exist_ok=True)
        os.chmod(folder, 0o700)
        user = transport.get_files(USER_FOLDER, ["usercert.pem", "userkey.pem"])
        ca = transport.get_files(CA_FOLDER, [CA_FILE])
        missing = sorted({"usercert.pem", "userkey.pem"} - set(user)) + \
            ([CA_FILE] if CA_FILE not in ca else [])
        if missing:
            raise InfrastructureError(stack.name, f"the entrypoint made no {missing} "
                                      f"({USER_FOLDER}, {CA_FOLDER}): see its log")
        written = {}
        for name, data in {**user, **ca}.items():
            path = folder / name
            path.touch(mode=0o600)
            path.write_bytes(data)
            written[name] = str(path)
        return {"arc_url": f"https://localhost:{ports[PORT]}/arex",
                "arc_ca": written[CA_FILE], "arc_cert": written["usercert.pem"],
                "arc_key": written["userkey.pem"]}

    def client(self, stack: Stack, transport: Transport, endpoints: Mapping[str, str],
               run_dir: Path) -> JobClient:
        api = ArexRest(endpoints["arc_url"], Credentials(
            ca=endpoints["arc_ca"], cert=endpoints["arc_cert"], key=endpoints["arc_key"]))
        return ArcClient(api, transport, stack.name, pins=dict(stack.components))

    def daemon_logs(self, transport: Transport) -> str:
        """A-REX's logs (the job manager, the WS/REST interface, the per-job log) and
        Slurm's under it."""
        parts = []
        for path in LOG_FILES:
            result = transport.run(["tail", "-n", "150", path], timeout=20)
            parts.append(f"== {path}\n{result.stdout or result.stderr}")
        return "\n".join(parts)
