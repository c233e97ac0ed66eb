"""How a compose stack's client reaches it, chosen once per stack: through the engine (the
``local``, ``bindings`` and ``kubernetes`` transports need nothing more) or over SSH to its
login node through its jump hosts (:mod:`.ssh_access`). The provider asks the one it is given
at each step and never branches on the transport itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol, cast

from pytest_stacks import registry
from pytest_stacks.errors import InfrastructureError, StacksError
from pytest_stacks.manifest import Stack
from pytest_stacks.polling import poll_until
from pytest_stacks.providers import ssh_access
from pytest_stacks.providers.base import RunContext, StackInfo
from pytest_stacks.transports import Transport


class Access(Protocol):
    def environment(self, stack: Stack, ctx: RunContext) -> dict[str, str]:
        """What the stack's containers need at start (a run's public key). Raises
        InfrastructureError."""
        ...

    def endpoints(self, stack: Stack, ctx: RunContext, info: StackInfo,
                  services: Mapping[str, Transport]) -> dict[str, str]:
        """After readiness: how the client reaches the stack (the pinned route). ``services``
        are the engine's channels into the stack's services, the trusted way in."""
        ...

    def transport(self, endpoints: Mapping[str, str]) -> Transport | None:
        """The client's own channel; None: the engine's (the provider's)."""
        ...

    def reach(self, endpoints: Mapping[str, str]) -> str:
        """How a person reaches the stack this way ('' when the engine's shell is the way)."""
        ...


class EngineAccess:
    """Commands through the engine (``docker exec``), or the backend's own client protocol
    to a published port: nothing to prepare, pin or open."""

    def environment(self, stack: Stack, ctx: RunContext) -> dict[str, str]:
        return {}

    def endpoints(self, stack: Stack, ctx: RunContext, info: StackInfo,
                  services: Mapping[str, Transport]) -> dict[str, str]:
        return {}

    def transport(self, endpoints: Mapping[str, str]) -> Transport | None:
        return None

    def reach(self, endpoints: Mapping[str, str]) -> str:
        return ""


class SshAccess:
    """The site's way: a key made for the run, every hop's host key pinned (read over the
    engine, never trusted on first use), an SSH transport through the jump hosts."""

    def environment(self, stack: Stack, ctx: RunContext) -> dict[str, str]:
        try:
            return ssh_access.client_environment(stack, ctx)
        except StacksError as exc:
            raise InfrastructureError(stack.name, str(exc)) from None

    def endpoints(self, stack: Stack, ctx: RunContext, info: StackInfo,
                  services: Mapping[str, Transport]) -> dict[str, str]:
        return ssh_access.pin(stack, ctx, info, lambda service: _host_key(stack, services,
                                                                          service))

    def transport(self, endpoints: Mapping[str, str]) -> Transport | None:
        return ssh_access.transport(endpoints)

    def reach(self, endpoints: Mapping[str, str]) -> str:
        return ssh_access.command_line(endpoints)


def _host_key(stack: Stack, services: Mapping[str, Transport], service: str) -> str:
    """A service's sshd host key, read through the engine (its entrypoint makes the key at
    start, so give it the readiness timeout to appear)."""
    channel = services.get(service)
    if channel is None:
        raise InfrastructureError(stack.name, f"service {service!r} of options.ssh has no "
                                  f"container in the stack")

    def ask() -> str:
        result = channel.run(["cat", ssh_access.HOST_KEY], timeout=30)
        return result.stdout if result.ok else ""

    try:
        return poll_until(ask, bool, timeout=stack.timeouts.ready, interval=0.5,
                          on_timeout=lambda _: f"no host key at {ssh_access.HOST_KEY} in "
                                               f"service {service!r}")
    except TimeoutError as exc:
        raise InfrastructureError(stack.name, str(exc)) from None


def access_for(stack: Stack) -> Access:
    """The way the stack's transport reaches a container stack (the registry's entry)."""
    return cast(Access, registry.resolve(registry.TRANSPORTS[stack.transport].access)())
