"""How an existing deployment is reached, from its manifest entry and this machine's
environment: every ``{env: NAME}`` read, every file named there checked, the result in the
shape the transports already take (the ``ssh`` route of :mod:`.ssh_access`, a kubeconfig path).

Nothing is contacted here: a missing variable or file is a clear error in well under a second,
naming the stack, the manifest field and the variable, before anything is asked of the site.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_stacks.errors import InfrastructureError
from pytest_stacks.manifest import ExistingSpec, Stack
from pytest_stacks.manifest.references import looks_like_secret
from pytest_stacks.providers import ssh_access

KUBECONFIG = "kubeconfig"
LOGIN_USER = "login_user"
CONTEXT = "context"
NAMESPACE = "namespace"
JOB_ROOT = "job_root"


def spec_of(stack: Stack) -> ExistingSpec:
    if stack.existing is None:
        raise InfrastructureError(stack.name, "provider 'existing' needs an 'existing:' block")
    return stack.existing


def value(stack: Stack, raw: Any, field: str) -> str:
    """A literal, or the environment variable ``{env: NAME}`` names (set and not empty)."""
    if isinstance(raw, Mapping):
        name = str(raw.get("env", ""))
        found = os.environ.get(name, "")
        if not found:
            raise InfrastructureError(stack.name, (
                f"existing.{field} reads the environment variable {name}, which is not set "
                f"here. Export {name} (in CI: from the repository's secrets) and run again."))
        return found
    return str(raw)


def _file(stack: Stack, raw: Any, field: str) -> Path:
    """The file a secret field names (a key, known_hosts, a kubeconfig); a value that is the
    secret itself is refused without being quoted."""
    given = value(stack, raw, field)
    said = f" (from ${raw['env']})" if isinstance(raw, Mapping) else ""
    if looks_like_secret(given):
        where = f"the variable {raw['env']}" if isinstance(raw, Mapping) else "the manifest"
        raise InfrastructureError(stack.name, (
            f"existing.{field}: {where} holds what looks like the secret itself (not shown), "
            f"not the path of a file. Put it in a file only you can read (chmod 600) and give "
            f"that file's path instead."))
    path = Path(given).expanduser()
    if not path.is_file():
        raise InfrastructureError(stack.name, f"existing.{field}: no file at {path}{said}. "
                                              f"Point it at the file that holds it.")
    try:
        path.read_bytes()
    except OSError as exc:
        raise InfrastructureError(stack.name, f"existing.{field}: {path} cannot be read: "
                                              f"{exc.strerror}") from None
    return path.resolve()


def _hop(stack: Stack, raw: Mapping[str, Any], field: str) -> dict[str, Any]:
    port = value(stack, raw.get("port", 22), f"{field}.port")
    if not port.isdigit() or not 0 < int(port) < 65536:
        raise InfrastructureError(stack.name, f"existing.{field}.port: {port!r} is not a TCP "
                                              f"port")
    return {"host": value(stack, raw["host"], f"{field}.host"), "port": int(port),
            "user": value(stack, raw["user"], f"{field}.user")}


def endpoints(stack: Stack) -> dict[str, str]:
    """The route as endpoints (``ssh`` JSON, or ``kubeconfig``/``context``) plus ``job_root``.
    Raises InfrastructureError naming the field and the variable."""
    spec = spec_of(stack)
    found: dict[str, str] = {}
    if spec.ssh is not None:
        hops = [_hop(stack, hop, f"ssh.via[{i}]") for i, hop in enumerate(spec.ssh.get("via")
                                                                          or [])]
        hops.append(_hop(stack, spec.ssh["login"], "ssh.login"))
        known_hosts = _file(stack, spec.ssh["known_hosts"], "ssh.known_hosts")
        if not known_hosts.read_text(errors="replace").strip():
            raise InfrastructureError(stack.name, f"existing.ssh.known_hosts: {known_hosts} is "
                                      f"empty. Pin every hop's host key in it (ssh-keyscan, "
                                      f"checked against what the site publishes).")
        found[ssh_access.ENDPOINT] = json.dumps({
            "hops": hops, "key": str(_file(stack, spec.ssh["key"], "ssh.key")),
            "known_hosts": str(known_hosts)})
        found[LOGIN_USER] = str(hops[-1]["user"])
    if spec.kubeconfig is not None:
        found[KUBECONFIG] = str(_file(stack, spec.kubeconfig, "kubeconfig"))
        if spec.context is not None:
            found[CONTEXT] = value(stack, spec.context, "context")
        if spec.namespace is not None:
            found[NAMESPACE] = value(stack, spec.namespace, "namespace")
    if spec.job_root:
        found[JOB_ROOT] = spec.job_root.rstrip("/") or "/"
    return found
