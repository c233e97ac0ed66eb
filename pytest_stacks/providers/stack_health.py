"""Whether a compose stack can still serve, asked when a test failed on it: a failure is the
product's only when the stack is healthy right after it.

Three questions, cheapest first, each bounded: every container of the stack (a jump host or a
compute node counts) running, not paused, and still on its network; the route the client takes
(SSH through the jump hosts) answering; and the backend's own liveness question, asked inside
the service container through the engine (``scontrol ping``, the schedd and the collector, the
API server's ``/readyz``: the adapter's optional ``liveness``). The first fault found is the
answer, named for a person, with the daemon's words or the container's last logs.
"""

from __future__ import annotations

from typing import Any

from pytest_stacks.errors import said
from pytest_stacks.transports import Transport

#: A network mode that names no network a container can be cut off from.
_NOT_A_NETWORK = ("", "default", "bridge", "host", "none")


def container_fault(container: Any) -> tuple[str, str]:
    """("", "") for a container that can serve; else (the fault, its last logs)."""
    service = container.labels.get("com.docker.compose.service", "?")
    name = f"the stack's container {container.name} (service {service})"
    state = container.attrs.get("State", {})
    if container.status == "paused" or state.get("Paused"):
        return f"{name} is paused (its processes are frozen)", ""
    if container.status != "running":
        logs = container.logs(tail=100).decode("utf-8", "replace")
        return (f"{name} is {container.status} (exit code {state.get('ExitCode')}"
                f"{', killed' if state.get('OOMKilled') else ''})", logs)
    mode = str(container.attrs.get("HostConfig", {}).get("NetworkMode", ""))
    attached = container.attrs.get("NetworkSettings", {}).get("Networks") or {}
    if mode not in _NOT_A_NETWORK and not mode.startswith("container:") \
            and mode not in attached:
        return (f"{name} is cut off its network {mode} (network gone: attached to "
                f"{', '.join(sorted(attached)) or 'none'})", "")
    return "", ""


def route_fault(route: Transport | None) -> str:
    """"" when the client's own route (SSH, its jump hosts) runs a command; else why not."""
    if route is None:
        return ""
    try:
        answer = route.run(["true"], timeout=10)
    except Exception as exc:
        return f"the route to the stack does not answer ({said(exc)})"
    finally:
        closing = getattr(route, "close", None)
        if closing is not None:
            closing()
    if not answer.ok:
        return (f"the route to the stack does not answer (exit {answer.returncode}: "
                f"{answer.stderr.strip()[:300]})")
    return ""


def backend_fault(adapter: Any, transport: Transport) -> str:
    """"" when the backend answers its own liveness question (or declares none); else the
    fault in the daemon's words."""
    liveness = getattr(adapter, "liveness", None)
    if liveness is None:
        return ""
    try:
        return str(liveness(transport))
    except Exception as exc:
        return f"the backend does not answer its liveness question ({said(exc)})"
