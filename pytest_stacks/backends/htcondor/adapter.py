"""How the HTCondor driver is used inside a compose stack (``stacks/htcondor``).

Readiness is HTCondor's own: ``condor_who -wait`` on the master's ready ad (all daemons up and
the startd Ready), which is what HTCondor's test framework uses. Per run, an IDTOKEN for the
submit user is minted inside the container and written to a private directory under
``run_dir``; the client on the host reaches the pool through the published shared port with it.
The token is never printed or logged.

:func:`fake_client` is the fake provider's counterpart: the same driver over the in-process
schedd.
"""

from __future__ import annotations

import os
import re
import shlex
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from pytest_stacks.backends.htcondor.api import parse_condor_version
from pytest_stacks.backends.htcondor.driver import HTCondorClient
from pytest_stacks.contract import JobClient
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.manifest import Stack
from pytest_stacks.polling import poll_until
from pytest_stacks.transports import Transport

READY_EXPRESSION = 'IsReady && STARTD_State =?= "Ready"'
DAEMON_LOGS = ("MasterLog", "SchedLog", "ShadowLog", "StartLog", "StarterLog*")
LOG_DIR = "/var/log/condor"
TOKEN_FILE = "pytest-stacks"


def observed_version(transport: Transport) -> str:
    """The daemons' version as ``condor_version`` prints it (``$CondorVersion: 23.9.6 ...``)."""
    result = transport.run(["condor_version"], user="root")
    if not result.ok:
        raise InfrastructureError("htcondor", f"condor_version failed (exit "
                                              f"{result.returncode}): {result.stderr.strip()}")
    match = re.search(r"\$CondorVersion:\s*(\d+\.\d+\.\d+)", result.stdout)
    if match is None:
        return parse_condor_version(result.stdout)
    return match.group(1)


def is_ready(condor_who_output: str) -> bool:
    """Whether ``condor_who``'s printed master ad says every daemon is up and the startd is
    Ready (``IsReady = true`` and ``STARTD_State = "Ready"``)."""
    lines = {line.strip() for line in condor_who_output.splitlines()}
    return "IsReady = true" in lines and 'STARTD_State = "Ready"' in lines


class HTCondorComposeAdapter:
    def host_environment(self, stack: Stack, timeout: float) -> dict[str, str]:
        """Nothing: the image holds everything (Debian packages)."""
        return {}

    def wait_ready(self, transport: Transport, timeout: float) -> None:
        # condor_who -wait exits 0 even when the condition timed out (and prints nothing
        # before the master is up), so the printed ad is what counts (seen on 23.9.6).
        deadline = time.monotonic() + timeout

        def ask() -> str:
            wait = max(1, min(int(deadline - time.monotonic()), 60))
            result = transport.run(["condor_who", f"-wait:{wait}", READY_EXPRESSION],
                                   user="root", timeout=wait + 15)
            if is_ready(result.stdout):
                return ""
            return (result.stdout + result.stderr) or f"exit {result.returncode}"

        poll_until(ask, lambda last: last == "", timeout=timeout, interval=1.0,
                   on_timeout=lambda last: (
                       f"HTCondor not ready after {timeout:.0f}s (condor_who -wait on "
                       f"{READY_EXPRESSION!r}); last answer: {last.strip()[-500:] or '(none)'}"))

    def prepare(self, stack: Stack, transport: Transport, run_dir: Path,
                ports: dict[str, int]) -> dict[str, str]:
        if "CONDOR_PORT" not in ports:
            raise InfrastructureError(stack.name, "no CONDOR_PORT was published for the stack")
        user = str(stack.options.get("submit_user", "submitter"))
        domain = str(stack.options.get("uid_domain", "pytest-stacks.test"))
        result = transport.run(["condor_token_create", "-identity", f"{user}@{domain}"],
                               user="root")
        token = result.stdout.strip()
        if not result.ok or not token:
            # stderr only: stdout may hold a token.
            raise InfrastructureError(stack.name, (
                f"condor_token_create -identity {shlex.quote(f'{user}@{domain}')} failed "
                f"(exit {result.returncode}): {result.stderr.strip()[:500]}"))
        token_dir = Path(run_dir) / "tokens" / stack.name
        token_dir.mkdir(parents=True, exist_ok=True)
        token_dir.chmod(0o700)
        path = token_dir / TOKEN_FILE
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            os.fchmod(fd, 0o600)
            os.write(fd, (token + "\n").encode())
        finally:
            os.close(fd)
        return {"collector": f"127.0.0.1:{int(ports['CONDOR_PORT'])}",
                "token_dir": str(token_dir)}

    def client(self, stack: Stack, transport: Transport, endpoints: Mapping[str, str],
               run_dir: Path) -> JobClient:
        return HTCondorClient.for_pool(stack, endpoints["collector"],
                                       Path(endpoints["token_dir"]), Path(run_dir))

    def daemon_logs(self, transport: Transport) -> str:
        names = " ".join(DAEMON_LOGS)
        script = (f"cd {LOG_DIR} 2>/dev/null || exit 0; for f in {names}; do "
                  f'[ -f "$f" ] || continue; echo "===== {LOG_DIR}/$f"; tail -n 80 "$f"; done')
        result = transport.run(["sh", "-c", script], user="root")
        return result.stdout + (f"\n(log collection: {result.stderr.strip()})"
                                if result.stderr.strip() else "")


def fake_client(stack: Stack, run_dir: Path,
                ) -> tuple[JobClient, Callable[[], str], Callable[[], None]]:
    """The real driver over an in-process schedd: (client, daemon log reader, close)."""
    # Imported here: the compose lane never needs the double.
    from pytest_stacks.backends.htcondor.fake import FakeSchedd

    schedd = FakeSchedd(
        stack.version,
        client_version=str(stack.options.get("client_version", "25.14.1")),
        periodic_expr_interval=float(stack.options.get("periodic_expr_interval", 0.2)))
    client = HTCondorClient.for_fake(schedd, stack, run_dir)
    return client, schedd.daemon_log, schedd.close
