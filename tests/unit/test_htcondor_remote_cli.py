"""The remote-CLI schedd (HTCondor's command-line tools on a login node) without a pool: its
parsers and submit files, and the commands it sends through a recording transport."""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest

from pytest_stacks.backends.htcondor.api import ScheddError
from pytest_stacks.backends.htcondor.driver import OLD_LEAVE_IN_QUEUE, HTCondorClient
from pytest_stacks.backends.htcondor.remote_cli import (
    RemoteCliSchedd,
    is_false,
    json_value,
    parse_json_ads,
    parse_terse,
    qedit_count,
    rm_totals,
    stage,
    submit_file,
)
from pytest_stacks.backends.htcondor.translate import describe_job
from pytest_stacks.contract import JobHandle, JobSpec, JobState
from pytest_stacks.transports import CommandResult
from pytest_stacks.transports.ssh import Hop, SshTransport

# ---------------------------------------------------------------- condor_q / condor_history JSON

# Trimmed from `condor_q -json` on the htcondor-pool stack (23.9.6); a backslash at a line's
# end only folds a long line here.
CONDOR_Q_JSON = r"""[
{
  "ClusterId": 1,
  "ExitBySignal": false,
  "ExitCode": 0,
  "HoldReason": null,
  "Iwd": "/var/spool/condor/1/0/cluster1.proc0.subproc0",
  "JobStatus": 4,
  "LeaveJobInQueue": "\/Expr(JobStatus == 4 && (CompletionDate is undefined || \
CompletionDate == 0 || ((time() - CompletionDate) < 864000)))\/",
  "ProcId": 0,
  "RemoteWallClockTime": 0.0,
  "Requirements": "\/Expr((TARGET.Arch == \"X86_64\") && (TARGET.HasFileTransfer))\/",
  "SUBMIT_Iwd": "/home/submitter/j1/iwd",
  "ToE": {
    "How": "OF_ITS_OWN_ACCORD",
    "ExitCode": 0
  }
}
]
""".replace("\\\n", "")


def test_condor_q_json_becomes_plain_ads() -> None:
    [ad] = parse_json_ads(CONDOR_Q_JSON)
    assert ad["ClusterId"] == 1 and ad["ProcId"] == 0 and ad["JobStatus"] == 4
    assert ad["ExitBySignal"] is False and ad["ExitCode"] == 0
    assert ad["HoldReason"] is None
    assert ad["RemoteWallClockTime"] == 0.0
    # Expressions come back as their text, as str(ExprTree) of the bindings.
    assert ad["LeaveJobInQueue"].startswith("JobStatus == 4 && (CompletionDate is undefined")
    assert ad["LeaveJobInQueue"].endswith("((time() - CompletionDate) < 864000))")
    assert ad["Requirements"] == '(TARGET.Arch == "X86_64") && (TARGET.HasFileTransfer)'
    assert ad["ToE"] == {"How": "OF_ITS_OWN_ACCORD", "ExitCode": 0}


@pytest.mark.parametrize("text", ["", "\n", "[\n]\n", "[]"])
def test_nothing_matched_is_no_ads(text: str) -> None:
    # condor_q prints nothing when nothing matches; condor_history prints "[\n]".
    assert parse_json_ads(text) == []


@pytest.mark.parametrize("text", ["Error: communication error", '{"ClusterId": 1}', "[1, 2]"])
def test_unreadable_output_is_a_schedd_error(text: str) -> None:
    with pytest.raises(ScheddError):
        parse_json_ads(text)


def test_json_values() -> None:
    assert json_value("/Expr(false)/") == "false"
    assert json_value("plain /Expr(x)/ inside") == "plain /Expr(x)/ inside"
    assert json_value(["/Expr(a)/", 1]) == ["a", 1]
    assert json_value({"k": "/Expr(b)/"}) == {"k": "b"}


@pytest.mark.parametrize("constraint,expected", [
    ("false", True), ("(false)", True), (" FALSE ", True),
    ("(ClusterId == 1 && ProcId == 0)", False), ("true", False)])
