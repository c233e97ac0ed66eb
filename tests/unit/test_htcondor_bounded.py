"""Every HTCondor bindings call has a deadline (issue 60): the bindings hold the GIL for a whole
call and wait 20 s to forever on a schedd that went away, so they run in a worker process that
is killed when a call runs out of time, and every later call on that schedd fails at once."""

from __future__ import annotations

import json
import socket
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_stacks.backends.htcondor import bindings_worker
from pytest_stacks.backends.htcondor.api import ScheddError
from pytest_stacks.backends.htcondor.bindings import BindingsSchedd
from pytest_stacks.backends.htcondor.bounded import BoundedCalls, WorkerError
from pytest_stacks.backends.htcondor.outages import WORDS
from pytest_stacks.errors import BackendCallError

#: A worker that reads its request and never answers: a call into a schedd that went away.
HANGS = (sys.executable, "-c", "import sys, time; sys.stdin.readline(); time.sleep(120)")


def _schedd(calls: BoundedCalls) -> BindingsSchedd:
    return BindingsSchedd(calls, {"CondorVersion": "$CondorVersion: 25.0.0 $"}, "25.14.1")


def test_a_call_that_never_answers_ends_at_its_deadline_and_breaks_the_schedd() -> None:
    calls = BoundedCalls(argv=HANGS, deadline=1.0)
    schedd = _schedd(calls)
    with pytest.raises(ScheddError) as first:  # the worker sleeps 120 s: only the deadline
        schedd.query("true", ["JobStatus"])      # can end the call with these words
    assert str(first.value).startswith("query: the schedd did not answer within 1 s")
    reading = WORDS.read(str(first.value))
    assert (reading.meaning, reading.fault) == ("gone", "schedd unreachable")
    # The worker is killed, and no later call waits again: the rest of the tests end at once.
    assert calls.broken and calls._proc is None  # killed: nothing left to wait on
    with pytest.raises(ScheddError, match="did not answer within 1 s"):
        schedd.submit({"executable": "/bin/true"})
    assert calls._proc is None, "a later call never starts a worker to wait on"


def test_a_worker_that_dies_mid_call_is_said_and_breaks_the_schedd() -> None:
    calls = BoundedCalls(argv=(sys.executable, "-c", "import sys; sys.stdin.readline()"))
    with pytest.raises(WorkerError, match=r"the bindings worker exited \(status 0\)") as died:
        calls.call("query", constraint="true", projection=[])
    assert died.value.broken and WORDS.read(str(died.value)).meaning == "gone"


def test_an_answer_within_the_deadline_is_returned_and_an_error_is_not_broken() -> None:
    calls = BoundedCalls(deadline=10.0)
    try:
        with pytest.raises(WorkerError) as refused:
            calls.call("no_such_call")
        assert not refused.value.broken and "no_such_call" in str(refused.value)
        closed = socket.socket()
        closed.bind(("127.0.0.1", 0))
        port = closed.getsockname()[1]
        closed.close()  # nothing listens there: refused at once, answered well in time
        found = calls.call("connect", collector=f"127.0.0.1:{port}", token_dir=".")
        assert set(found) & {"unreachable", "missing"}, found
    finally:
        calls.close()


def test_the_worker_answers_each_request_line_in_json() -> None:
    answers: list[str] = []
    bindings_worker.serve(['{"op": "spool", "args": {"cluster": 7}}\n', "\n"], answers.append)
    [reply] = [json.loads(a) for a in answers]
    assert set(reply) == {"error", "type"}, "a call on no schedd is an error, not a crash"


@pytest.fixture
def silent_collector() -> Iterator[str]:
    """A TCP peer that accepts every connection and never says a word: a collector (or a
    schedd) whose host went away mid-conversation, or whose process is frozen."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    held: list[socket.socket] = []

    def accept() -> None:
        while True:
            try:
                held.append(server.accept()[0])
            except OSError:
                return

    threading.Thread(target=accept, daemon=True).start()
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()
    for conn in held:
        conn.close()


def test_the_real_bindings_hanging_on_a_silent_collector_end_at_the_deadline(
        silent_collector: str, tmp_path: Path) -> None:
    pytest.importorskip("htcondor2")
    started = time.monotonic()
    with pytest.raises(BackendCallError) as gone:
        BindingsSchedd.connect(silent_collector, tmp_path, first_deadline=6.0)
    took = time.monotonic() - started
    # The bindings alone would wait 60 s (QUERY_TIMEOUT's default), the GIL held throughout.
    assert took < 10, f"the call took {took:.1f} s"
    assert f"cannot reach the collector at {silent_collector}" in str(gone.value)
    assert "did not answer within 6 s" in str(gone.value)
