"""The parity machinery's pure parts: normalisation, fields, comparison, the parity file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from pytest_stacks.errors import ManifestError
from pytest_stacks.manifest import load
from pytest_stacks.parity.compare import Declared, compare
from pytest_stacks.parity.fields import fields, label
from pytest_stacks.parity.normalise import Normaliser
from pytest_stacks.parity.provenance import Provenance
from pytest_stacks.parity.recording_run import NotTappable, record
from pytest_stacks.parity.store import Recording, read_parity_file
from pytest_stacks.parity.tap import Recorder, as_data
from pytest_stacks.providers import fake_factory

ROOT = Path(__file__).resolve().parents[2]


def test_a_job_id_is_replaced_only_where_an_id_stands() -> None:
    norm = Normaliser(["1", "7"], {})
    text = ("JobId=1 JobName=x NumCPUs=1 ExitCode=1:0 StdOut=/w/slurm-1.out\n"
            "1|COMPLETED|0:0\n7.batch|CANCELLED|0:15\nSubmitted batch job 7\n")
    assert norm.text(text) == (
        "JobId=<job1> JobName=x NumCPUs=1 ExitCode=1:0 StdOut=/w/slurm-<job1>.out\n"
        "<job1>|COMPLETED|0:0\n<job2>.batch|CANCELLED|0:15\nSubmitted batch job <job2>\n")


def test_other_jobs_on_a_shared_stack_are_dropped() -> None:
    norm = Normaliser(["5"], {})
    listed = norm({"jobs": [{"job_id": 4, "name": "theirs"}, {"job_id": 5, "name": "ours"}]})
    assert listed == {"jobs": [{"job_id": "<job1>", "name": "ours"}]}
    assert norm.text("JobId=4 JobState=RUNNING\nJobId=5 JobState=COMPLETED") == (
        "JobId=<job1> JobState=COMPLETED")
    assert norm.text("4|RUNNING|0:0\n5|COMPLETED|0:0\n") == "<job1>|COMPLETED|0:0\n"


def test_htcondor_clusters_are_named_after_their_job() -> None:
    norm = Normaliser(["12.0"], {})
    assert norm("(ClusterId == 12 && ProcId == 0)") == "(ClusterId == <job1> && ProcId == 0)"
    assert norm({"ClusterId": 12, "ProcId": 0}) == {"ClusterId": "<job1>", "ProcId": 0}
    assert norm({"cluster": 12}) == {"cluster": "<job1>"}
    assert norm("host#12.0#1764633600") == "host#<job1>#<epoch>"


def test_what_differs_by_nature_becomes_a_placeholder() -> None:
    norm = Normaliser([], {"/tmp/run-abc": "<run_dir>", "slurm-24.11": "<stack>"})
    assert norm("/tmp/run-abc/htcondor/slurm-24.11/x") == "<run_dir>/htcondor/<stack>/x"
    assert norm("at 2026-12-02T00:38:16 from <172.18.0.2:9618?addrs=x> 10.0.0.1") == (
        "at <time> from <sinful> <ip>")
    assert norm("/work/jobs/0a1b2c3d4e5f then 0a1b2c3d4e5f and 99aa88bb77cc") == (
        "/work/jobs/<hex1> then <hex1> and <hex2>")
    assert norm({"submit_time": 1764633600, "cpus": 1}) == {"submit_time": "<epoch>", "cpus": 1}
    assert norm("RunTime=00:00:01") == "RunTime=<hms>"
    assert norm('{"jobs": []}') == {"json": {"jobs": []}}


def test_bytes_are_text_when_small_and_a_digest_when_not() -> None:
    assert as_data(b"abc\n") == "abc\n"
    assert as_data(b"\xff" * 3).startswith("<3 bytes sha256:")
    assert as_data(object()) == "<object>"


def test_an_int_enum_is_recorded_as_its_number_and_normalised_at_once() -> None:
    import enum

    class Status(enum.IntEnum):
        COMPLETED = 4

    assert type(as_data(Status.COMPLETED)) is int
    # An int subclass in range() is a linear scan (seen: minutes on one HTCondor ad).
    assert Normaliser([], {})({"EnteredCurrentStatus": 1764633600}) == {
        "EnteredCurrentStatus": "<epoch>"}


def test_key_value_text_is_read_by_key_whichever_way_it_is_wrapped() -> None:
    one_line = {"call": "run", "request": {}, "response": {
        "stdout": "JobId=<job1> JobName=a\n"}}
    wrapped = {"call": "run", "request": {}, "response": {
        "stdout": "JobId=<job1>\n   JobName=a\n"}}
    assert fields(one_line) == fields(wrapped) == {
        "response.stdout.JobId": "<job1>", "response.stdout.JobName": "a"}
    two = {"call": "run", "request": {}, "response": {
        "stdout": "JobId=1 JobState=A\nJobId=2 JobState=B\n"}}
    assert fields(two)["response.stdout.record[1].JobState"] == "B"
    piped = {"call": "run", "request": {}, "response": {"stdout": "<job1>|COMPLETED|0:0\n"}}
    assert fields(piped)["response.stdout[1]"] == "COMPLETED"
    assert label({"call": "run", "request": {"args": [["sinfo", "-V"]], "user": "u"}}) == (
        "run: sinfo -V (as u)")


def _step(name: str, stdout: str, argv: tuple[str, ...] = ("squeue",)) -> dict[str, object]:
    return {"name": name, "exchanges": [
        {"call": "run", "request": {"args": [list(argv)]}, "response": {
            "returncode": 0, "stdout": stdout, "stderr": ""}}]}


def test_a_difference_names_the_step_the_command_and_the_field() -> None:
    real = [_step("wait ok", "JobId=<job1> JobState=COMPLETED Partition=debug\n")]
    fake = [_step("wait ok", "JobId=<job1> JobState=COMPLETING\n")]
    result = compare("slurm", real, fake, [])
    assert [(d.field, d.real, d.fake) for d in result.differences] == [
        ("response.stdout.JobState", "COMPLETED", "COMPLETING"),
        ("response.stdout.Partition", "debug", None)]
    shown = result.render("title")
    assert "step 'wait ok', run: squeue" in shown
    assert "response.stdout.Partition: real 'debug', fake (absent)" in shown


def test_only_a_declared_difference_is_excused() -> None:
    real = [_step("s", "JobId=<job1> Partition=debug Account=x\n")]
    fake = [_step("s", "JobId=<job1>\n")]
    declared = [Declared("slurm", "run: squeue*", ("response.stdout.Partition",),
                         "not modelled")]
    result = compare("slurm", real, fake, declared)
    assert result.excused == 1
    assert [d.field for d in result.differences] == ["response.stdout.Account"]
    assert compare("htcondor", real, fake, declared).excused == 0  # another backend's


def test_a_declared_field_covers_everything_under_it_and_nothing_beside_it() -> None:
    declared = [Declared("slurm", "*", ("response.jobs[*].exit",), "r")]
    assert declared[0].covers("slurm", "s", "c", "response.jobs[3].exit.signal.name")
    assert declared[0].covers("slurm", "s", "c", "response.jobs[0].exit[1]")
    assert not declared[0].covers("slurm", "s", "c", "response.jobs[0].exit_code")


def test_another_request_or_step_is_a_difference_too() -> None:
    result = compare("slurm", [_step("s", "", ("squeue", "--json"))],
                     [_step("s", "", ("scontrol", "show", "job"))], [])
    assert [(d.field, d.real, d.fake) for d in result.differences] == [
        ("request", "run: squeue --json", "run: scontrol show job")]
    missing = compare("slurm", [_step("a", ""), _step("b", "")], [_step("a", "")], [])
    assert [(d.field, d.real, d.fake) for d in missing.differences] == [("step", "b", None)]


def test_a_bad_parity_file_names_the_file_the_field_and_the_fix(tmp_path: Path) -> None:
    path = tmp_path / "parity.yaml"
    path.write_text("fakes:\n  fake-slurm: {options: {}}\n"
                    "declared:\n  - {backend: slurm, call: x, fields: [y], reason: ' '}\n"
                    "  - {backend: slurm}\n"
                    "  - {backend: slurm, call: x, fields: y, reason: r}\n")
    with pytest.raises(ManifestError) as raised:
        read_parity_file(path)
    assert raised.value.problems == [
        f"{path}: fakes.fake-slurm.against must name the real stack whose recording the fake "
        f"is checked against",
        f"{path}: declared[0].reason is empty: say why the fake differs on purpose",
        f"{path}: declared[1] needs backend, call, fields and reason (and may name a step, "
        f"the field all of its fields are under, and the values each side may show: real "
        f"and fake)",
        f"{path}: declared[2].fields must be a list of field paths ('*' matches anything), as "
        f"a difference names them"]
    path.write_text("fake: {}\n")
    with pytest.raises(ManifestError, match="holds 'fakes' and 'declared' only"):
        read_parity_file(path)


def test_a_recording_that_cannot_be_read_says_how_to_make_it_again(tmp_path: Path) -> None:
    path = tmp_path / "slurm-24.11.json"
    path.write_text('{"format": 0}')
    with pytest.raises(ManifestError, match=r"'format' must be 1.*pytest-stacks record"):
        Recording.read(path)
    path.write_text("{")
    with pytest.raises(ManifestError, match="not a readable recording"):
        Recording.read(path)


def test_the_repositorys_parity_file_pairs_every_fake() -> None:
    manifest = load(ROOT / "manifest.yaml")
    parity = read_parity_file(ROOT / "tests/parity/parity.yaml")
    names = manifest.names()
    assert set(parity.pairings) == {s.name for s in manifest.stacks if s.provider == "fake"}
    for pairing in parity.pairings.values():
        assert pairing.against in names
        assert manifest.get(pairing.against).provider != "fake"


def _fake_recording(name: str, tmp_path: Path, **options: object) -> Recording:
    stack = load(ROOT / "manifest.yaml").get(name)
    stack = dataclasses.replace(stack, options={**stack.options, **options})
    client, _logs, close = fake_factory(stack)(stack, tmp_path / name)
    try:
        return record(client, stack=name, backend=stack.backend, run_dir=tmp_path / name,
                      timeout=30, provider=stack.provider)
    finally:
        close()


def test_two_runs_of_the_scenario_record_the_same_and_another_version_does_not(
        tmp_path: Path) -> None:
    first = _fake_recording("fake-slurm", tmp_path / "a", min_job_age=300)
    again = _fake_recording("fake-slurm", tmp_path / "b", min_job_age=300)
    assert compare("slurm", first.steps, again.steps, []).same
    older = _fake_recording("fake-slurm-20.11", tmp_path / "c", min_job_age=300)
    drift = compare("slurm", first.steps, older.steps, [])
    assert ("wait ok", "request", "run: squeue --json -t all (as submitter)",
            "run: scontrol show job -o (as submitter)") in {
        (d.step, d.field, d.real, d.fake) for d in drift.differences}


def test_a_client_that_cannot_be_tapped_is_said_so(tmp_path: Path) -> None:
    with pytest.raises(NotTappable, match="has no tapped"):
        record(object(), stack="s", backend="slurm",  # type: ignore[arg-type]
               run_dir=tmp_path, timeout=1, provider="fake")


def test_the_recorder_keeps_only_the_last_round_of_a_wait() -> None:
    recorder = Recorder()
    channel = recorder.tap(type("C", (), {"ask": lambda self, n: n * 2})())
    recorder.step("wait")
    channel.ask(1)
    recorder.round()
    channel.ask(2)
    assert [e.to_json() for e in recorder.steps[0].exchanges] == [
        {"call": "ask", "request": {"args": [2]}, "response": 4}]


def test_a_field_named_like_an_id_that_holds_no_id_does_not_drop_the_job() -> None:
    norm = Normaliser(["5"], {})
    assert norm([{"cluster": "stacks", "job_id": 5}]) == [{"cluster": "stacks", "job_id": "<job1>"}]


def test_a_listing_is_ordered_by_job_and_a_runs_folder_is_named() -> None:
    norm = Normaliser(["3.0", "1.0", "2.0"], {})
    listed = norm([{"ClusterId": 1}, {"ClusterId": 3}, {"ClusterId": 2}])
    assert listed == [{"ClusterId": "<job1>"}, {"ClusterId": "<job2>"}, {"ClusterId": "<job3>"}]
    assert norm("/tmp/pytest-stacks-0/20261202005642-e3923f88/htcondor/x/job.sh") == (
        "<run_dir>/htcondor/x/job.sh")


def test_a_recording_reads_back_as_it_was_written(tmp_path: Path) -> None:
    steps = [{"name": "s", "exchanges": [{"call": "run", "request": {"args": [["x"] * 40]},
                                          "response": {"set": True, "number": 0}}]}]
    made = Provenance("compose", "sha256:0123456789abcdef", "0.1.0", "20261202005642-e3923f88")
    written = Recording("s", "slurm", {"daemon": "1"}, "t", made, steps).write(
        tmp_path / "r.json")
    assert Recording.read(written) == Recording("s", "slurm", {"daemon": "1"}, "t", made, steps)
    assert '"response": {"set": true, "number": 0}' in written.read_text()  # one line


def test_a_drivers_own_retry_of_one_request_keeps_its_last_answer() -> None:
    recorder = Recorder()
    answers = iter([None, None, {"name": "default"}])
    channel = recorder.tap(type("C", (), {"get": lambda self, n: next(answers)})())
    recorder.step("submit")
    while channel.get("default") is None:
        pass
    assert [e.to_json() for e in recorder.steps[0].exchanges] == [
        {"call": "get", "request": {"args": ["default"]}, "response": {"name": "default"}}]


def test_uids_and_a_servers_counters_become_placeholders() -> None:
    norm = Normaliser([], {"pst-20261202-abc": "<namespace>"})
    obj = {"metadata": {"uid": "0f8fad5b-d9cb-469f-a165-70867728950e",
                        "resourceVersion": "48213", "namespace": "pst-20261202-abc"},
           "ownerReferences": [{"uid": "0f8fad5b-d9cb-469f-a165-70867728950e"}]}
    assert norm(obj) == {"metadata": {"uid": "<uid1>", "resourceVersion": "<counter>",
                                      "namespace": "<namespace>"},
                         "ownerReferences": [{"uid": "<uid1>"}]}


def test_record_without_a_parity_file_says_which_folder_it_needs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from pytest_stacks import cli

    assert cli.main(["record", "slurm-24.11", "--tests", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'parity.yaml'} does not exist: `record` runs your parity test" in err
    assert "--tests names its folder" in err
    # A user's project has no tests/parity of this repository's (issue 58): never sent there.
    assert "this repository" not in err and "tests/parity" not in err
    assert "Traceback" not in err


def test_a_value_that_equals_a_job_id_is_a_job_only_in_command_output() -> None:
    # Seen: the 24th job of a shared slurm-24.11 turned meta.slurm.version.major into a job.
    norm = Normaliser(["24"], {})
    assert norm({"version": {"major": "24"}}) == {"version": {"major": "24"}}
    assert norm("24\n") == "<job1>\n"
    assert norm("24|COMPLETED|0:0\n") == "<job1>|COMPLETED|0:0\n"
    assert norm(["scancel", "24"]) == ["scancel", "<job1>"]


def test_a_random_folder_name_is_a_placeholder_even_without_a_letter() -> None:
    """uuid4().hex[:12] holds no letter about once in 280 runs: the folder must still read
    as a placeholder, numbered in order of appearance like any other."""
    normalise = Normaliser([], {})
    text = "/w/643419145051/job.sh and /w/abcdef012345/out, again /w/643419145051/err"
    assert normalise.text(text) == "/w/<hex1>/job.sh and /w/<hex2>/out, again /w/<hex1>/err"
    assert Normaliser([], {}).text("exit 643419145051 (a number stays)") == (
        "exit 643419145051 (a number stays)")
