"""How a compose stack with ``transport: ssh`` is reached: its login node, the jump hosts in
front of it, the run's key pair and the pinned host keys.

The route comes from the stack's ``options.ssh``::

    ssh:
      user: submitter              # the login user on every hop (non-root)
      port: LOGIN_SSH_PORT         # compose port variable of the login node's sshd
      via:                         # jump hosts, outermost first (any number)
        - {service: jump, port: JUMP_SSH_PORT}

The first hop is reached on this machine's published port; every later hop by its compose
service name on port 22 from the hop before it, as a bastion reaches an inner network. Host keys
are read from each container over the Docker engine (the trusted channel) once the stack is up,
so the transport never trusts a key on first use.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_stacks.errors import InfrastructureError
from pytest_stacks.manifest import Stack
from pytest_stacks.providers.base import RunContext, StackInfo

if TYPE_CHECKING:
    from pytest_stacks.transports.ssh import SshTransport

# The SSH client (paramiko) and the key library (cryptography) are the 'ssh' extra: imported
# where a stack is reached over SSH, so every other run imports without them.

HOST_KEY = "/etc/ssh/ssh_host_ed25519_key.pub"
ENDPOINT = "ssh"


def _route(stack: Stack) -> tuple[str, str, list[tuple[str, str]]]:
    """(user, login port variable, [(jump service, its port variable)...])."""
    raw = stack.options.get("ssh")
    if not isinstance(raw, Mapping) or not isinstance(raw.get("user"), str) \
            or not isinstance(raw.get("port"), str):
        raise InfrastructureError(
            stack.name, "transport 'ssh' needs options.ssh with 'user' (the login user) and "
                        "'port' (the compose port variable of the login node's sshd)")
    via = []
    for i, jump in enumerate(raw.get("via") or []):
        if not isinstance(jump, Mapping) or not all(isinstance(jump.get(k), str)
                                                    for k in ("service", "port")):
            raise InfrastructureError(stack.name, f"options.ssh.via[{i}] needs 'service' and "
                                                  f"'port' (a compose port variable)")
        via.append((str(jump["service"]), str(jump["port"])))
    return str(raw["user"]), str(raw["port"]), via


def credentials_folder(stack: Stack, ctx: RunContext) -> Path:
    return ctx.run_dir / "tokens" / f"ssh-{stack.name}"


def client_environment(stack: Stack, ctx: RunContext) -> dict[str, str]:
    """A key pair made for this run; its public half goes to the stack's authorized_keys."""
    from pytest_stacks.transports.ssh_keys import client_key_pair

    _route(stack)  # a broken route is reported before anything is built
    _, public = client_key_pair(credentials_folder(stack, ctx),
                                f"pytest-stacks-{ctx.run_id}-{stack.name}")
    return {"SSH_AUTHORIZED_KEY": public}


def pin(stack: Stack, ctx: RunContext, info: StackInfo,
        host_key_of: Callable[[str], str]) -> dict[str, str]:
    """Pin every hop's host key (read through ``host_key_of(service)``) and record the route.

    Returns the endpoint entry for ``info.endpoints``.
    """
    from pytest_stacks.transports.ssh import Hop
    from pytest_stacks.transports.ssh_keys import write_known_hosts

    assert stack.compose is not None
    user, login_port, via = _route(stack)
    services = [s for s, _ in via] + [stack.compose.service]
    ports = [p for _, p in via] + [login_port]
    hops, entries = [], []
    for index, (service, variable) in enumerate(zip(services, ports, strict=True)):
        if index == 0:
            if variable not in info.ports:
                raise InfrastructureError(stack.name, f"options.ssh names port variable "
                                          f"{variable!r}, which compose.ports does not list")
            hop = Hop("127.0.0.1", info.ports[variable], user)
        else:
            hop = Hop(service, 22, user)
        key = host_key_of(service).strip()
        if not key.startswith("ssh-ed25519 "):
            raise InfrastructureError(stack.name, f"service {service!r} has no ed25519 host key "
                                      f"at {HOST_KEY} (got {key[:60]!r})")
        hops.append(hop)
        entries.append((hop.known_hosts_name, key))
    folder = credentials_folder(stack, ctx)
    write_known_hosts(folder / "known_hosts", entries)
    return {ENDPOINT: json.dumps({"hops": [h.to_json() for h in hops],
                                  "key": str(folder / "id_ed25519"),
                                  "known_hosts": str(folder / "known_hosts")})}


def transport(endpoints: Mapping[str, str]) -> SshTransport:
    from pytest_stacks.transports.ssh import Hop, SshTransport

    data: dict[str, Any] = json.loads(endpoints[ENDPOINT])
    return SshTransport([Hop.from_json(h) for h in data["hops"]], Path(data["key"]),
                        Path(data["known_hosts"]))


def command_line(endpoints: Mapping[str, str]) -> str:
    """The ``ssh`` command a person pastes to reach the login node the way the tests did: the
    run's key, its pinned known_hosts, every jump host."""
    from pytest_stacks.transports.ssh import Hop

    data: dict[str, Any] = json.loads(endpoints[ENDPOINT])
    hops = [Hop.from_json(h) for h in data["hops"]]
    options = (f"-i {data['key']} -o UserKnownHostsFile={data['known_hosts']} "
               f"-o StrictHostKeyChecking=yes")
    jumps = ",".join(f"{h.user}@{h.host}:{h.port}" for h in hops[:-1])
    last = hops[-1]
    return (f"ssh {options}" + (f" -J {jumps}" if jumps else "")
            + f" -p {last.port} {last.user}@{last.host}")
