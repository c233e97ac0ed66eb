"""State files that lie are named (file, field, fix), never read as "nothing there"; `down`
and `reap` look at the engine before they say nothing is kept or to reap; `timings` says
what it did not read. Issue 59, item 2 (the CI variables: tests/plugin/test_evidence_refused.py
and below)."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_stacks import cli, places
from pytest_stacks.errors import ManifestError, StacksError
from pytest_stacks.parity.compare import compare
from pytest_stacks.parity.provenance import Provenance
from pytest_stacks.parity.store import Recording
from pytest_stacks.providers import kind_owners, reaper
from pytest_stacks.providers.labels import LABEL_OWNER_PID, LABEL_RUN, LABEL_STACK
from pytest_stacks.providers.site_owners import RunOwner
from pytest_stacks.verdicts import environment

REPO = Path(__file__).resolve().parents[2]


pytestmark = pytest.mark.usefixtures("private_places")  # tests/unit/conftest.py


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def _engine(monkeypatch: pytest.MonkeyPatch, runs: dict[str, Any] | Exception) -> None:
    """The engine's answer to "what is labelled ours" (nothing is removed)."""
    def inventory(run_id: str | None = None) -> dict[str, Any]:
        if isinstance(runs, Exception):
            raise runs
        return runs
    monkeypatch.setattr(reaper, "inventory", inventory)
    monkeypatch.setattr(reaper, "sweep_run", lambda *a, **k: [])
    monkeypatch.setattr(kind_owners, "reap", lambda *a, **k: [])


def _kept_record(run_id: str, record: Any) -> Path:
    folder = places.state_root() / places.MARKS_FOLDER
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{run_id}.json"
    path.write_text(json.dumps(record))
    return path


# ---------------------------------------------------------------- kept-run records and down


@pytest.mark.parametrize(("record", "field"), [
    ({"run": "r1", "run_dir": "", "stacks": "slurm-24.11", "why": "up"}, "stacks"),
    ({"run": "r1", "run_dir": 7, "stacks": ["slurm-24.11"], "why": "up"}, "run_dir"),
    (["slurm-24.11"], "JSON object"),
])
def test_down_names_a_malformed_kept_record_never_nothing_kept(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], record: Any,
        field: str) -> None:
    path = _kept_record("20260101000000-aaaaaaaa", record)
    _engine(monkeypatch, {})
    code, out, err = _run(capsys, "--manifest", str(REPO / "manifest.yaml"), "down",
                          "slurm-24.11")
    assert code != 0, out
    assert "nothing kept" not in out
    assert str(path) in err and field in err and "remove the file" in err
    assert path.exists(), "the record still keeps its run"


