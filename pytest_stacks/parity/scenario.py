"""One backend-agnostic run whose exchanges are recorded: the same calls, in the same order,
against a real stack and against the fake that claims its version.

It covers what clients meet every day: the version, a job with inputs and outputs, a failing
job, a job killed while running, purge, a status after purge, and a job the scheduler never
had. Values are fixed (not random), so the fake and the daemon are asked the same things.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from pytest_stacks.contract import JobClient, JobHandle, JobSpec, JobState, JobStatus, submitted
from pytest_stacks.parity.tap import Recorder
from pytest_stacks.polling import poll_until

INPUT = b"parity input\n"
OK = JobSpec(script="set -e\necho started\ntr a-z A-Z < in.txt > out.txt\necho done >&2\n",
             name="parity-ok", inputs={"in.txt": INPUT}, outputs=("out.txt",))
#: Where jobs do not execute (kwok, the cluster double), the outcome is what the driver's
#: simulation options say; drivers that execute ignore them.
SIMULATED_OK = JobSpec(script="true\n", name="parity-ok")
FAILING = JobSpec(script="echo failing >&2\nexit 3\n", name="parity-failing",
                  backend_options={"exit_code": 3, "message": "failing"})
LONG = JobSpec(script="sleep 300\n", name="parity-long", backend_options={"keep_running": True})
#: A job id no scheduler of a test stack has handed out.
NEVER_SUBMITTED = "987654321"


def run_scenario(client: JobClient, recorder: Recorder, outputs: Path, *,
                 timeout: float, capabilities: frozenset[str] | None = None) -> None:
    """Drive ``client`` (a tapped client feeding ``recorder``) through the scenario: the
    steps its stack's ``capabilities`` allow (all of them when None)."""
    files = capabilities is None or {"execution", "inputs", "outputs"} <= capabilities
    def step(name: str) -> None:
        recorder.step(name)

    def wait(handles: list[JobHandle], until: Callable[[JobStatus], bool]) -> None:
        def ask() -> list[JobStatus]:
            recorder.round()
            return client.status(handles)
        poll_until(ask, lambda statuses: all(until(s) for s in statuses), timeout=timeout,
                   interval=0.5, first_interval=0.05,
                   on_timeout=lambda last: f"parity scenario: still {last!r}")

    def submit(spec: JobSpec) -> JobHandle:
        [handle] = submitted(client.submit([spec]))
        recorder.own_jobs([handle.job_id])
        return handle

    step("versions")
    client.versions()
    step("submit ok")
    ok = submit(OK if files else SIMULATED_OK)
    step("wait ok")
    wait([ok], lambda s: s.state.is_terminal)
    if files:
        step("fetch ok")
        client.fetch_outputs([ok], outputs)
    step("submit failing")
    failing = submit(FAILING)
    step("wait failing")
    wait([failing], lambda s: s.state.is_terminal)
    step("submit long")
    long = submit(LONG)
    step("wait long running")
    wait([long], lambda s: s.state is JobState.RUNNING)
    step("kill long")
    client.kill([long])
    step("wait long ended")
    wait([long], lambda s: s.state.is_terminal)
    step("purge")
    client.purge([ok, failing, long])
    step("status after purge")
    client.status([ok, failing, long])
    step("status of a job never submitted")
    client.status([JobHandle(ok.stack, NEVER_SUBMITTED)])
