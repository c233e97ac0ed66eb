"""The HTCondor double on its own: spooling, job states, the one-shot rule of 25.8.2+ clients."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.backends.htcondor.api import ScheddError
from pytest_stacks.backends.htcondor.driver import NEW_LEAVE_IN_QUEUE, OLD_LEAVE_IN_QUEUE
from pytest_stacks.backends.htcondor.fake import Expr, FakeSchedd

INTERVAL = 0.03
REMOVED_LINGER = 0.02
#: How a job ad shows the expressions (the ClassAd library prints them back normalised).
NEW_AS_PRINTED = NEW_LEAVE_IN_QUEUE
OLD_AS_PRINTED = OLD_LEAVE_IN_QUEUE.replace("=?= UNDEFINED", "is undefined")


@pytest.fixture
def make_schedd() -> Iterator[Any]:
    made: list[FakeSchedd] = []

    def make(client_version: str = "25.14.1", interval: float = INTERVAL) -> FakeSchedd:
        schedd = FakeSchedd("23.9.6", client_version=client_version,
                            periodic_expr_interval=interval,
                            removed_linger=REMOVED_LINGER)
        made.append(schedd)
        return schedd

    yield make
    for schedd in made:
        schedd.close()


def _job(tmp_path: Path, script: str, *, outputs: str | None = "out.txt",
         extra: dict[str, str] | None = None) -> tuple[dict[str, str], Path]:
    job = tmp_path / f"job{len(list(tmp_path.iterdir()))}"
    iwd = job / "iwd"
    iwd.mkdir(parents=True)
    exe = job / "job.sh"
    exe.write_text("#!/bin/bash\n" + script)
    exe.chmod(0o755)
    (job / "in.txt").write_bytes(b"hello\n")
    desc = {"executable": str(exe), "initialdir": str(iwd), "output": "job.out",
            "error": "job.err", "should_transfer_files": "YES",
            "when_to_transfer_output": "ON_EXIT", "transfer_input_files": str(job / "in.txt")}
    if outputs is not None:
        desc["transfer_output_files"] = outputs
    desc.update(extra or {})
    return desc, iwd


def _run(schedd: FakeSchedd, desc: dict[str, str]) -> str:
    submitted = schedd.submit(desc, spool=True, count=1)
    schedd.spool(submitted)
    return submitted.job_ids[0]


def _ad(schedd: FakeSchedd, job_id: str) -> dict[str, Any] | None:
    cluster, proc = job_id.split(".")
    ads = schedd.query(f"ClusterId == {cluster} && ProcId == {proc}", [])
    return ads[0] if ads else None


def _wait_status(schedd: FakeSchedd, job_id: str, status: int, timeout: float = 5) -> dict:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ad = _ad(schedd, job_id)
        if ad is not None and ad["JobStatus"] == status:
            return ad
        time.sleep(0.01)
    raise AssertionError(f"{job_id} never reached JobStatus {status}: {_ad(schedd, job_id)}")


def _history(schedd: FakeSchedd, job_id: str) -> list[dict[str, Any]]:
    cluster, proc = job_id.split(".")
    return schedd.history(f"ClusterId == {cluster} && ProcId == {proc}", [], match=-1)


# ---------------------------------------------------------------- spooled submit


def test_spooled_submit_is_held_until_the_inputs_are_spooled(make_schedd, tmp_path) -> None:
    schedd = make_schedd()
    desc, iwd = _job(tmp_path, "tr a-z A-Z < in.txt > out.txt\n")
    submitted = schedd.submit(desc, spool=True, count=1)
    [held] = schedd.query(f"ClusterId == {submitted.cluster}", ["JobStatus", "HoldReasonCode"])
    assert held.pop("ServerTime") >= int(time.time()) - 60  # the schedd's clock, in every ad
    assert held == {"JobStatus": 5, "HoldReasonCode": 16}
    schedd.spool(submitted)
    ad = _wait_status(schedd, submitted.job_ids[0], 4)
    assert ad["ExitCode"] == 0 and ad["StageInFinish"] >= ad["QDate"]
    assert list(iwd.iterdir()) == []  # nothing comes back before a retrieval


def test_executable_is_resolved_against_the_clients_working_directory(
        make_schedd, tmp_path, monkeypatch) -> None:
    schedd = make_schedd()
    desc, iwd = _job(tmp_path, "true\n")
    desc["executable"] = "job.sh"  # sits next to iwd, not in it, and not in the cwd
    monkeypatch.chdir(iwd)
    submitted = schedd.submit(desc, spool=True)  # accepted, as by the real schedd ...
    with pytest.raises(ScheddError, match=f"reading from file {iwd / 'job.sh'}"):
        schedd.spool(submitted)  # ... but the upload fails and the job stays held
    held = _ad(schedd, submitted.job_ids[0])
    assert held is not None and held["HoldReasonCode"] == 16


def test_missing_input_fails_the_spool(make_schedd, tmp_path) -> None:
    schedd = make_schedd()
    desc, _ = _job(tmp_path, "true\n", extra={"transfer_input_files": "/nonexistent/x"})
    submitted = schedd.submit(desc, spool=True)
    with pytest.raises(ScheddError, match="spool"):
        schedd.spool(submitted)


# ---------------------------------------------------------------- one-shot vs repeatable


def test_new_client_writes_the_one_shot_expression_and_the_job_leaves_after_retrieval(
        make_schedd, tmp_path) -> None:
    schedd = make_schedd("25.14.1")
    desc, iwd = _job(tmp_path, "tr a-z A-Z < in.txt > out.txt\n")
    job_id = _run(schedd, desc)
    ad = _wait_status(schedd, job_id, 4)
    assert ad["LeaveJobInQueue"] == NEW_AS_PRINTED
    schedd.run_periodic()
    assert _ad(schedd, job_id) is not None, "a completed, unretrieved job must stay"
    schedd.retrieve(job_id)
    assert (iwd / "out.txt").read_bytes() == b"HELLO\n"
    assert (iwd / "job.out").exists() and (iwd / "job.err").exists()
    schedd.run_periodic()
    assert _ad(schedd, job_id) is None, "one-shot: the job leaves at the next evaluation"
    [hist] = _history(schedd, job_id)
    assert hist["JobStatus"] == 4 and hist["ExitCode"] == 0 and "StageOutFinish" in hist
    for path in iwd.iterdir():
        path.unlink()
    schedd.retrieve(job_id)  # raises nothing ...
    assert list(iwd.iterdir()) == []  # ... and writes nothing


def test_leaving_is_driven_by_elapsed_time(make_schedd, tmp_path) -> None:
    schedd = make_schedd("25.14.1", interval=INTERVAL)
    desc, _ = _job(tmp_path, "echo x > out.txt\n")
    job_id = _run(schedd, desc)
    _wait_status(schedd, job_id, 4)
    schedd.retrieve(job_id)
    time.sleep(INTERVAL * 2.5)
    assert _ad(schedd, job_id) is None
    assert _history(schedd, job_id)


@pytest.mark.parametrize("client", ["25.0.3", "25.8.1", "23.9.6"])
def test_older_clients_keep_completed_spooled_jobs(make_schedd, tmp_path, client) -> None:
    schedd = make_schedd(client)
    desc, iwd = _job(tmp_path, "tr a-z A-Z < in.txt > out.txt\n")
    job_id = _run(schedd, desc)
    ad = _wait_status(schedd, job_id, 4)
    assert ad["LeaveJobInQueue"] == OLD_AS_PRINTED
    schedd.retrieve(job_id)
    first = (iwd / "out.txt").read_bytes()
    (iwd / "out.txt").unlink()
    schedd.run_periodic()
    assert _ad(schedd, job_id) is not None
    schedd.retrieve(job_id)
    assert (iwd / "out.txt").read_bytes() == first == b"HELLO\n"


def test_leave_in_queue_override_restores_repeatable_retrieval(make_schedd, tmp_path) -> None:
    schedd = make_schedd("25.14.1")
    desc, iwd = _job(tmp_path, "echo kept > out.txt\n",
                     extra={"leave_in_queue": OLD_LEAVE_IN_QUEUE})
    job_id = _run(schedd, desc)
    assert _wait_status(schedd, job_id, 4)["LeaveJobInQueue"] == OLD_AS_PRINTED
    for _ in range(2):
        (iwd / "out.txt").unlink(missing_ok=True)
        schedd.retrieve(job_id)
        schedd.run_periodic()
        assert (iwd / "out.txt").read_bytes() == b"kept\n"
    assert _ad(schedd, job_id) is not None


def test_false_leave_in_queue_sends_the_job_to_history_on_completion(make_schedd,
                                                                     tmp_path) -> None:
    schedd = make_schedd()
    desc, _ = _job(tmp_path, "echo x > out.txt\n", extra={"leave_in_queue": "false"})
    job_id = _run(schedd, desc)
    deadline = time.monotonic() + 5
    while not _history(schedd, job_id) and time.monotonic() < deadline:
        time.sleep(0.01)
    [hist] = _history(schedd, job_id)
    assert hist["JobStatus"] == 4 and _ad(schedd, job_id) is None


# ---------------------------------------------------------------- states, unknown ids, remove


def test_exit_code_and_missing_output(make_schedd, tmp_path) -> None:
    schedd = make_schedd()
    failing, _ = _job(tmp_path, "echo x > out.txt\nexit 3\n")
    missing, _ = _job(tmp_path, "true\n", outputs="never.txt")
    failing_id, missing_id = _run(schedd, failing), _run(schedd, missing)
    assert _wait_status(schedd, failing_id, 4)["ExitCode"] == 3
    held = _wait_status(schedd, missing_id, 5)
    assert held["HoldReasonCode"] == 12 and "never.txt" in held["HoldReason"]


def test_unknown_ids_are_absent_not_errors(make_schedd) -> None:
    schedd = make_schedd()
    assert schedd.query("ClusterId == 987654", []) == []
    assert schedd.history("ClusterId == 987654", [], match=1) == []
    schedd.retrieve("987654.0")
    assert schedd.act("remove", ["987654.0"])["TotalNotFound"] == 1


def test_remove_a_running_job(make_schedd, tmp_path) -> None:
    schedd = make_schedd()
    desc, _ = _job(tmp_path, "sleep 30\n", outputs=None)
    job_id = _run(schedd, desc)
    _wait_status(schedd, job_id, 2)
    assert schedd.act("remove", [job_id], "test")["TotalSuccess"] == 1
    removed = _ad(schedd, job_id)
    assert removed is not None and removed["JobStatus"] == 3
    time.sleep(REMOVED_LINGER)
    [hist] = _history(schedd, job_id)
    assert hist["JobStatus"] == 3 and hist["RemoveReason"] == "test (by user submitter)"
    # As recorded on 23.9.6 (tests/parity): no trace of the starter's SIGTERM in the ad.
    assert hist["ExitBySignal"] is False and "ExitSignal" not in hist and "ExitCode" not in hist
    assert schedd.act("remove", [job_id])["TotalNotFound"] == 1


def test_removing_a_kept_completed_job_records_it_as_removed(make_schedd, tmp_path) -> None:
    """As seen on 23.9.6: Remove rewrites the final state; LeaveJobInQueue = false does not."""
    schedd = make_schedd("25.0.3")
    removed, _ = _job(tmp_path, "echo x > out.txt\n")
    released, _ = _job(tmp_path, "echo x > out.txt\n")
    removed_id, released_id = _run(schedd, removed), _run(schedd, released)
    _wait_status(schedd, removed_id, 4)
    _wait_status(schedd, released_id, 4)
    assert schedd.act("remove", [removed_id])["TotalSuccess"] == 1
    assert schedd.edit([released_id], "LeaveJobInQueue", "false") == 1
    with pytest.raises(ScheddError, match="permission"):
        schedd.edit([released_id], "JobStatus", "4")
    time.sleep(REMOVED_LINGER)
    schedd.run_periodic()
    [gone_removed] = _history(schedd, removed_id)
    [gone_released] = _history(schedd, released_id)
    assert (gone_removed["JobStatus"], gone_removed["LastJobStatus"]) == (3, 4)
    assert gone_removed["ExitCode"] == 0
    assert gone_released["JobStatus"] == 4 and gone_released["ExitCode"] == 0
    assert gone_released["LeaveJobInQueue"] is False


def test_closed_schedd_fails_whole_calls(make_schedd) -> None:
    schedd = make_schedd()
    schedd.close()
    with pytest.raises(ScheddError):
        schedd.query("true", [])
    assert "SchedLog" in schedd.daemon_log()


# ---------------------------------------------------------------- the ClassAd subset


EXPRESSIONS = [
    NEW_LEAVE_IN_QUEUE, OLD_LEAVE_IN_QUEUE, "StageOutFinish ?: 0", "Missing ?: 7",
    "Missing == 3", "Missing =?= UNDEFINED", "Missing && false", "Missing || true",
    "Missing && true", "!Missing", "JobStatus == 4 && ExitCode != 0", "5 / 2", "-3 + 10 * 2",
    '"abc" == "ABC"', '"abc" =?= "ABC"', "JobStatus > 3 ? 10 : 20", "1 =!= 1.0",
    "(ClusterId == 3 && ProcId == 0) || (ClusterId == 4 && ProcId == 0)",
]
AD = {"JobStatus": 4, "ExitCode": 3, "CompletionDate": 1_700_000_000,
      "EnteredCurrentStatus": 1_700_000_000, "StageOutFinish": 1_700_000_000, "ClusterId": 4,
      "ProcId": 0}


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_evaluator_agrees_with_classad(text: str) -> None:
    classad2 = pytest.importorskip("classad2")
    now = 1_700_000_100
    ad = classad2.ClassAd()
    for key, value in AD.items():
        ad[key] = value
    ad["_probe"] = classad2.ExprTree(text.replace("time()", str(now)))
    expected = ad.eval("_probe")
    got = Expr(text).eval(AD, now)
    if type(expected).__name__ == "Value":
        assert repr(got) == expected.name.upper()
    else:
        assert got == expected and type(got) is type(expected), (got, expected)


@pytest.mark.parametrize("text", [NEW_LEAVE_IN_QUEUE, OLD_LEAVE_IN_QUEUE, "A =!= TRUE",
                                  "(A)  &&   B==1", "x ?: 0", "ifThenElse(a,b , c)"])
def test_expressions_print_back_as_classad_does(text: str) -> None:
    classad2 = pytest.importorskip("classad2")
    assert str(Expr(text)) == str(classad2.ExprTree(text))


def test_a_job_not_spooled_is_idle_at_once_with_its_files_in(make_schedd: Any,
                                                             tmp_path: Path) -> None:
    """As the real schedd: no spooling hold; the sandbox has the client's files."""
    schedd = make_schedd()
    desc, _ = _job(tmp_path, "true\n", extra={"requirements": "false"})
    [job_id] = schedd.submit(desc, spool=False, count=1).job_ids
    [ad] = schedd.query(f"ClusterId == {job_id.split('.')[0]}", ["JobStatus", "HoldReason"])
    assert ad["JobStatus"] == 1, ad
