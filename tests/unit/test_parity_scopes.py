"""A declared difference excuses only the values it names (issue 49): a fake whose killed job
exits 0 fails parity, although the killed job's exit code is declared (it is a race on the real
side, so the declaration leaves the real value open and names what the fake answers).

The fakes are run with one behaviour changed and compared with the committed recordings under
the repository's own declarations, as the fake lane does.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_stacks.backends.htcondor.fake.job import Job
from pytest_stacks.backends.htcondor.fake.schedd import FakeSchedd
from pytest_stacks.backends.slurm.fake import FakeSlurmHost
from pytest_stacks.errors import ManifestError
from pytest_stacks.manifest import load
from pytest_stacks.parity.compare import Comparison, Declared, compare
from pytest_stacks.parity.recording_run import record
from pytest_stacks.parity.store import Recording, read_parity_file
from pytest_stacks.providers import fake_factory

ROOT = Path(__file__).resolve().parents[2]
PARITY = ROOT / "tests/parity/parity.yaml"
KILLED = ("wait long ended", "purge", "status after purge", "status of a job never submitted")


def _against_committed(fake: str, run_dir: Path) -> Comparison:
    parity = read_parity_file(PARITY)
    pairing = parity.pairings[fake]
    stack = load(ROOT / "manifest.yaml").get(fake)
    stack = dataclasses.replace(stack, options={**stack.options, **pairing.options})
    real = Recording.read(parity.recording_path(pairing.against))
    client, _logs, close = fake_factory(stack)(stack, run_dir)
    try:
        answered = record(client, stack=fake, backend=stack.backend, run_dir=run_dir,
                          timeout=stack.timeouts.job, capabilities=stack.capabilities,
                          provider="fake")
    finally:
        close()
    return compare(stack.backend, real.steps, answered.steps, parity.declared)


@pytest.fixture
def slurm_kill_exits_0(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """``scancel`` ends the job as if its script had exited 0 (no signal)."""
    cancel = FakeSlurmHost._scancel

    def exits_0(self: FakeSlurmHost, argv: tuple[str, ...], user: str) -> object:
        result = cancel(self, argv, user)
        for raw in argv[1:]:
            job = self._jobs.get(int(raw)) if raw.isdigit() else None
            if job is not None:
                job.exit_code, job.signal = 0, 0
        return result

    monkeypatch.setattr(FakeSlurmHost, "_scancel", exits_0)
    yield


def test_the_fakes_pass_under_the_scoped_declarations(tmp_path: Path) -> None:
    for fake in ("fake-slurm", "fake-slurm-20.11", "fake-htcondor"):
        assert _against_committed(fake, tmp_path / fake).same, fake


@pytest.mark.usefixtures("slurm_kill_exits_0")
def test_a_slurm_fake_whose_killed_job_exits_0_fails_parity(tmp_path: Path) -> None:
    result = _against_committed("fake-slurm", tmp_path)
    found = {(d.step, d.field, d.real, d.fake) for d in result.differences}
    # The recording holds whichever way the real killed job ended (a declared race:
    # SIGNALED, or ERROR when bash saw `sleep` die first and exited 143); a fake that says
    # SUCCESS differs from either.
    for step in KILLED:
        assert any((step, "response.stdout.json.jobs[2].exit_code.status[0]", real,
                    "SUCCESS") in found for real in ("SIGNALED", "ERROR")), (step, found)
    shown = result.render("t")
    assert "not excused by declared[" in shown


@pytest.mark.usefixtures("slurm_kill_exits_0")
def test_a_slurm_20_11_fake_whose_killed_job_exits_0_fails_parity(tmp_path: Path) -> None:
    result = _against_committed("fake-slurm-20.11", tmp_path)
    found = {(d.step, d.field, d.real, d.fake) for d in result.differences}
    for step in KILLED:
        assert (step, "response.stdout.record[2].ExitCode", "0:15", "0:0") in found, step


def test_an_htcondor_fake_whose_removed_job_exits_0_fails_parity(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    remove = FakeSchedd._remove

    def exits_0(self: FakeSchedd, job: Job, reason: str) -> None:
        remove(self, job, reason)
        job.ad["ExitCode"] = 0

    monkeypatch.setattr(FakeSchedd, "_remove", exits_0)
    result = _against_committed("fake-htcondor", tmp_path)
    found = {(d.step, d.field, d.real, d.fake) for d in result.differences}
    assert ("wait long ended", "response[0].ExitCode", None, "0") in found
    assert ("purge", "response[2].ExitCode", None, "0") in found


def _step(name: str, stdout: str) -> dict[str, object]:
    return {"name": name, "exchanges": [{"call": "run", "request": {"args": [["squeue"]]},
                                         "response": {"stdout": stdout}}]}


KILLED_EXIT = Declared("slurm", "run: squeue*", ("response.stdout.ExitCode",), "a race",
                       ("wait",), real=None, fake=frozenset({"0:15"}), name="declared[7]")


def test_a_scoped_declaration_excuses_only_the_values_it_names() -> None:
    real = [_step("wait", "JobId=<job1> ExitCode=143:0\n")]
    raced = compare("slurm", real, [_step("wait", "JobId=<job1> ExitCode=0:15\n")],
                    [KILLED_EXIT])
    assert raced.same and raced.excused == 1 and not raced.stale
    wrong = compare("slurm", real, [_step("wait", "JobId=<job1> ExitCode=0:0\n")],
                    [KILLED_EXIT])
    [diff] = wrong.differences
    assert (diff.field, diff.real, diff.fake, diff.outside) == (
        "response.stdout.ExitCode", "143:0", "0:0", (KILLED_EXIT,))
    assert ("not excused by declared[7] (response.stdout.ExitCode): its values are real "
            "(any), fake '0:15'") in wrong.render("t")
    gone = compare("slurm", real, [_step("wait", "JobId=<job1>\n")], [KILLED_EXIT])
    assert [(d.real, d.fake) for d in gone.differences] == [("143:0", None)]
    assert "fake (absent)" in gone.render("t")


def test_an_absent_value_is_named_as_absent() -> None:
    declared = Declared("slurm", "*", ("response.stdout.Partition",), "not modelled",
                        real=frozenset({"debug", None}), fake=frozenset({None}))
    real = [_step("s", "JobId=<job1> Partition=debug\n")]
    assert compare("slurm", real, [_step("s", "JobId=<job1>\n")], [declared]).same
    assert not compare("slurm", [_step("s", "JobId=<job1> Partition=gpu\n")],
                       [_step("s", "JobId=<job1>\n")], [declared]).same
    assert not compare("slurm", real, [_step("s", "JobId=<job1> Partition=x\n")],
                       [declared]).same


def test_a_declaration_that_excused_nothing_is_said_and_fails_nothing() -> None:
    same = [_step("wait", "JobId=<job1> ExitCode=0:15\n")]
    other_call = dataclasses.replace(KILLED_EXIT, call="run: sacct*", name="declared[8]")
    result = compare("slurm", same, same, [KILLED_EXIT, other_call])
    assert result.same
    assert result.stale == [KILLED_EXIT]  # about a call never made here: not stale
    assert result.stale_note().startswith(
        "  information: 1 declaration(s) excused nothing in this comparison")
    assert "declared[7] (response.stdout.ExitCode)" in result.render("t")


def _parity(tmp_path: Path, entry: str) -> Path:
    path = tmp_path / "parity.yaml"
    path.write_text("declared:\n  - {backend: slurm, call: x, fields: [y], reason: r, "
                    + entry + "}\n")
    return path


@pytest.mark.parametrize(("entry", "problem"), [
    ("fake: ['(absent)']", "declared[0] names the values fake may show but not real's: give "
                           "both (real: '*' where any value is meant)"),
    ("real: '*', fake: '*'", "declared[0] excuses any value on both sides"),
    ("real: '*', fake: [0]", "declared[0].fake must be '*' or a list of values"),
    ("real: '*', fake: []", "declared[0].fake must be '*' or a list of values"),
    ("step: [], real: '*', fake: ['0']", "declared[0].step must be a step's name or a list"),
])
def test_a_bad_scope_names_the_declaration_and_the_fix(
        tmp_path: Path, entry: str, problem: str) -> None:
    with pytest.raises(ManifestError) as raised:
        read_parity_file(_parity(tmp_path, entry))
    [found] = raised.value.problems
    assert found.startswith(f"{tmp_path / 'parity.yaml'}: {problem}")


def test_a_scope_and_steps_are_read_as_written(tmp_path: Path) -> None:
    [declared] = read_parity_file(_parity(
        tmp_path, "step: [a, b], real: '*', fake: ['(absent)', '0']")).declared
    assert (declared.steps, declared.real, declared.fake, declared.name) == (
        ("a", "b"), None, frozenset({None, "0"}), "declared[0]")


def test_every_killed_job_exit_declaration_names_the_fakes_values() -> None:
    """The repository's own file: a killed job's exit is a race of the real side only."""
    exits = [d for d in read_parity_file(PARITY).declared
             if any(f.endswith(("ExitCode", "exit_code")) or ".exit_code." in f
                    for f in d.fields)]
    assert len(exits) >= 9
    for declared in exits:
        assert declared.fake is not None and declared.real is None, declared.describe()
