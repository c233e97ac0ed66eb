"""The run's namespace: created once, labelled with the run id, usable only once the
controller manager has made its ``default`` ServiceAccount (seen on 1.36.3: until then the API
server refuses pods in it with 403)."""

from __future__ import annotations

import re

from pytest_stacks.backends.kubernetes import objects
from pytest_stacks.backends.kubernetes.api import ApiError, KubeApi
from pytest_stacks.errors import BackendCallError
from pytest_stacks.polling import poll_until

ACCOUNT_TIMEOUT = 30.0


def ensure_namespace(api: KubeApi, namespace: str, run_id: str) -> None:
    """Create ``namespace`` unless it exists, then wait for its default ServiceAccount.
    ApiErrors other than "already exists" propagate; a missing account is BackendCallError."""
    if api.get("Namespace", None, namespace) is None:
        try:
            api.create(objects.namespace(namespace, run_id))
        except ApiError as exc:
            if exc.status != 409:
                raise
    # Asked every 0.1 s (a GET, milliseconds): on a plane that has just started, the account
    # comes once the controller manager's account controller runs, and every bring-up's probe
    # waits on it.
    try:
        poll_until(lambda: api.get("ServiceAccount", namespace, "default"),
                   lambda account: account is not None, timeout=ACCOUNT_TIMEOUT, interval=0.1,
                   first_interval=0.02,
                   on_timeout=lambda _: f"namespace {namespace} got no default ServiceAccount "
                                        f"in {ACCOUNT_TIMEOUT:.0f}s")
    except TimeoutError as exc:
        raise BackendCallError(str(exc)) from None


def dns_suffix(run_id: str) -> str:
    """The end of a run id as a DNS label's part (the run's job names carry it)."""
    cleaned = re.sub(r"[^a-z0-9]+", "-", run_id.lower()).strip("-")
    return (cleaned[-8:].strip("-") or "run")
