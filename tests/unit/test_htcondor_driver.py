"""The HTCondor driver end to end on the in-process schedd: the real driver code, a fake daemon."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.backends.htcondor.api import ScheddError
from pytest_stacks.backends.htcondor.driver import (
    NEW_LEAVE_IN_QUEUE,
    OLD_LEAVE_IN_QUEUE,
    HTCondorClient,
)
from pytest_stacks.backends.htcondor.fake import FakeSchedd
from pytest_stacks.backends.htcondor.translate import describe_job
from pytest_stacks.contract import JobHandle, JobSpec, JobState, submitted, wait_for
from pytest_stacks.errors import BackendCallError

INTERVAL = 0.03
REMOVED_LINGER = 0.02


@pytest.fixture
def make_client(tmp_path: Path) -> Iterator[Any]:
    schedds: list[FakeSchedd] = []

    def make(client_version: str = "25.14.1", **options: str) -> HTCondorClient:
        schedd = FakeSchedd("23.9.6", client_version=client_version,
                            periodic_expr_interval=INTERVAL,
                            removed_linger=REMOVED_LINGER)
        schedds.append(schedd)
        client = HTCondorClient(schedd, "fake-htcondor", tmp_path / "run")
        return client.with_options(**options) if options else client

    yield make
    for schedd in schedds:
        schedd.close()


@pytest.fixture
def client(make_client: Any) -> HTCondorClient:
    return make_client()


def _done(client: HTCondorClient, specs: list[JobSpec]) -> list[JobHandle]:
    handles = submitted(client.submit(specs))
    wait_for(client, handles, timeout=10, poll=0.01)
    return handles


def _past_evaluation() -> None:
    time.sleep(INTERVAL * 3)


def test_versions(client: HTCondorClient) -> None:
    assert client.versions() == {"daemon": "23.9.6", "client": "25.14.1"}


def test_inputs_and_outputs_byte_for_byte(client: HTCondorClient, tmp_path: Path) -> None:
    payload = os.urandom(2048) + b"\x00\r\n"
    spec = JobSpec(script="cp input.bin copy.bin\nprintf '\\x01\\xff' > tail.bin\n",
                   inputs={"input.bin": payload}, outputs=("copy.bin", "tail.bin"))
    [handle] = _done(client, [spec])
    [result] = client.fetch_outputs([handle], tmp_path / "dest")
    assert result.ok, result.error
    assert set(result.files) == {"copy.bin", "tail.bin"}
    assert result.files["copy.bin"] == tmp_path / "dest" / handle.job_id / "copy.bin"
    assert result.files["copy.bin"].read_bytes() == payload
    assert result.files["tail.bin"].read_bytes() == b"\x01\xff"


def test_args_and_env_survive_quoting(client: HTCondorClient, tmp_path: Path) -> None:
    odd = ["a b", "it's", 'say "hi"', "$(ProcId)", "$HOME"]
    env = {"PLAIN": "x y'z\"", "DOLLAR": "$(Cluster) $x", "LINES": "one\ntwo"}
    script = ('for a in "$@"; do printf "%s|" "$a"; done > args.txt\n'
              'printf "%s|%s|%s" "$PLAIN" "$DOLLAR" "$LINES" > env.txt\n')
    [handle] = _done(client, [JobSpec(script=script, args=tuple(odd), env=env,
                                      outputs=("args.txt", "env.txt"))])
    [result] = client.fetch_outputs([handle], tmp_path)
    assert result.ok, result.error
    assert result.files["args.txt"].read_text() == "".join(f"{a}|" for a in odd)
    assert result.files["env.txt"].read_text() == "x y'z\"|$(Cluster) $x|one\ntwo"


def test_exit_3_is_failed_with_its_code(client: HTCondorClient) -> None:
    handles = _done(client, [JobSpec(script="exit 3\n"), JobSpec(script="true\n")])
    failed, ok = client.status(handles)
    assert (failed.state, failed.exit_code, failed.native_state) == (
        JobState.FAILED, 3, "4 (Completed)")
    assert (ok.state, ok.exit_code) == (JobState.COMPLETED, 0)


def test_repeatable_default_fetches_twice(client: HTCondorClient, tmp_path: Path) -> None:
    assert client.output_retrieval == "repeatable"
    [handle] = _done(client, [JobSpec(script="echo once > out.txt\n", outputs=("out.txt",))])
    [first] = client.fetch_outputs([handle], tmp_path / "1")
    _past_evaluation()
    [second] = client.fetch_outputs([handle], tmp_path / "2")
    assert first.ok and second.ok, (first.error, second.error)
    assert second.files["out.txt"].read_bytes() == first.files["out.txt"].read_bytes() == b"once\n"
    assert client.in_queue([handle]) == [True]
    [ad] = client.schedd.query(f"ClusterId == {handle.job_id.split('.')[0]}",
                               ["LeaveJobInQueue"])
    assert ad["LeaveJobInQueue"] == OLD_LEAVE_IN_QUEUE.replace("=?= UNDEFINED", "is undefined")


def test_one_shot_second_fetch_is_a_per_job_error(make_client: Any, tmp_path: Path) -> None:
    client = make_client(output_retrieval="one-shot")
    [handle] = _done(client, [JobSpec(script="echo once > out.txt\n", outputs=("out.txt",))])
    [ad] = client.schedd.query(f"ClusterId == {handle.job_id.split('.')[0]}",
                               ["LeaveJobInQueue"])
    assert ad["LeaveJobInQueue"] == NEW_LEAVE_IN_QUEUE
    [first] = client.fetch_outputs([handle], tmp_path / "1")
    assert first.ok, first.error
    client.await_housekeeping(timeout=10)  # the schedd's pass that lets the job leave
    assert client.in_queue([handle]) == [False]
    [second] = client.fetch_outputs([handle], tmp_path / "2")
    assert not second.ok and "one-shot" in second.error and "25.8.2" in second.error
    assert not (tmp_path / "2").exists()
    [status] = client.status([handle])
    assert status.state is JobState.COMPLETED  # read from history


def test_housekeeping_returns_after_the_schedds_own_pass(make_client: Any) -> None:
    """The witness leaves by the schedd's periodic evaluation, never by our hand."""
    client = make_client()
    schedd = client.schedd
    evaluations = []
    evaluate = schedd._evaluate_periodic
    schedd._evaluate_periodic = lambda: (evaluations.append(1), evaluate())[1]
    client.await_housekeeping(timeout=10)
    assert evaluations, "returned before the schedd ran a periodic evaluation"
    witness_only = "JobBatchName == \"pytest-stacks-witness\""
    wanted = ["JobStatus", "RemoveReason", "NumJobStarts"]
    [witness] = schedd.query(witness_only, wanted) or schedd.history(witness_only, wanted)
    assert witness["JobStatus"] == 3
    assert witness["NumJobStarts"] == 0, "the witness ran: no slot may match it"
    assert "PeriodicRemove" in witness["RemoveReason"]
    assert not list((client._job_root).glob("witness-*")), "the witness's files were left"


