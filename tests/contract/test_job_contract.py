"""The job contract, executable: every stack must pass this, fakes and real daemons alike.

Each test names the capabilities it needs; the plugin skips it, with the reason, on a stack
that does not offer them. Values are fresh per run (uuid), so a stale file or a cached answer
cannot make a test pass.
"""

from __future__ import annotations

import os
import re
import subprocess
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.contract import (
    Housekeeper,
    JobClient,
    JobHandle,
    JobSpec,
    JobState,
    LiveQueue,
    submitted,
    wait_for,
)
from pytest_stacks.manifest import Stack
from pytest_stacks.polling import poll_until

from .nodes import node_containers, on_node


def _timeout(stack: Stack) -> float:
    return stack.timeouts.job


def _long_job(name: str) -> JobSpec:
    """A job that runs until killed: a long sleep where scripts run, and where pods are
    simulated (kwok, the double) the driver's option to keep the pod running."""
    return JobSpec(script="sleep 300\n", name=name, backend_options={"keep_running": True})


@pytest.mark.requires("submit", "status")
def test_job_runs_to_completion(backend: JobClient, stack: Stack) -> None:
    [handle] = submitted(backend.submit([JobSpec(script="true\n", name="ok")]))
    [status] = wait_for(backend, [handle], timeout=_timeout(stack))
    assert status.state is JobState.COMPLETED, status
    assert status.exit_code == 0
    assert status.native_state


@pytest.mark.requires("submit", "status", "execution")
def test_non_zero_exit_is_a_failure_with_its_code(backend: JobClient, stack: Stack) -> None:
    [handle] = submitted(backend.submit([JobSpec(script="echo failing >&2\nexit 3\n")]))
    [status] = wait_for(backend, [handle], timeout=_timeout(stack))
    assert status.state is JobState.FAILED, status
    assert status.exit_code == 3, status


@pytest.mark.requires("submit", "status", "inputs", "outputs")
def test_inputs_reach_the_job_byte_for_byte(backend: JobClient, stack: Stack,
                                            tmp_path: Path) -> None:
    payload = os.urandom(4096) + b"\x00\r\n" + uuid.uuid4().bytes
    spec = JobSpec(
        script="sha256sum input.bin | cut -d' ' -f1 > digest.txt\nwc -c < input.bin > size.txt\n",
        inputs={"input.bin": payload}, outputs=("digest.txt", "size.txt"))
    [handle] = submitted(backend.submit([spec]))
    [status] = wait_for(backend, [handle], timeout=_timeout(stack))
    assert status.state is JobState.COMPLETED, status
    [result] = backend.fetch_outputs([handle], tmp_path)
    assert result.ok, result.error
    import hashlib
    assert result.files["digest.txt"].read_text().strip() == hashlib.sha256(payload).hexdigest()
    assert int(result.files["size.txt"].read_text()) == len(payload)


@pytest.mark.requires("submit", "status", "execution", "inputs")
def test_inputs_reach_the_job_as_the_job_itself_checks(backend: JobClient,
                                                       stack: Stack) -> None:
    """Where nothing a job writes comes back (a stack without a shared file system and
    without ``outputs``), the job is the judge: it checks every byte of its inputs against
    the digest the test wrote into its script and exits 0 only on a match, and the scheduler
    carries that verdict back. A job whose inputs are missing, short or mangled fails."""
    import hashlib
    blob = os.urandom(4096) + b"\x00\r\n" + uuid.uuid4().bytes
    note = f"{uuid.uuid4().hex}\n'quoted' $HOME\n".encode()
    checks = "".join(f"echo '{hashlib.sha256(data).hexdigest()}  {name}' | "
                     f"sha256sum -c --strict --status - || exit 9\n"
                     for name, data in (("input.bin", blob), ("note.txt", note)))
    [handle] = submitted(backend.submit([JobSpec(script=checks,
                                                 inputs={"input.bin": blob, "note.txt": note})]))
    [status] = wait_for(backend, [handle], timeout=_timeout(stack))
    assert status.state is JobState.COMPLETED and status.exit_code == 0, status