def test_false_constraints_are_never_sent(constraint: str, expected: bool) -> None:
    assert is_false(constraint) is expected


# ---------------------------------------------------------------- other tools' output


@pytest.mark.parametrize("text,expected", [
    ("1.0 - 1.0\n", (1, 0, 1)),
    ("12.0 - 12.4\n", (12, 0, 5)),
    ("Submitting job(s).\n7.3 - 7.3\n", (7, 3, 1)),
])
def test_terse_submit_output(text: str, expected: tuple[int, int, int]) -> None:
    assert parse_terse(text) == expected


@pytest.mark.parametrize("text", ["", "ERROR: Failed to connect to local queue manager",
                                  "3.0 - 4.0"])
def test_terse_output_without_a_range_is_an_error(text: str) -> None:
    with pytest.raises(ScheddError):
        parse_terse(text)


def test_rm_totals_and_qedit_count() -> None:
    assert rm_totals("Job 3.0 marked for removal\n", "Job 5.0 not found\n") == {
        "TotalSuccess": 1, "TotalNotFound": 1}
    assert rm_totals("All jobs in cluster 4 have been marked for removal\n", "") == {
        "TotalSuccess": 1, "TotalNotFound": 0}
    assert qedit_count('Set attribute "LeaveJobInQueue" for 2 matching jobs.\n') == 2
    assert qedit_count("") == 0


# ---------------------------------------------------------------- submit descriptions


def test_submit_file_writes_each_key_and_the_queue_line() -> None:
    text = submit_file({"executable": "/h/j/exe/job.sh",
                        "arguments": "\"'a b' 'it''s' '\"\"q\"\"'\"",
                        "leave_in_queue": OLD_LEAVE_IN_QUEUE}, count=2)
    assert text.splitlines() == [
        "executable = /h/j/exe/job.sh",
        "arguments = \"'a b' 'it''s' '\"\"q\"\"'\"",
        f"leave_in_queue = {OLD_LEAVE_IN_QUEUE}",
        "queue 2",
    ]


@pytest.mark.parametrize("description", [
    {"arguments": "a\nqueue 5"}, {"executable": "x\r"}, {"bad key": "x"}, {"queue": "1"},
    {"batch_name": " padded "}])
def test_what_a_submit_file_cannot_carry_is_refused(description: dict[str, str]) -> None:
    with pytest.raises(ValueError):
        submit_file(description)


def test_stage_rewrites_local_paths_to_the_job_folder(tmp_path: Path) -> None:
    spec = JobSpec(script="cat in.txt\n", inputs={"in.txt": b"x", "b.bin": b"\0"},
                   outputs=("out.txt",), args=("a b",), env={"V": "it's"})
    description = describe_job(spec, tmp_path / "job", OLD_LEAVE_IN_QUEUE)
    staged = stage(description, "/home/u/.pytest-stacks/htcondor/s/j1")
    remote = staged.description
    assert remote["executable"] == "/home/u/.pytest-stacks/htcondor/s/j1/exe/job.sh"
    assert remote["initialdir"] == "/home/u/.pytest-stacks/htcondor/s/j1/iwd"
    assert remote["transfer_input_files"] == ("/home/u/.pytest-stacks/htcondor/s/j1/inputs/in.txt,"
                                              "/home/u/.pytest-stacks/htcondor/s/j1/inputs/b.bin")
    # Everything else is the driver's description, untouched.
    for key in set(description) - {"executable", "initialdir", "transfer_input_files"}:
        assert remote[key] == description[key]
    assert staged.executable == {"job.sh": tmp_path / "job" / "job.sh"}
    assert staged.inputs == {"in.txt": tmp_path / "job" / "inputs" / "in.txt",
                             "b.bin": tmp_path / "job" / "inputs" / "b.bin"}
    assert staged.local_iwd == tmp_path / "job" / "iwd"
    assert str(tmp_path) not in submit_file(remote)