def test_reap_names_a_malformed_kept_record(monkeypatch: pytest.MonkeyPatch,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    path = _kept_record("20260101000000-aaaaaaaa", {"run_dir": "", "stacks": "x"})
    _engine(monkeypatch, {})
    code, out, err = _run(capsys, "reap", "--dry-run")
    assert code != 0 and str(path) in err and "'stacks'" in err
    assert "nothing to reap" not in out


def _resources(run_id: str, stack: str, pid: int) -> Any:
    labels = {LABEL_RUN: run_id, LABEL_STACK: stack, LABEL_OWNER_PID: str(pid)}
    return SimpleNamespace(run_id=run_id, labels=labels, count=2)


def test_down_looks_at_the_engine_before_it_says_nothing_is_kept(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    # No record keeps slurm-24.11 (lost, or removed by hand), but its containers run.
    _engine(monkeypatch, {"r9": _resources("r9", "slurm-24.11", 2 ** 22 + 7)})
    code, out, err = _run(capsys, "--manifest", str(REPO / "manifest.yaml"), "down",
                          "slurm-24.11")
    assert code != 0 and "nothing kept" not in out
    assert "run r9" in err and "slurm-24.11" in err and "pytest-stacks reap" in err


def test_down_says_when_the_engine_cannot_be_asked(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _engine(monkeypatch, ConnectionError("no engine at unix:///var/run/docker.sock"))
    code, out, err = _run(capsys, "--manifest", str(REPO / "manifest.yaml"), "down",
                          "slurm-24.11")
    assert code != 0 and "nothing kept" not in out
    assert "could not be asked" in err and "no engine at" in err


def test_down_of_nothing_anywhere_still_says_so(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _engine(monkeypatch, {"r9": _resources("r9", "other-stack", 1)})
    code, out, _ = _run(capsys, "--manifest", str(REPO / "manifest.yaml"), "down",
                        "slurm-24.11")
    assert code == 0 and "nothing kept to bring down for slurm-24.11" in out


# ---------------------------------------------------------------- owner records


@pytest.mark.parametrize(("change", "field"), [
    ({"pid": "1234"}, "'pid'"), ({"pid": True}, "'pid'"), ({"run_id": 5}, "'run_id'"),
    ({"start": None}, "'start'"),
])
def test_a_site_owner_record_of_the_wrong_types_is_refused(change: dict[str, Any],
                                                          field: str) -> None:
    values = {"run_id": "r1", "stack": "site", "host": "h", "pid": 12, "start": "1",
              **change}
    with pytest.raises(ValueError, match=field):
        RunOwner.from_mapping(values)


def test_a_site_owner_record_that_is_a_list_is_refused() -> None:
    with pytest.raises(ValueError, match="not a JSON object"):
        RunOwner.from_json('["r1", 12]')


@pytest.mark.parametrize("record", [["run", 12], {"pid": "12", "start": "1"}])
def test_reap_dry_run_names_an_unreadable_run_owner_record(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        record: Any) -> None:
    owner = places.runs_root() / "20260101000000-bbbbbbbb" / "owner.json"
    owner.parent.mkdir()
    owner.write_text(json.dumps(record))
    _engine(monkeypatch, {})
    code, out, err = _run(capsys, "reap", "--dry-run")
    assert code != 0 and str(owner) in err, out + err
    assert "nothing to reap" not in out


# ---------------------------------------------------------------- timings


def test_timings_of_a_missing_file_is_an_error(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    missing = tmp_path / "never-written.jsonl"
    code, _, err = _run(capsys, "timings", str(missing))
    assert code == 1 and str(missing) in err and "ENOENT" in err


@pytest.mark.parametrize("bad", [b"[1, 2]", b'{"step": "x", "seconds": "\xff\xfe"}',
                                 b"\xff\xfe not text", b'{"step": "x"}',
                                 b'{"step": "x", "seconds": NaN}'])
def test_timings_count_the_lines_they_skip(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                           bad: bytes) -> None:
    path = tmp_path / "timings.jsonl"
    good = json.dumps({"stack": "s", "step": "go build", "seconds": 2.0}).encode()
    path.write_bytes(good + b"\n" + bad + b"\n" + good + b"\n")
    code, out, err = _run(capsys, "timings", str(path))
    assert code == 0
    assert "4.0      2  go build (s)" in out
    assert f"{path}: skipped 1 line(s)" in err and "line 2" in err


# ---------------------------------------------------------------- parity recordings


def _recording(path: Path, steps: Any) -> Path:
    path.write_text(json.dumps({"format": 1, "stack": "slurm-24.11", "backend": "slurm",
                                "versions": {"daemon": "24.11.5"}, "recorded_at": "t",
                                "provenance": {}, "steps": steps}))
    return path


@pytest.mark.parametrize(("steps", "field"), [
    ("submit", "'steps' is a str"), ({"submit": []}, "'steps' is a dict"),
    ([["submit"]], "'steps[0]' is a list"), ([{"name": "", "exchanges": []}], "steps[0]'.name"),
    ([{"name": "submit", "exchanges": "x"}], "steps[0]'.exchanges"),
])
def test_a_recording_with_malformed_steps_is_named(tmp_path: Path, steps: Any,
                                                   field: str) -> None:
    path = _recording(tmp_path / "slurm-24.11.json", steps)
    with pytest.raises(ManifestError) as caught:
        Recording.read(path)
    assert str(path) in str(caught.value) and field in str(caught.value)


def test_an_extra_step_is_reported_with_the_recording_file_and_the_step(tmp_path: Path) -> None:
    steps = [{"name": "submit", "exchanges": []}, {"name": "requeue", "exchanges": []}]
    path = _recording(tmp_path / "slurm-24.11.json", steps)
    real = Recording.read(path)
    comparison = compare("slurm", real.steps, steps[:1], [])
    text = comparison.render(real.mismatch_title("fake-slurm", "parity.yaml"))
    assert str(path) in text and "'requeue'" in text


def test_a_written_recording_knows_its_file(tmp_path: Path) -> None:
    made = Recording("s", "slurm", {}, "t", Provenance.read(None), [])
    written = made.write(tmp_path / "s.json")
    assert str(written) in made.mismatch_title("fake", "parity.yaml")
    assert "source" not in json.loads(written.read_text())


# ---------------------------------------------------------------- CI variables


def test_ci_variables_checked_by_the_results_schema() -> None:
    assert environment.ci_lane({}) is None and environment.ci_lane({"PYTEST_STACKS_CI_LANE":
                                                                    "canary"}) == "canary"
    with pytest.raises(StacksError, match="PYTEST_STACKS_CI_LANE"):
        environment.ci_lane({"PYTEST_STACKS_CI_LANE": "nightly; rm -rf /"})
    with pytest.raises(StacksError, match=r"run\.plan\.digest"):
        environment.ci_plan({"PYTEST_STACKS_CI_PLAN": "abc"})
    assert environment.ci_stacks({"PYTEST_STACKS_CI_STACK": "a, b,a"}) == ("a", "b")