def test_a_spooled_submit_cannot_ask_for_hold(client: HTCondorClient, tmp_path: Path) -> None:
    """As the 25.14.1 bindings refuse it (seen here): `hold = true` with spooling is a submit
    error."""
    description = describe_job(JobSpec(script="true\n"), tmp_path / "job", None)
    with pytest.raises(ScheddError, match="Cannot set hold to 'true' when using -remote or "
                                          "-spool"):
        client.schedd.submit({**description, "hold": "true"}, spool=True)


def test_housekeeping_times_out_and_leaves_no_witness(tmp_path: Path) -> None:
    schedd = FakeSchedd("23.9.6", periodic_expr_interval=3600, removed_linger=0)
    try:
        client = HTCondorClient(schedd, "fake-htcondor", tmp_path / "run")
        with pytest.raises(TimeoutError, match="no periodic evaluation within"):
            client.await_housekeeping(timeout=0.3)
        [ad] = schedd.query("true", ["JobStatus", "RemoveReason"]) or [{"JobStatus": 3}]
        assert ad["JobStatus"] == 3, "the witness was left in the queue, not removed"
    finally:
        schedd.close()


def test_one_shot_option_with_an_older_client_stays_repeatable(make_client: Any,
                                                                tmp_path: Path) -> None:
    client = make_client("25.0.3", output_retrieval="one-shot")
    [handle] = _done(client, [JobSpec(script="echo once > out.txt\n", outputs=("out.txt",))])
    [first] = client.fetch_outputs([handle], tmp_path / "1")
    _past_evaluation()
    [second] = client.fetch_outputs([handle], tmp_path / "2")
    assert first.ok and second.ok, (first.error, second.error)