def test_stage_needs_an_absolute_remote_folder(tmp_path: Path) -> None:
    description = describe_job(JobSpec(script="true\n"), tmp_path / "job", None)
    with pytest.raises(ValueError):
        stage(description, "relative/folder")


# ---------------------------------------------------------------- commands, through a transport


class RecordingTransport:
    """Answers like the login node of the htcondor-pool stack, and records every call."""

    def __init__(self, answers: Mapping[str, CommandResult] | None = None) -> None:
        self.calls: list[tuple[tuple[str, ...], str | None]] = []
        self.put: dict[str, dict[str, bytes]] = {}
        self.remote: dict[str, dict[str, bytes]] = {}
        self.answers = dict(answers or {})

    def run(self, argv: Sequence[str], *, user: str | None = None,
            timeout: float = 60.0) -> CommandResult:
        argv = tuple(argv)
        self.calls.append((argv, user))
        out = ""
        if argv[:2] == ("sh", "-c"):
            out = "/home/submitter\n"
        elif argv[0] == "condor_submit":
            out = "41.0 - 41.0\n"
        elif argv[0] == "condor_transfer_data":
            self.remote.setdefault("iwd", {})["out.txt"] = b"\x00\xffdata\n"
        elif argv[0] == "find" and "-printf" in argv:
            out = "".join(f"{n}\0" for n in self.remote.get("iwd", {}))
        elif argv[0] in self.answers:
            return self.answers[argv[0]]
        return CommandResult(argv, 0, out, "")

    def put_files(self, directory: str, files: Mapping[str, bytes], *, user: str,
                  mode: int = 0o644) -> None:
        self.put[directory] = dict(files)

    def get_files(self, directory: str, names: Sequence[str]) -> dict[str, bytes]:
        return {n: self.remote["iwd"][n] for n in names if n in self.remote.get("iwd", {})}


def test_submit_copies_the_files_and_runs_condor_submit_spool(tmp_path: Path) -> None:
    transport = RecordingTransport()
    schedd = RemoteCliSchedd(transport, user="submitter")
    spec = JobSpec(script="echo $1\n", inputs={"in.txt": b"payload\n"}, outputs=("out.txt",),
                   args=("$HOME",))
    submitted = schedd.submit(describe_job(spec, tmp_path / "job", OLD_LEAVE_IN_QUEUE))
    assert submitted.job_ids == ["41.0"]
    assert all(user == "submitter" for _, user in transport.calls)
    [(argv, _)] = [c for c in transport.calls if c[0][0] == "condor_submit"]
    assert argv[:3] == ("condor_submit", "-spool", "-terse")
    job_dir = argv[3].rsplit("/exe/", 1)[0]
    assert job_dir.startswith("/home/submitter/.pytest-stacks/htcondor/")
    assert transport.put[f"{job_dir}/inputs"] == {"in.txt": b"payload\n"}
    files = transport.put[f"{job_dir}/exe"]
    assert files["job.sh"] == (tmp_path / "job" / "job.sh").read_bytes()
    text = files["job.sub"].decode()
    assert f"initialdir = {job_dir}/iwd\n" in text
    assert f"transfer_input_files = {job_dir}/inputs/in.txt\n" in text
    assert text.endswith("queue 1\n")
    assert str(tmp_path) not in text
    assert schedd.remote_iwd("41.0") == f"{job_dir}/iwd"
    # Spooled: the staged copies go, only the initialdir stays.
    assert transport.calls[-1][0] == ("rm", "-rf", "--", f"{job_dir}/exe", f"{job_dir}/inputs")