@pytest.mark.requires("submit", "status", "outputs")
def test_outputs_come_back_byte_for_byte(backend: JobClient, stack: Stack,
                                         tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    spec = JobSpec(script=f"printf '%s\\n\\x01\\xff' {token} > out.bin\n", outputs=("out.bin",))
    [handle] = submitted(backend.submit([spec]))
    wait_for(backend, [handle], timeout=_timeout(stack))
    [result] = backend.fetch_outputs([handle], tmp_path)
    assert result.ok, result.error
    assert result.files["out.bin"].read_bytes() == f"{token}\n".encode() + b"\x01\xff"


@pytest.mark.requires("submit", "status", "outputs", "outputs.repeatable")
def test_outputs_fetched_twice_are_identical(backend: JobClient, stack: Stack,
                                             tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    spec = JobSpec(script=f"echo {token} > out.txt\n", outputs=("out.txt",))
    [handle] = submitted(backend.submit([spec]))
    wait_for(backend, [handle], timeout=_timeout(stack))
    [first] = backend.fetch_outputs([handle], tmp_path / "first")
    assert first.ok, first.error
    # One-shot retrieval removes the job at the scheduler's next periodic pass: wait for one
    # to have run, as the scheduler reports it, where the scheduler has such a pass.
    if isinstance(backend, Housekeeper):
        backend.await_housekeeping(timeout=_timeout(stack))
    else:  # a client that cannot say: the stack's declared interval, three times over
        time.sleep(float(stack.options.get("periodic_expr_interval", 0)) * 3)
    [second] = backend.fetch_outputs([handle], tmp_path / "second")
    assert second.ok, f"second fetch failed: {second.error}"
    assert first.files["out.txt"].read_text() == f"{token}\n"
    assert {n: p.read_bytes() for n, p in first.files.items()} == \
        {n: p.read_bytes() for n, p in second.files.items()}


def _processes_with(token: str, stack: Stack, info: dict[str, Any]) -> list[str]:
    """The command lines carrying ``token`` on every node of the stack, read from the nodes
    themselves (``/proc`` of each container of the stack; the host's for an in-process
    double), never from what the client remembers."""
    if stack.provider == "fake":
        found = subprocess.run(["ps", "-eo", "args"], capture_output=True, text=True,
                               check=True, timeout=30).stdout.splitlines()
        return [line for line in found if token in line and "ps -eo" not in line]
    lines = []
    for container in node_containers(stack, info):
        read = on_node(container, "for p in /proc/[0-9]*; do "
                                  "tr '\\0' ' ' < $p/cmdline 2>/dev/null; echo; done")
        assert read.returncode == 0, f"cannot read the processes of {container}: {read.stderr}"
        lines += [line for line in read.stdout.splitlines() if token in line]
    return lines


@pytest.mark.requires("submit", "status", "kill")
def test_running_job_can_be_killed(backend: JobClient, stack: Stack,
                                   stack_info: dict[str, Any]) -> None:
    """Killed means the work stopped, as the backend sees it: the job reads as cancelled from
    the scheduler (or the API server), and where scripts really run on nodes we own, the job's
    own process, found on the nodes by a token in its command line, is there before the kill
    and gone after it. A site's nodes (provider ``existing``) are not ours to look into: there
    the scheduler's own verdict is the proof."""
    token = f"heartbeat-{uuid.uuid4().hex[:12]}"
    spec = JobSpec(script=f"bash -c 'while :; do date +%s.%N > beat; sleep 0.2; done' "
                          f"{token}\n", name="victim", backend_options={"keep_running": True})
    [handle] = submitted(backend.submit([spec]))
    wait_for(backend, [handle], until=frozenset({JobState.RUNNING}), timeout=_timeout(stack))
    executes = "execution" in stack.capabilities and stack.provider != "existing"
    if executes:
        _until(lambda: _processes_with(token, stack, stack_info), _timeout(stack),
               f"the job's process ({token}) never showed on a node")
    [killed] = backend.kill([handle])
    assert killed.ok, killed.error
    [status] = wait_for(backend, [handle], timeout=_timeout(stack))
    assert status.state is JobState.CANCELLED, status
    if executes:
        _until(lambda: not _processes_with(token, stack, stack_info), _timeout(stack),
               lambda: f"the job's process ({token}) still runs on a node after the kill: "
                       f"{_processes_with(token, stack, stack_info)}")


def _until(check: Callable[[], object], timeout: float,
           message: str | Callable[[], str]) -> None:
    """Ask until ``check`` holds: at once, then backing off to every 0.5 s (a node's process
    list is read through ``docker exec``; a double's in a few milliseconds, so a fixed half
    second cost the fake lane 0.5 s per kill that a process outlived by a moment)."""
    try:
        poll_until(check, bool, timeout=timeout, interval=0.5, first_interval=0.02)
    except TimeoutError:
        pytest.fail(message() if callable(message) else message)


@pytest.mark.requires("submit", "status", "purge", "outputs")
def test_purge_forgets_a_finished_job(backend: JobClient, stack: Stack, tmp_path: Path) -> None:
    spec = JobSpec(script="echo kept > out.txt\n", outputs=("out.txt",))
    [handle] = submitted(backend.submit([spec]))
    wait_for(backend, [handle], timeout=_timeout(stack))
    [purged] = backend.purge([handle])
    assert purged.ok, purged.error
    [after] = backend.fetch_outputs([handle], tmp_path)
    assert not after.ok, "outputs of a purged job must be gone"
    [status] = backend.status([handle])
    assert status.state in {JobState.COMPLETED, JobState.UNKNOWN}, status


@pytest.mark.requires("submit", "status", "purge")
def test_purging_a_running_job_is_refused_per_job(backend: JobClient, stack: Stack) -> None:
    [handle] = submitted(backend.submit([_long_job("not-yet")]))
    try:
        wait_for(backend, [handle], until=frozenset({JobState.RUNNING}), timeout=_timeout(stack))
        [result] = backend.purge([handle])
        assert not result.ok and result.error
        [after] = backend.status([handle])  # the refusal left the job as it was
        assert after.state is JobState.RUNNING, after
    finally:
        backend.kill([handle])


@pytest.mark.requires("status")
def test_unknown_handle_reads_as_unknown(backend: JobClient, stack: Stack) -> None:
    ghost = JobHandle(stack.name, "4999999")
    [status] = backend.status([ghost])
    assert status.state is JobState.UNKNOWN
    assert status.handle == ghost


@pytest.mark.requires("submit", "status", "outputs")
def test_bulk_submit_returns_handles_in_order(backend: JobClient, stack: Stack,
                                              tmp_path: Path) -> None:
    values = [uuid.uuid4().hex for _ in range(5)]
    specs = [JobSpec(script=f"echo {v} > value.txt\n", name=f"bulk{i}", outputs=("value.txt",))
             for i, v in enumerate(values)]
    handles = submitted(backend.submit(specs))
    assert len(handles) == len(values)
    assert len(set(handles)) == len(handles)
    wait_for(backend, handles, timeout=_timeout(stack) * 2)
    results = backend.fetch_outputs(handles, tmp_path)
    assert [r.handle for r in results] == handles
    assert [r.files["value.txt"].read_text().strip() for r in results] == values


@pytest.mark.requires("submit", "status", "execution")
def test_status_of_a_mixed_set_comes_back_complete(backend: JobClient, stack: Stack) -> None:
    done, failing = submitted(backend.submit([JobSpec(script="true\n"),
                                              JobSpec(script="exit 7\n")]))
    wait_for(backend, [done, failing], timeout=_timeout(stack))
    ghost = JobHandle(stack.name, "4999998")
    statuses = backend.status([failing, ghost, done])
    assert [s.handle for s in statuses] == [failing, ghost, done]
    assert [s.state for s in statuses] == [JobState.FAILED, JobState.UNKNOWN, JobState.COMPLETED]
    assert statuses[0].exit_code == 7


@pytest.mark.requires("submit", "status", "execution")
def test_finished_job_stays_observable_after_leaving_the_queue(backend: JobClient,
                                                               stack: Stack) -> None:
    """Final states must not vanish when the scheduler ages a job out of its live queue.
    Where the stack ages jobs within a test's time (``options.min_job_age``) and the client
    can see the live queue, the job is first seen to leave it."""
    [handle] = submitted(backend.submit([JobSpec(script="exit 4\n")]))
    wait_for(backend, [handle], timeout=_timeout(stack))
    age = float(stack.options.get("min_job_age", 0))
    if age and isinstance(backend, LiveQueue):
        poll_until(lambda: backend.in_live_queue([handle]), lambda live: not any(live),
                   timeout=max(20 * age, 10), interval=age / 2, first_interval=age / 4,
                   on_timeout=lambda _: f"job {handle.job_id} still in the live queue")
    elif age:
        time.sleep(age * 1.5)  # a client without a view of the live queue: past the ageing
    [status] = backend.status([handle])
    assert status.state is JobState.FAILED, status
    assert status.exit_code == 4


#: Open MPI's launch line for one rank per host, as root in a container.
MPIRUN = "mpirun --allow-run-as-root -np {np} --map-by node"


@pytest.mark.requires("submit", "status", "mpi")
def test_an_mpi_job_reports_every_rank_on_distinct_hosts(backend: JobClient, stack: Stack,
                                                         tmp_path: Path) -> None:
    """A real MPI program across 2 workers (MPI_Init, an MPI_Allreduce of the ranks): each
    rank prints its rank and host, rank 0 the sum it received; the result must list exactly
    ranks 0 and 1, on 2 distinct hosts, and the right sum (ranks that merely started, or an
    echo of the launcher's variables, fail). The launch line is Open MPI's unless the stack
    names its MPI's own (``options.mpirun``, ``{np}`` for the number of ranks: MPICH's Hydra
    knows neither --allow-run-as-root nor --map-by)."""
    workers = 2
    launch = str(stack.options.get("mpirun", MPIRUN)).format(np=workers)
    spec = JobSpec(script=f"{launch} pytest-stacks-rank\n", name="mpi",
                   backend_options={"shape": "mpijob", "workers": workers})
    [handle] = submitted(backend.submit([spec]))
    [status] = wait_for(backend, [handle], timeout=_timeout(stack))
    [result] = backend.fetch_outputs([handle], tmp_path)
    text = "\n".join(p.read_text() for p in result.files.values())
    assert status.state is JobState.COMPLETED, f"{status}\n{text[-3000:]}"
    assert result.ok, result.error
    ranks = dict(re.findall(r"rank=(\d+) size=\d+ host=(\S+)", text))
    assert sorted(ranks) == [str(r) for r in range(workers)], text[-2000:]
    assert len(set(ranks.values())) == workers, text[-2000:]
    expected = workers * (workers - 1) // 2
    assert f"allreduce: sum of ranks {expected} (expected {expected})" in text, text[-2000:]


def _mentions(text: str, job_id: str) -> bool:
    """Whether a log line names the job: a scheduler's number (``JobId=37``, ``job 37.0``)
    as a whole token, never a piece of a time or a date; an object name as it is."""
    if not re.fullmatch(r"[\d.]+", job_id):
        return job_id in text
    return re.search(rf"(?<![\w.:/-]){re.escape(job_id)}(?![\w:/-]|\.\d)", text) is not None


@pytest.mark.requires("submit", "status", "logs")
def test_daemon_logs_name_a_job_just_run(backend: JobClient, stack: Stack,
                                         stack_logs: Callable[[], str]) -> None:
    """What failure reports attach are the daemons' own logs: a job run now must be named in
    lines that were not there before it (the scheduler's log, the API server's events), so an
    empty, unreadable or stale log, or one that only echoes what the client sent, fails."""
    before = set(stack_logs().splitlines())
    [handle] = submitted(backend.submit([JobSpec(script="true\n", name="logged")]))
    wait_for(backend, [handle], timeout=_timeout(stack))

    def new_lines() -> list[str]:
        return [line for line in stack_logs().splitlines() if line not in before]

    # Daemons write their logs a moment after the state changes: asked again soon, backing
    # off to every 0.5 s (a double's log is written within milliseconds).
    poll_until(new_lines, lambda new: any(_mentions(line, handle.job_id) for line in new),
               timeout=_timeout(stack), interval=0.5, first_interval=0.02,
               on_timeout=lambda new: f"no new line of the daemon logs names job "
                                      f"{handle.job_id}; new lines:\n" + "\n".join(new[-40:]))