def test_silent_empty_retrieval_is_caught(client: HTCondorClient, tmp_path: Path) -> None:
    """A retrieve that raises nothing and writes nothing must not pass for success."""
    [handle] = _done(client, [JobSpec(script="echo x > out.txt\n", outputs=("out.txt",))])

    class Silent:
        def __getattr__(self, name: str) -> Any:
            return getattr(client.schedd, name)

        def retrieve(self, job_id: str) -> None:
            return None

    silent = HTCondorClient(Silent(), "fake-htcondor", tmp_path / "run2")
    silent._shared = client._shared
    [result] = silent.fetch_outputs([handle], tmp_path / "dest")
    assert not result.ok and "did not arrive" in result.error and "out.txt" in result.error


def test_missing_declared_output_holds_the_job(client: HTCondorClient, tmp_path: Path) -> None:
    [handle] = submitted(client.submit([JobSpec(script="true\n", outputs=("never.txt",))]))
    [status] = wait_for(client, [handle], until=frozenset({JobState.HELD}), timeout=10,
                        poll=0.01)
    assert "never.txt" in status.reason and status.native_state == "5 (Held)"
    [result] = client.fetch_outputs([handle], tmp_path)
    assert not result.ok and "held" in result.error


def test_kill_and_unknown_ids(client: HTCondorClient) -> None:
    [handle] = submitted(client.submit([JobSpec(script="sleep 30\n")]))
    wait_for(client, [handle], until=frozenset({JobState.RUNNING}), timeout=10, poll=0.01)
    ghost, malformed = JobHandle("fake-htcondor", "4242.0"), JobHandle("fake-htcondor", "42")
    killed = client.kill([handle, ghost, malformed])
    assert killed[0].ok and not killed[1].ok and not killed[2].ok
    [status] = wait_for(client, [handle], timeout=10, poll=0.01)
    assert status.state is JobState.CANCELLED
    time.sleep(REMOVED_LINGER)
    assert client.in_queue([handle]) == [False]
    states = [s.state for s in client.status([handle, ghost, malformed])]
    assert states == [JobState.CANCELLED, JobState.UNKNOWN, JobState.UNKNOWN]


def test_purge(client: HTCondorClient, tmp_path: Path) -> None:
    [done] = _done(client, [JobSpec(script="echo x > out.txt\n", outputs=("out.txt",))])
    [running] = submitted(client.submit([JobSpec(script="sleep 30\n")]))
    wait_for(client, [running], until=frozenset({JobState.RUNNING}), timeout=10, poll=0.01)
    ghost = JobHandle("fake-htcondor", "4242.0")
    purged = client.purge([done, running, ghost])
    assert purged[0].ok, purged[0].error
    assert "kill it first" in purged[1].error and "unknown" in purged[2].error
    [after] = client.fetch_outputs([done], tmp_path)
    assert not after.ok and "purged" in after.error
    _past_evaluation()
    [status] = client.status([done])
    assert status.state.is_terminal or status.state is JobState.UNKNOWN
    client.kill([running])


def test_per_job_submit_errors(client: HTCondorClient) -> None:
    results = client.submit([JobSpec(script="true\n", inputs={"../escape": b"x"}),
                             JobSpec(script="true\n")])
    assert not results[0].ok and "plain name" in results[0].error
    assert results[1].ok