def test_a_submit_not_spooled_keeps_its_files_where_the_job_reads_them(tmp_path: Path) -> None:
    """The housekeeping witness is not spooled: plain condor_submit on the login node, and
    the staged files stay (a job that is not spooled reads them where they are)."""
    transport = RecordingTransport()
    schedd = RemoteCliSchedd(transport, user="submitter")
    schedd.submit(describe_job(JobSpec(script="true\n"), tmp_path / "job", None), spool=False)
    [(argv, _)] = [c for c in transport.calls if c[0][0] == "condor_submit"]
    assert argv[:2] == ("condor_submit", "-terse")
    assert not any(c[0][0] == "rm" for c in transport.calls)


def test_retrieve_empties_transfers_and_copies_back_byte_for_byte(tmp_path: Path) -> None:
    transport = RecordingTransport()
    schedd = RemoteCliSchedd(transport)
    schedd.submit(describe_job(JobSpec(script="true\n", outputs=("out.txt",)),
                               tmp_path / "job", None))
    transport.calls.clear()
    schedd.retrieve("41.0")
    commands = [argv[0] for argv, _ in transport.calls]
    assert commands == ["find", "condor_transfer_data", "find", "find"]
    assert "-delete" in transport.calls[0][0] and "-delete" in transport.calls[3][0]
    assert transport.calls[1][0] == ("condor_transfer_data", "41.0")
    assert (tmp_path / "job" / "iwd" / "out.txt").read_bytes() == b"\x00\xffdata\n"


def test_retrieve_of_a_job_it_did_not_submit_is_an_error() -> None:
    with pytest.raises(ScheddError, match="not submitted through this client"):
        RemoteCliSchedd(RecordingTransport()).retrieve("3.0")


def test_query_history_rm_and_qedit_commands() -> None:
    transport = RecordingTransport({
        "condor_q": CommandResult((), 0, CONDOR_Q_JSON, ""),
        "condor_history": CommandResult((), 0, "[\n]\n", ""),
        "condor_rm": CommandResult((), 0, "Job 1.0 marked for removal\n", "Job 2.0 not found\n"),
        "condor_qedit": CommandResult((), 0, 'Set attribute "X" for 1 matching jobs.\n', ""),
    })
    schedd = RemoteCliSchedd(transport)
    assert schedd.query("false") == [] and transport.calls == []
    [ad] = schedd.query("(ClusterId == 1 && ProcId == 0)", ["ClusterId", "JobStatus"])
    assert ad["JobStatus"] == 4
    assert transport.calls[-1][0] == ("condor_q", "-allusers", "-json", "-constraint",
                                      "(ClusterId == 1 && ProcId == 0)", "-attributes",
                                      "ClusterId,JobStatus")
    assert schedd.history("(ClusterId == 1 && ProcId == 0)", ["JobStatus"], match=1) == []
    assert list(transport.calls[-1][0][-2:]) == ["-match", "1"]
    totals = schedd.act("remove", ["1.0", "2.0", "bogus"], "pytest-stacks: kill")
    assert totals == {"TotalSuccess": 1, "TotalNotFound": 1}
    assert list(transport.calls[-1][0]) == ["condor_rm", "-reason", "pytest-stacks: kill",
                                            "1.0", "2.0"]
    assert schedd.edit(["1.0"], "LeaveJobInQueue", "false") == 1
    assert list(transport.calls[-1][0]) == ["condor_qedit", "-constraint",
                                            "(ClusterId == 1 && ProcId == 0)",
                                            "LeaveJobInQueue", "false"]


def test_a_failing_tool_is_a_schedd_error() -> None:
    transport = RecordingTransport({"condor_q": CommandResult(
        (), 1, "", "Error: communication error\nAUTHENTICATE:1003:Failed to authenticate")})
    with pytest.raises(ScheddError, match="condor_q exited 1: Error: communication error"):
        RemoteCliSchedd(transport).query("true")


class FlakySchedd(RecordingTransport):
    """A schedd that does not answer the first ``misses`` times it is asked."""

    def __init__(self, misses: int, stderr: str) -> None:
        super().__init__()
        self.misses, self.stderr = misses, stderr

    def run(self, argv: Sequence[str], *, user: str | None = None,
            timeout: float = 60.0) -> CommandResult:
        if argv[0] in ("condor_q", "condor_transfer_data") and self.misses > 0:
            self.misses -= 1
            self.calls.append((tuple(argv), user))
            return CommandResult(tuple(argv), 1, "", self.stderr)
        return super().run(argv, user=user, timeout=timeout)


