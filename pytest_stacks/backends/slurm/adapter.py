"""How the Slurm driver is used inside a compose stack (readiness, logs, the client), and how
the fake provider pairs it with the in-process double."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path

from pytest_stacks.backends import shared_fs
from pytest_stacks.backends.slurm import containers, nodes, rest_api
from pytest_stacks.backends.slurm.driver import SlurmClient
from pytest_stacks.backends.slurm.rest import RestSlurmClient
from pytest_stacks.contract import JobClient
from pytest_stacks.gobuild import GoModuleBuild
from pytest_stacks.manifest import Stack
from pytest_stacks.polling import poll_until
from pytest_stacks.transports import Transport

#: The capability of a stack whose slurmctld records jobs in slurmdbd (plain ``sacct``).
ACCOUNTING = "accounting"
READY_STATES = frozenset({"idle", "mix", "alloc"})
LOG_FILES = ("/var/log/slurm/slurmctld.log", "/var/log/slurm/slurmd.log",
             "/var/log/slurm/jobcomp.log")
# slurmrestd's log (transport rest) is /var/log/slurm/slurmrestd.log: a *.log like the rest.


class SlurmComposeAdapter:
    def host_programs(self, stack: Stack) -> list[GoModuleBuild]:
        return []

    def host_environment(self, stack: Stack, timeout: float) -> dict[str, str]:
        """Nothing: the image holds everything (Debian packages)."""
        return {}

    def wait_ready(self, transport: Transport, timeout: float) -> None:
        """Ready = slurmctld answers ``scontrol ping`` and every node is up in ``sinfo``
        (one node on a single-node stack, each compute node of a cluster).

        A running container or a live process is liveness, not readiness; jobs submitted
        before the nodes register sit pending (or run on fewer nodes than asked) and make the
        first test flaky.
        """
        def ask() -> tuple[bool, str]:
            ping = transport.run(["scontrol", "ping"], timeout=10)
            if not (ping.ok and "UP" in ping.stdout):
                return False, (ping.stdout + ping.stderr).strip() or f"exit {ping.returncode}"
            nodes = transport.run(["sinfo", "-h", "-N", "-o", "%N %t"], timeout=10)
            states = dict(line.split()[:2] for line in nodes.stdout.splitlines()
                          if len(line.split()) >= 2)
            shown = " ".join(f"{n}={s}" for n, s in sorted(states.items())) or "?"
            if nodes.ok and states and all(s in READY_STATES for s in states.values()):
                return accounting_ready(transport, shown)
            return False, f"slurmctld UP, nodes {shown} {nodes.stderr.strip()}"

        poll_until(ask, lambda answer: answer[0], timeout=timeout, interval=0.25,
                   on_timeout=lambda answer: f"last answer: {answer[1]}")

    def liveness(self, transport: Transport) -> str:
        """Whether Slurm can still serve, asked after a test failed on the stack: "" when
        slurmctld answers ``scontrol ping`` UP and every node the stack declares (sinfo lists
        the nodes of its slurm.conf) can take work; else the fault, in Slurm's own words: the
        node by name, its state and Slurm's reason (:mod:`.nodes`). A sinfo that cannot
        answer is a fault too (fail closed). Bounded: 10 s a question."""
        ping = transport.run(["scontrol", "ping"], timeout=10)
        said = " ".join((ping.stdout + ping.stderr).split())[:300]
        if not ping.ok or "UP" not in ping.stdout or "DOWN" in ping.stdout:
            return f"slurmctld not responding (scontrol ping: {said or f'exit {ping.returncode}'})"
        answer = transport.run(list(nodes.SINFO_ARGV), timeout=10)
        if not answer.ok:
            words = " ".join((answer.stderr or answer.stdout).split())[:300]
            return f"sinfo cannot list the nodes ({words or f'exit {answer.returncode}'})"
        if not nodes.listed(answer.stdout):
            return "sinfo lists no node: the stack has nothing to run jobs on"
        return "; ".join(str(fault) for fault in nodes.not_up(answer.stdout))

    def prepare(self, stack: Stack, transport: Transport, run_dir: Path,
                ports: dict[str, int]) -> dict[str, str]:
        """Nothing per run beyond what the entrypoint did (fresh munge key at start)."""
        return {}

    def client(self, stack: Stack, transport: Transport, endpoints: Mapping[str, str],
               run_dir: Path) -> JobClient:
        """The stack's way in: slurmrestd where the access issued a token for it (transport
        ``rest``), else Slurm's commands over the transport."""
        if "rest_url" in endpoints:
            return rest_client(stack, endpoints)
        return SlurmClient(transport, stack.name, bundles=containers.stack_bundles(stack),
                           shared_fs=shared_fs.shared(stack))

    def daemon_logs(self, transport: Transport) -> str:
        """Every daemon's log: slurmctld, each node's slurmd (one file per node on a cluster,
        whose log folder is shared), and the completion log."""
        listing = transport.run(["sh", "-c", "ls -1 /var/log/slurm/*.log"], timeout=20)
        found = [p for p in listing.stdout.split() if p.endswith(".log")]
        parts = []
        for path in found or list(LOG_FILES):
            result = transport.run(["tail", "-n", "150", path], timeout=20)
            parts.append(f"== {path}\n{result.stdout or result.stderr}")
        return "\n".join(parts)


