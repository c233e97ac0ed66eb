"""A stack's commands as a folder of shims: one small executable per command the login host
really has, each running :func:`pytest_stacks.login.forward.main` with the stack's route.

One mechanism for every stack; what differs per transport is only the route: the login
container by ``docker exec`` (local compose stacks), the stack's pinned SSH route written as an
ssh config (ssh, multi-hop and existing-site stacks; the same key and known_hosts the tests'
client uses), or a relay into the in-process fake (fake stacks, fake-mpi-operator's kubectl
too). A real Kubernetes stack gets its pinned kubectl binary itself (:mod:`.kubectl`).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest_stacks
from pytest_stacks.errors import StacksError
from pytest_stacks.login import forward, kubectl
from pytest_stacks.login.relay import Relay
from pytest_stacks.login.route import LoginRoute, NoCommands
from pytest_stacks.manifest import Stack
from pytest_stacks.providers import rest_access, shared_folder, site_route, ssh_access
from pytest_stacks.providers.base import StackInfo

#: The commands a client of each backend runs; a stack gets those its login host has.
CATALOGUE: dict[str, tuple[str, ...]] = {
    "slurm": ("sbatch", "srun", "salloc", "squeue", "scontrol", "scancel", "sacct", "sinfo",
              "sstat", "sprio", "sshare", "sacctmgr", "sattach", "strigger"),
    "htcondor": ("condor_submit", "condor_q", "condor_rm", "condor_history",
                 "condor_transfer_data", "condor_status", "condor_qedit", "condor_hold",
                 "condor_release", "condor_wait", "condor_version", "condor_config_val",
                 "condor_watch_q", "condor_tail", "condor_ssh_to_job"),
}


def login_user(stack: Stack, endpoints: Mapping[str, str]) -> str:
    """The user a person of the site logs in as: the ssh route's, an existing site's, else
    ``options.submit_user`` (``submitter`` in this project's images). Never root."""
    route = stack.options.get("ssh")
    if site_route.LOGIN_USER in endpoints:
        user = endpoints[site_route.LOGIN_USER]
    elif isinstance(route, Mapping) and isinstance(route.get("user"), str):
        user = str(route["user"])
    else:
        user = str(stack.options.get("submit_user", "submitter"))
    if user in ("root", "0", ""):
        raise StacksError(f"stack {stack.name}: the login user is {user or 'empty'!r}; its "
                          f"commands run as a site's user, never root. Set options.submit_user "
                          f"(or options.ssh.user) to the non-root user jobs are submitted as.")
    return user


def write_ssh_config(path: Path, endpoint: str) -> None:
    """The ssh route (every hop, the run's key, the pinned known_hosts) as an ssh config whose
    last host is ``login``: ``ssh -F path login`` goes the way the tests' client goes."""
    data: dict[str, Any] = json.loads(endpoint)
    hops = data["hops"]
    lines = []
    for index, hop in enumerate(hops):
        name = "login" if index == len(hops) - 1 else f"hop{index}"
        lines += [f"Host {name}", f"  HostName {hop['host']}", f"  Port {hop['port']}",
                  f"  User {hop['user']}", f"  IdentityFile {data['key']}",
                  "  IdentitiesOnly yes", f"  UserKnownHostsFile {data['known_hosts']}",
                  "  GlobalKnownHostsFile /dev/null", "  StrictHostKeyChecking yes",
                  "  CheckHostIP no", "  BatchMode yes", "  LogLevel ERROR",
                  "  ConnectTimeout 15"]
        if index:
            lines.append(f"  ProxyJump hop{index - 1}")
    path.write_text("\n".join(lines) + "\n")
    path.chmod(0o600)


@dataclass
class LoginCommands:
    """The bin folder of one stack in one process, the environment to run it with, and the
    folder both sides see (None where there is none: an existing site)."""

    stack: str
    bin: Path
    route: LoginRoute
    shared: Path | None
    extra_env: dict[str, str] = field(default_factory=dict)
    relay: Relay | None = None

    @property
    def commands(self) -> tuple[str, ...]:
        return self.route.commands

    def environment(self, base: Mapping[str, str] | None = None) -> dict[str, str]:
        """``base`` (default: this process's environment) with the bin folder first on PATH."""
        env = dict(os.environ if base is None else base)
        env["PATH"] = os.pathsep.join([str(self.bin), *filter(None, [env.get("PATH", "")])])
        env.update(self.extra_env)
        return env

    def run(self, argv: list[str]) -> int:
        """A person's command (``pytest-stacks exec``): streams are this process's own."""
        if self.route.kind == "local":
            return subprocess.run(argv, env=self.environment(), check=False).returncode
        return forward.run(self.route, argv)

    def shell(self) -> int:
        """A person's login shell on the login host (``pytest-stacks shell``)."""
        if self.route.kind in ("relay", "local"):
            raise StacksError(f"stack {self.stack} has no login host to open a shell on "
                              f"(a fake, or a Kubernetes stack: use `exec NAME -- kubectl`)")
        return forward.run(self.route, ["sh", "-c", 'exec "${SHELL:-/bin/sh}" -l'],
                           interactive=True)

    def close(self) -> None:
        if self.relay is not None:
            self.relay.close()
            self.relay = None
        shutil.rmtree(self.bin.parent, ignore_errors=True)


def _shim(route_file: Path) -> str:
    package_root = Path(pytest_stacks.__file__).resolve().parent.parent
    return (f"#!{sys.executable}\n"
            f"# pytest-stacks: forwards this command to the stack's login host.\n"
            f"import sys\n"
            f"sys.path.insert(0, {str(package_root)!r})\n"
            f"from pytest_stacks.login.forward import main\n"
            f"sys.exit(main({str(route_file)!r}, sys.argv))\n")


def _available(route: LoginRoute, names: tuple[str, ...]) -> tuple[str, ...]:
    """Which of ``names`` the login host has, asked there (``command -v`` as its user)."""
    probe = ["sh", "-c", 'for c; do command -v "$c" >/dev/null 2>&1 && echo "$c"; done',
             "sh", *names]
    argv = (forward._docker_argv if route.kind == "docker" else forward._ssh_argv)(
        route, ["sh", "-c", forward.REMOTE, "sh", "", *probe], False)
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise StacksError(f"stack {route.stack}: cannot list its login host's commands "
                          f"({route.kind}, exit {done.returncode}): "
                          f"{done.stderr.strip()[:300] or done.stdout.strip()[:300]}")
    found = set(done.stdout.split())
    return tuple(n for n in names if n in found)


def _fake_front(stack: Stack, double: object) -> Any:
    """The fake's command line: the double's own ``run``, or its ``commands`` front."""
    for front in (getattr(double, "commands", None), double):
        if front is not None and callable(getattr(front, "run", None)):
            return front
    raise NoCommands(f"stack {stack.name}: its fake ({type(double).__name__}) has no command "
                      f"line to forward to")


def _kubectl_commands(stack: Stack, info: StackInfo, folder: Path) -> LoginCommands:
    binary = kubectl.binary(stack, stack.timeouts.build)
    bin_folder = folder / "bin"
    bin_folder.mkdir(parents=True, exist_ok=True)
    try:
        env = kubectl.write(stack, info.endpoints, bin_folder, binary)
    except BaseException:
        shutil.rmtree(folder, ignore_errors=True)
        raise
    route = LoginRoute(stack.name, "local", "", "", "", ("kubectl",))
    return LoginCommands(stack.name, bin_folder, route, None, extra_env=env)


#: What ``KUBECONFIG`` names on a fake Kubernetes stack: it has no API server to point at.
FAKE_KUBECONFIG = """\
# pytest-stacks: {stack} is an in-process fake with no API server to reach. Its kubectl (first
# on PATH in stack_commands.env) ignores this file; a client that reads a kubeconfig itself
# (the Kubernetes Python client, lightkube) cannot use it: hand it stack_fake (KubeApi) instead.
apiVersion: v1
kind: Config
clusters: [{{name: {stack}, cluster: {{server: "https://{stack}.invalid"}}}}]
contexts: [{{name: {stack}, context: {{cluster: {stack}, user: {stack}}}}}]
current-context: {stack}
users: [{{name: {stack}, user: {{}}}}]
"""


def _write_shims(folder: Path, bin_folder: Path, route: LoginRoute) -> None:
    route_file = folder / "route.json"
    route.write(route_file)
    for name in route.commands:
        shim = bin_folder / name
        shim.write_text(_shim(route_file))
        shim.chmod(0o755)


def _fake_kubectl_commands(stack: Stack, double: object,
                           folder: Path) -> LoginCommands:
    """The fake's kubectl (``double.commands``) through the relay. kubectl runs on the
    client's machine, so every path is "shared" (``/``): ``apply -f`` reads the caller's own
    files; there is no per-test shared folder, as on a real Kubernetes stack."""
    front = _fake_front(stack, double)
    user = ""  # as on a real Kubernetes stack: kubectl has no login user, only an API server
    bin_folder = folder / "bin"
    bin_folder.mkdir(parents=True, exist_ok=True)
    relay = Relay(front, user)
    try:
        config = folder / "kubeconfig"
        config.write_text(FAKE_KUBECONFIG.format(stack=stack.name))
        route = LoginRoute(stack.name, "relay", str(relay.socket), user, "/", ("kubectl",))
        _write_shims(folder, bin_folder, route)
    except BaseException:
        relay.close()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    return LoginCommands(stack.name, bin_folder, route, None,
                         extra_env={"KUBECONFIG": str(config)}, relay=relay)


def open_commands(stack: Stack, info: StackInfo, double: object | None,
                  folder: Path) -> LoginCommands:
    """Write ``folder``/bin with a shim per command the stack has. Raises StacksError naming
    the stack when it has no login host (a Kubernetes stack) or cannot be asked."""
    names = CATALOGUE.get(stack.backend)
    if names is None and stack.transport == "kubernetes":
        if double is None:
            return _kubectl_commands(stack, info, folder)
        return _fake_kubectl_commands(stack, double, folder)
    if names is None:
        raise NoCommands(f"stack {stack.name} ({stack.backend}) has no login host whose "
                          f"commands could be put on PATH (only Slurm and HTCondor stacks "
                          f"have one; Kubernetes stacks brought up here get kubectl)")
    folder.mkdir(parents=True, exist_ok=True)
    bin_folder = folder / "bin"
    bin_folder.mkdir(exist_ok=True)
    user = login_user(stack, info.endpoints)
    relay = None
    shared: Path | None = None
    try:
        if double is not None:
            front = _fake_front(stack, double)
            shared = folder / "shared"
            shared.mkdir(exist_ok=True)
            if callable(getattr(front, "share", None)):
                front.share(shared)
            relay = Relay(front, user)
            route = LoginRoute(stack.name, "relay", str(relay.socket), user, str(shared), names)
        else:
            if shared_folder.ENDPOINT in info.endpoints:
                shared = Path(info.endpoints[shared_folder.ENDPOINT])
            if ssh_access.ENDPOINT in info.endpoints:
                config = folder / "ssh_config"
                write_ssh_config(config, info.endpoints[ssh_access.ENDPOINT])
                route = LoginRoute(stack.name, "ssh", str(config), user,
                                   str(shared or ""), names)
            elif info.container:
                route = LoginRoute(stack.name, "docker", info.container, user,
                                   str(shared or ""), names, shutil.which("docker") or "docker")
            else:
                raise StacksError(f"stack {stack.name} ({info.provider}) records no login "
                                  f"host: neither an ssh route nor a container")
            route = LoginRoute(**{**route.__dict__, "commands": _available(route, names)})
    except BaseException:
        if relay is not None:
            relay.close()
        shutil.rmtree(folder, ignore_errors=True)
        raise
    _write_shims(folder, bin_folder, route)
    rest = rest_access.client_environment(stack, info.endpoints) if double is None else {}
    return LoginCommands(stack.name, bin_folder, route, shared, extra_env=rest, relay=relay)
