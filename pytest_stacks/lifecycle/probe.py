"""A trivial job must run to completion before any test: readiness is not enough."""

from __future__ import annotations

import tempfile
import uuid
from pathlib import Path

from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.manifest import Stack
from pytest_stacks.providers.base import Attached


def functional_probe(stack: Stack, attached: Attached) -> None:
    """Submit one job, wait for it, and (where the stack promises outputs) fetch and compare
    its output; purge it where the stack can. Any shortfall is an infrastructure error."""
    client = attached.client
    token = uuid.uuid4().hex
    outputs = ("probe.txt",) if "outputs" in stack.capabilities else ()
    # A stack may ask for a particular probe (the Kubernetes stacks: one MPIJob, so the
    # operator itself is proven before any test, not only the API server).
    options = stack.options.get("probe", {})
    handles = submitted(client.submit([JobSpec(script=f"echo {token} > probe.txt\n",
                                               name="pytest-stacks-probe", outputs=outputs,
                                               backend_options=dict(options))]))
    try:
        # Polled closely (one job, a cheap query): the probe delays every test of the run.
        [status] = wait_for(client, handles, timeout=stack.timeouts.job, poll=0.1)
    except TimeoutError as exc:
        raise InfrastructureError(stack.name, f"functional probe job did not finish: {exc}",
                                  attached.logs()) from exc
    if status.state is not JobState.COMPLETED:
        raise InfrastructureError(
            stack.name, f"functional probe job ended {status.state} ({status.native_state}, "
            f"exit {status.exit_code}) instead of completed", attached.logs())
    if "outputs" in stack.capabilities:
        with tempfile.TemporaryDirectory(prefix="pytest-stacks-probe-") as folder:
            [result] = client.fetch_outputs(handles, Path(folder))
            got = result.files.get("probe.txt")
            if not result.ok or got is None or got.read_text().strip() != token:
                raise InfrastructureError(
                    stack.name, f"functional probe job's output did not come back intact "
                    f"({result.error or 'wrong or missing probe.txt'})", attached.logs())
    if "purge" in stack.capabilities:
        [purged] = client.purge(handles)
        if not purged.ok:
            raise InfrastructureError(stack.name, f"functional probe job could not be purged: "
                                      f"{purged.error}", attached.logs())
