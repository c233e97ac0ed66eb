"""How the HTCondor driver is used inside a compose stack (``stacks/htcondor``, one container;
``stacks/htcondor-pool``, a split pool whose submit node is the login node).

Readiness is HTCondor's own: ``condor_who -wait`` on the master's ready ad (all daemons up and
the startd Ready), which is what HTCondor's test framework uses. Per run, an IDTOKEN for the
submit user is minted inside the container and written to a private directory under
``run_dir``; the client on the host reaches the pool through the published shared port with it.
The token is never printed or logged.

A stack with ``transport: ssh`` is reached as a site's users reach it: the driver runs
HTCondor's command-line tools on the login node through the transport the provider hands over
(:class:`~pytest_stacks.backends.htcondor.remote_cli.RemoteCliSchedd`); no token, no port.

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
from pytest_stacks.backends.htcondor.remote_cli import RemoteCliSchedd
from pytest_stacks.contract import JobClient
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.gobuild import GoModuleBuild
from pytest_stacks.manifest import Stack
from pytest_stacks.polling import poll_until
from pytest_stacks.transports import Transport

READY_EXPRESSION = 'IsReady && STARTD_State =?= "Ready"'
#: What ``condor_who -wait`` waits for: the same, or no local startd at all (a split pool's
#: submit node, whose readiness then also asks the collector).
WAIT_EXPRESSION = 'IsReady && (STARTD_State =?= "Ready" || STARTD =?= undefined)'
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


def no_local_startd(condor_who_output: str) -> bool:
    """Whether the master's ready ad says every local daemon is up and none of them is a
    startd (the submit node of a split pool: its ad has ``SCHEDD = "Alive"`` and no
    ``STARTD = ...`` line, while a held local startd prints ``STARTD = "Hold"``)."""
    lines = [line.strip() for line in condor_who_output.splitlines()]
    return "IsReady = true" in lines and not any(
        line.split("=", 1)[0].strip() == "STARTD" for line in lines if "=" in line)


def pool_can_run(schedds: str, slots: str) -> str:
    """"" when the collector lists a schedd and an execute slot (``condor_status -af Name``
    outputs), else what is missing."""
    missing = [what for what, text in (("schedd", schedds), ("execute slot", slots))
               if not text.strip()]
    return f"the collector lists no {' and no '.join(missing)} yet" if missing else ""


class HTCondorComposeAdapter:
    def host_programs(self, stack: Stack) -> list[GoModuleBuild]:
        return []

    def host_environment(self, stack: Stack, timeout: float) -> dict[str, str]:
        """Nothing: the image holds everything (Debian packages)."""
        return {}

    def wait_ready(self, transport: Transport, timeout: float) -> None:
        """Ready = the pool can run a job submitted where ``transport`` leads.

        One container: the master's ready ad says every daemon is up and the startd Ready.
        The submit node of a split pool (no local startd): its master says every local daemon
        is up, and the collector lists a schedd and at least one execute slot.
        """
        # condor_who -wait exits 0 even when the condition timed out (and prints nothing
        # before the master is up), so the printed ad is what counts (seen on 23.9.6).
        deadline = time.monotonic() + timeout

        def ask() -> str:
            wait = max(1, min(int(deadline - time.monotonic()), 60))
            result = transport.run(["condor_who", f"-wait:{wait}", WAIT_EXPRESSION],
                                   user="root", timeout=wait + 15)
            if is_ready(result.stdout):
                return ""
            if not no_local_startd(result.stdout):
                return (result.stdout + result.stderr) or f"exit {result.returncode}"
            found = [transport.run(["condor_status", f"-{kind}", "-af", "Name"], user="root",
                                   timeout=15) for kind in ("schedd", "startd")]
            return pool_can_run(*(r.stdout if r.ok else "" for r in found))

        poll_until(ask, lambda last: last == "", timeout=timeout, interval=1.0,
                   on_timeout=lambda last: (
                       f"HTCondor not ready after {timeout:.0f}s (condor_who -wait on "
                       f"{WAIT_EXPRESSION!r}); last answer: {last.strip()[-500:] or '(none)'}"))

    def liveness(self, transport: Transport) -> str:
        """Whether the pool can still serve, asked after a test failed on the stack: "" when
        the schedd answers ``condor_q`` and the collector lists a schedd ad; else the fault,
        with HTCondor's own words. Bounded: 15 s a question."""
        queue = transport.run(["condor_q", "-totals"], user="root", timeout=15)
        if not queue.ok:
            said = " ".join((queue.stderr or queue.stdout).split())[:300]
            return f"schedd unreachable (condor_q: {said or f'exit {queue.returncode}'})"
        ads = transport.run(["condor_status", "-schedd", "-af", "Name"], user="root",
                            timeout=15)
        if not ads.ok or not ads.stdout.strip():
            said = " ".join((ads.stderr or ads.stdout).split())[:300]
            return (f"collector unreachable or no schedd ad (condor_status -schedd: "
                    f"{said or 'none'})")
        return ""

    def prepare(self, stack: Stack, transport: Transport, run_dir: Path,
                ports: dict[str, int]) -> dict[str, str]:
        if stack.transport == "ssh":
            return {}  # the login user's own credentials (its ssh key, FS on the node)
        if "CONDOR_PORT" not in ports:
            raise InfrastructureError(stack.name, "no CONDOR_PORT was published for the stack")
        user = submit_user(stack)
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
        if stack.transport == "ssh":
            schedd = RemoteCliSchedd(transport, user=submit_user(stack))
            return HTCondorClient(schedd, stack, Path(run_dir))
        return HTCondorClient.for_pool(stack, endpoints["collector"],
                                       Path(endpoints["token_dir"]), Path(run_dir))

    def daemon_logs(self, transport: Transport) -> str:
        """The daemons' logs: ``/var/log/condor/`` of one container, or every host's folder
        under it (a split pool shares one log volume, one folder per host)."""
        names = " ".join([*DAEMON_LOGS, *(f"*/{n}" for n in DAEMON_LOGS),
                          "*/CollectorLog", "*/NegotiatorLog"])
        script = (f"cd {LOG_DIR} 2>/dev/null || exit 0; for f in {names}; do "
                  f'[ -f "$f" ] || continue; echo "===== {LOG_DIR}/$f"; tail -n 80 "$f"; done')
        result = transport.run(["sh", "-c", script], user="root")
        return result.stdout + (f"\n(log collection: {result.stderr.strip()})"
                                if result.stderr.strip() else "")


def submit_user(stack: Stack) -> str:
    """The user jobs are submitted as: the ssh login user, else ``options.submit_user``."""
    route = stack.options.get("ssh")
    if isinstance(route, Mapping) and isinstance(route.get("user"), str):
        return str(route["user"])
    return str(stack.options.get("submit_user", "submitter"))


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