NO_ANSWER = "-- Failed to fetch ads from: <172.18.0.3:9618> : schedd\nCEDAR:6001:Failed to connect"


def test_a_read_the_schedd_did_not_answer_is_asked_again(
        monkeypatch: pytest.MonkeyPatch) -> None:
    pauses: list[float] = []
    monkeypatch.setattr("pytest_stacks.cancellation.sleep", pauses.append)
    transport = FlakySchedd(2, NO_ANSWER)
    assert RemoteCliSchedd(transport).query("true") == []
    assert [c[0][0] for c in transport.calls] == ["condor_q"] * 3 and pauses == [1.0, 2.0]
    # ... and gives up after three more tries, saying how often it asked.
    transport = FlakySchedd(9, "Can't receive JobAdsArrayLen from the schedd")
    with pytest.raises(ScheddError, match=r"condor_q exited 1 \(asked 4 times\): Can't"):
        RemoteCliSchedd(transport).query("true")


def test_only_reads_are_asked_again_and_only_when_unanswered(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("pytest_stacks.cancellation.sleep",
                        lambda _: pytest.fail("slept"))
    refused = FlakySchedd(1, "AUTHENTICATE:1003:Failed to authenticate")
    with pytest.raises(ScheddError, match="Failed to authenticate"):
        RemoteCliSchedd(refused).query("true")
    unanswered = RecordingTransport({"condor_rm": CommandResult((), 1, "", NO_ANSWER)})
    with pytest.raises(ScheddError, match="condor_rm exited 1: -- Failed to fetch"):
        RemoteCliSchedd(unanswered).act("remove", ["1.0"])
    assert [c[0][0] for c in unanswered.calls] == ["condor_rm"]


def test_quoting_survives_the_ssh_command_line() -> None:
    """What the login shell runs: every word one argument, constraints and reasons intact."""
    ssh = SshTransport([Hop("127.0.0.1", 2222, "submitter")], Path("/k"), Path("/kh"))
    constraint = '(ClusterId == 1 && ProcId == 0) || Owner == "it\'s"'
    line = ssh.command_line(["condor_q", "-allusers", "-json", "-constraint", constraint],
                            "submitter", 60)
    assert shlex.split(line)[-1] == constraint
    line = ssh.command_line(["find", "/h/iwd", "-maxdepth", "1", "-type", "f", "-printf",
                             "%f\\0"], "submitter", 60)
    assert shlex.split(line)[-1] == "%f\\0"


# ---------------------------------------------------------------- the driver over it


def test_the_driver_runs_its_contract_over_the_remote_cli(tmp_path: Path) -> None:
    transport = RecordingTransport({"condor_q": CommandResult((), 0, CONDOR_Q_JSON.replace(
        '"ClusterId": 1', '"ClusterId": 41'), "")})
    client = HTCondorClient(RemoteCliSchedd(transport), "pool", tmp_path)
    [result] = client.submit([JobSpec(script="true\n", outputs=("out.txt",))])
    assert result.handle == JobHandle("pool", "41.0")
    [status] = client.status([result.handle])
    assert status.state is JobState.COMPLETED
    transport.remote["iwd"] = {".pytest-stacks.out": b""}  # the job's stdout file
    [out] = client.fetch_outputs([result.handle], tmp_path / "dest")
    assert out.ok, out.error
    assert out.files["out.txt"].read_bytes() == b"\x00\xffdata\n"
    # Purge releases the job in the schedd (LeaveJobInQueue = false).
    transport.answers["condor_qedit"] = CommandResult(
        (), 0, 'Set attribute "LeaveJobInQueue" for 1 matching jobs.\n', "")
    [purged] = client.purge([result.handle])
    assert purged.ok, purged.error
    assert transport.calls[-1][0][0] == "condor_qedit"


def test_a_refused_submit_leaves_no_staged_files(tmp_path: Path) -> None:
    transport = RecordingTransport({"condor_submit": CommandResult(
        (), 1, "", "ERROR: Failed to connect to local queue manager")})
    transport_run = transport.run

    def run(argv: Sequence[str], *, user: str | None = None,
            timeout: float = 60.0) -> CommandResult:
        if argv[0] == "condor_submit":
            transport.calls.append((tuple(argv), user))
            return transport.answers["condor_submit"]
        return transport_run(argv, user=user, timeout=timeout)

    transport.run = run  # type: ignore[method-assign]
    schedd = RemoteCliSchedd(transport)
    with pytest.raises(ScheddError, match="local queue manager"):
        schedd.submit(describe_job(JobSpec(script="true\n"), tmp_path / "job", None))
    rm = transport.calls[-1][0]
    assert rm[:3] == ("rm", "-rf", "--") and rm[3].startswith("/home/submitter/.pytest-stacks/")


def test_a_job_without_outputs_still_lists_them_as_empty(tmp_path: Path) -> None:
    """Without `transfer_output_files` the starter returns every changed file and sleeps 1 s
    after the input transfer; `""` is condor_submit's empty list, and the submit file keeps it."""
    description = describe_job(JobSpec(script="true\n"), tmp_path / "job", None)
    assert description["transfer_output_files"] == '""'
    assert 'transfer_output_files = ""\n' in submit_file(description)
    with_outputs = describe_job(JobSpec(script="true\n", outputs=("a.txt", "b.txt")),
                                tmp_path / "other", None)
    assert with_outputs["transfer_output_files"] == "a.txt,b.txt"


# ---------------------------------------------------------------- versions: daemon and client apart


def test_the_daemon_version_is_the_schedds_own_ad_not_the_login_nodes_tools() -> None:
    transport = RecordingTransport({
        "condor_status": CommandResult((), 0, "submit $CondorVersion: 25.14.1 2026-11-02 $\n",
                                       ""),
        "condor_version": CommandResult((), 0, "$CondorVersion: 23.9.6 2024-07-31 $\n", "")})
    schedd = RemoteCliSchedd(transport)
    assert "25.14.1" in schedd.daemon_version()
    assert "23.9.6" in schedd.client_version()


def test_of_several_schedds_the_version_is_the_one_condor_q_submits_to() -> None:
    transport = RecordingTransport({
        "condor_status": CommandResult((), 0, "other@site $CondorVersion: 24.0.1 $\n"
                                              "submit@site $CondorVersion: 25.14.1 $\n", ""),
        "condor_q": CommandResult((), 0, "\n-- Schedd: submit@site : <10.0.0.3:9618?...> @ "
                                         "12/06/26 05:00:00\nTotal for query: 0 jobs\n", "")})
    assert "25.14.1" in RemoteCliSchedd(transport).daemon_version()


@pytest.mark.parametrize("answer", [
    CommandResult((), 0, "", ""),  # the collector lists no schedd
    CommandResult((), 0, "a@x $CondorVersion: 25.14.1 $\nb@x $CondorVersion: 23.9.6 $\n", ""),
    CommandResult((), 1, "", "Error: couldn't contact the collector"),
])
def test_a_schedd_version_the_collector_cannot_give_is_an_error_not_the_clients(
        answer: CommandResult) -> None:
    """The client's ``condor_version`` once stood in for the daemon's: a site whose login
    node had new tools read as a new schedd."""
    transport = RecordingTransport({
        "condor_status": answer,
        "condor_version": CommandResult((), 0, "$CondorVersion: 23.9.6 2024-07-31 $\n", "")})
    with pytest.raises(ScheddError, match="cannot tell the schedd's version"):
        RemoteCliSchedd(transport).daemon_version()