def rest_client(stack: Stack, endpoints: Mapping[str, str],
                api_version: str | None = None) -> RestSlurmClient:
    """The REST client of a stack reached over slurmrestd, speaking ``api_version`` (default:
    the stack's ``options.rest_api_version``, else the newest the daemon serves);
    RestVersionError naming the versions served when the daemon does not serve it."""
    served = [v for v in endpoints.get("rest_served", "").split(",") if v]
    asked = str(stack.options.get(rest_api.VERSION_OPTION, "")) if api_version is None \
        else api_version
    version = rest_api.choose_version(served, asked)
    token = Path(endpoints["rest_token_file"]).read_text().strip()
    return RestSlurmClient(endpoints["rest_url"], token, stack.name, api_version=version,
                           user=endpoints.get("rest_user", "submitter"))


def accounting_ready(transport: Transport, shown: str) -> tuple[bool, str]:
    """Where slurmctld stores accounting in slurmdbd, ready also means slurmdbd answers and
    slurmctld has registered with it (its cluster has a ControlHost): a job that ends
    before that is missing from ``sacct``. (ready, what was seen)."""
    config = transport.run(["scontrol", "show", "config"], timeout=10)
    storage = next((line.split("=", 1)[1].strip() for line in config.stdout.splitlines()
                    if line.split("=", 1)[0].strip() == "AccountingStorageType"), "")
    if not config.ok:
        said = " ".join(config.stderr.split())[:300]
        return False, f"nodes {shown}, scontrol show config: {said or config.returncode}"
    if storage != "accounting_storage/slurmdbd":
        return True, shown
    clusters = transport.run(["sacctmgr", "-n", "-P", "show", "cluster",
                              "format=Cluster,ControlHost"], timeout=10)
    registered = [line for line in clusters.stdout.splitlines() if line.split("|")[-1]]
    if clusters.ok and registered:
        return True, f"{shown}, slurmdbd: {' '.join(registered)}"
    said = " ".join((clusters.stdout + clusters.stderr).split())[:300]
    return False, (f"nodes {shown}, slurmdbd: no slurmctld registered "
                   f"(sacctmgr show cluster: {said or f'exit {clusters.returncode}'})")


def fake_client(stack: Stack, run_dir: Path,
                ) -> tuple[JobClient, Callable[[], str], Callable[[], None]]:
    """The real driver over an in-process Slurm host: (client, daemon log reader, close).

    ``run_dir`` is unused: the double keeps its job directories in its own private root.
    """
    # Imported here: the compose lane never needs the double.
    from pytest_stacks.backends.slurm.fake import FakeSlurmHost

    host = FakeSlurmHost(stack.version, min_job_age=float(stack.options.get("min_job_age", 1.0)),
                         slots=int(stack.options.get("slots", 4)),
                         accounting=ACCOUNTING in stack.capabilities)
    return SlurmClient(host, stack.name), host.daemon_log, host.close
