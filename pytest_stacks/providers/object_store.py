"""The object store a compose stack runs beside its batch nodes (``options.object_store``), so
that resource-side staging (capabilities ``inputs.remote``, ``outputs.remote``) meets a real
S3 server: versitygw, built on the host from its pinned Go module, in a small image of the
stack's Debian base (``stacks/object-store``).

The store's container makes everything secret itself at start (its CA, its key pair, the
bucket) and hands the nodes only what a site's nodes have: the CA to trust and the key pair in
a volume they mount read-only. The harness gets neither, and no port is published: the client
cannot reach the store, only the nodes on the stack's network can, under :data:`HOST`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pytest_stacks import dockerutil, gobuild
from pytest_stacks.errors import StacksError
from pytest_stacks.gobuild import GoModuleBuild
from pytest_stacks.manifest import Stack
from pytest_stacks.polling import poll_until
from pytest_stacks.transports import Transport

OPTION = "object_store"
SERVICE = "store"
HOST = "store.pytest-stacks.test"  # a dotted name: HTCondor's s3:// URLs need one
BUCKET = "jobs"
TRUST = "/run/pytest-stacks/store-trust"  # ca.crt, read by the nodes
CREDENTIALS = "/run/pytest-stacks/store-credentials"  # <set>/access_key, <set>/secret_key
READY = "/run/pytest-stacks/store-ready"
ACCESS_LOG = "/var/log/pytest-stacks/access.log"
DATA = "/srv/store"  # the POSIX backend: an object is the file DATA/<bucket>/<key>
FOLDER = "object-store"  # a sibling of the stack's compose folder
MODULE = "github.com/versity/versitygw"


@dataclass(frozen=True)
class StoreConfig:
    versitygw: str  # the module version, vX.Y.Z


def config_of(stack: Stack) -> StoreConfig | None:
    """The stack's store, or None; StacksError names the manifest field and the fix."""
    raw = stack.options.get(OPTION)
    if raw is None:
        return None
    version = raw.get("versitygw") if isinstance(raw, Mapping) else None
    if not isinstance(version, str) or not version.startswith("v"):
        raise StacksError(f"manifest: stack {stack.name}: options.{OPTION} must be a mapping "
                          f"with versitygw: vX.Y.Z (the {MODULE} module version), got {raw!r}")
    return StoreConfig(version)


def program(config: StoreConfig) -> GoModuleBuild:
    return GoModuleBuild(f"versitygw-{config.versitygw}", {MODULE: config.versitygw},
                         {"versitygw": f"{MODULE}/cmd/versitygw"}, ("-s", "-w"))


def host_environment(stack: Stack, base: str, timeout: float) -> dict[str, str]:
    """Build the gateway and the store's image (cached by their inputs); the compose
    environment that names them. Nothing for a stack without a store."""
    config = config_of(stack)
    if config is None:
        return {}
    if stack.compose is None or not base:
        raise StacksError(f"manifest: stack {stack.name}: options.{OPTION} needs a compose "
                          "stack with a base_image (the store's image is built on it)")
    built = gobuild.ensure_built(program(config), timeout=timeout)
    folder = stack.compose.directory.parent / FOLDER
    reference = ("pytest-stacks/object-store:"
                 + dockerutil.content_tag(folder, {}, dockerutil.image_id(base)))
    dockerutil.ensure_built_image(reference, folder, {}, base, timeout=timeout)
    return {"STORE_IMAGE": reference, "STORE_PROGRAMS": str(built)}


def override(stack: Stack, labels: Mapping[str, str], nodes: list[str]) -> dict[str, Any]:
    """The compose override's part for the store: its service, and the trust and credentials
    volumes mounted read-only into every node service. {} without a store."""
    if config_of(stack) is None:
        return {}
    mounts = [f"store-trust:{TRUST}:ro", f"store-credentials:{CREDENTIALS}:ro"]
    return {
        "services": {
            SERVICE: {
                # Defaults only keep a hand-run `docker compose down` working (as the stacks'
                # compose files do); the plugin always sets both.
                "image": "${STORE_IMAGE:-pytest-stacks/object-store:unset}", "init": True,
                "stop_grace_period": "1s",
                "labels": dict(labels),
                "environment": {"STORE_HOST": HOST, "STORE_BUCKET": BUCKET},
                "volumes": ["${STORE_PROGRAMS:-/nonexistent}:/opt/store:ro",
                            f"store-trust:{TRUST}",
                            f"store-credentials:{CREDENTIALS}"],
                "networks": {"default": {"aliases": [HOST]}},
            },
            **{name: {"volumes": list(mounts)} for name in nodes},
        },
        "volumes": {name: {"labels": dict(labels)}
                    for name in ("store-trust", "store-credentials")},
    }


def wait_ready(stack: Stack, services: Mapping[str, Transport], timeout: float) -> None:
    """Until the store's bucket answers (its entrypoint marks it); StacksError with the
    store's own words if it never does. Nothing for a stack without a store."""
    if config_of(stack) is None:
        return
    store = services.get(SERVICE)
    if store is None:
        raise StacksError(f"the {SERVICE} service of stack {stack.name} is not running")

    try:  # it starts beside the daemons, in well under a second: by now it is up or broken
        poll_until(lambda: store.run(["test", "-e", READY], user="root").ok, bool,
                   timeout=min(timeout, 60), interval=0.1, first_interval=0.05)
    except (TimeoutError, StacksError) as exc:
        try:
            said = store.run(["cat", "/var/log/pytest-stacks/versitygw.log"], user="root")
            words = (said.stdout or said.stderr)[-1500:]
        except StacksError as unreadable:  # the container is gone: its compose logs say why
            words = str(unreadable)
        raise StacksError(f"the object store of stack {stack.name} did not make its bucket "
                          f"({exc}): {words}") from None