def test_whole_call_failure_is_backend_call_error(make_client: Any) -> None:
    client = make_client()
    client.schedd.close()
    with pytest.raises(BackendCallError):
        client.status([JobHandle("fake-htcondor", "1.0")])


def test_describe_jobs_and_options(client: HTCondorClient) -> None:
    [handle] = _done(client, [JobSpec(script="echo hello-stdout\n")])
    text = client.describe_jobs([handle, JobHandle("fake-htcondor", "4242.0")])
    assert "JobStatus = 4" in text and "not in the queue or history" in text
    with pytest.raises(ValueError, match="output_retrieval"):
        client.with_options(output_retrieval="twice")


# ---------------------------------------------------------------- the compose adapter


class _StubTransport:
    """Answers the adapter's commands as the 23.9.6 container does (OBSERVED.md)."""

    def __init__(self, ready_after: int = 0) -> None:
        self.calls: list[tuple[str, ...]] = []
        self.ready_after = ready_after

    def run(self, argv: Any, *, user: str | None = None, timeout: float = 60.0) -> Any:
        from pytest_stacks.transports import CommandResult

        argv = tuple(argv)
        self.calls.append(argv)
        if argv[0] == "condor_version":
            return CommandResult(argv, 0, "$CondorVersion: 23.9.6 2026-07-12 PackageID: "
                                          "23.9.6+dfsg-2.1+b10 $\n$CondorPlatform: X86_64 $\n", "")
        if argv[0] == "condor_token_create":
            return CommandResult(argv, 0, "eyJhbGciOiJIUzI1NiJ9.secret.sig\n", "")
        if argv[0] == "condor_who":  # exit 0 whether or not the condition held
            ready = len([c for c in self.calls if c[0] == "condor_who"]) > self.ready_after
            out = 'IsReady = true\nSTARTD_State = "Ready"\n' if ready else \
                'IsReady = true\nSTARTD = "Hold"\n'
            return CommandResult(argv, 0, out, "")
        return CommandResult(argv, 0, "===== /var/log/condor/SchedLog\nline\n", "")


def test_adapter_prepare_ready_version_and_logs(tmp_path: Path) -> None:
    import stat

    from pytest_stacks.backends.htcondor.adapter import (
        HTCondorComposeAdapter,
        is_ready,
        observed_version,
    )
    from pytest_stacks.manifest import Stack

    stack = Stack(name="htc", backend="htcondor", version="23.9.6", provider="compose",
                  transport="bindings", capabilities=frozenset(), configuration="single-node",
                  lanes=("pr",), role="anchor")
    adapter = HTCondorComposeAdapter()
    with pytest.raises(TimeoutError, match="not ready"):
        adapter.wait_ready(_StubTransport(ready_after=99), timeout=0.05)  # type: ignore[arg-type]
    transport = _StubTransport(ready_after=0)
    adapter.wait_ready(transport, timeout=10)  # type: ignore[arg-type]
    assert [c[0] for c in transport.calls] == ["condor_who"]
    assert not is_ready("") and not is_ready('IsReady = true\nSTARTD = "Hold"')
    assert observed_version(transport) == "23.9.6"  # type: ignore[arg-type]
    info = adapter.prepare(stack, transport, tmp_path, {"CONDOR_PORT": 40123})  # type: ignore[arg-type]
    assert info["collector"] == "127.0.0.1:40123"
    token_dir = Path(info["token_dir"])
    assert token_dir == tmp_path / "tokens" / "htc"
    assert ("condor_token_create", "-identity", "submitter@pytest-stacks.test") in transport.calls
    [token] = list(token_dir.iterdir())
    assert stat.S_IMODE(token_dir.stat().st_mode) == 0o700
    assert stat.S_IMODE(token.stat().st_mode) == 0o600
    assert "SchedLog" in adapter.daemon_logs(transport)  # type: ignore[arg-type]
