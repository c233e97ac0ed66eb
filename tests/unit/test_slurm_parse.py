"""The Slurm parsers against real outputs captured from each pinned version (tests/data/slurm)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from pytest_stacks.backends.slurm import parse
from pytest_stacks.contract import JobState

DATA = Path(__file__).resolve().parents[1] / "data" / "slurm"
SERIES = sorted(p.name for p in DATA.iterdir() if p.is_dir())
OUTCOME = {"ok": (JobState.COMPLETED, 0), "fail": (JobState.FAILED, 3),
           "cancel": (JobState.CANCELLED, None), "running": (JobState.RUNNING, None),
           "held": (JobState.HELD, None)}


def truth(series: str) -> dict[str, str]:
    """job id -> job name, from the capture's JOBS.md table."""
    rows = re.findall(r"^\| (\d+) \| (\w+) \|", (DATA / series / "JOBS.md").read_text(), re.M)
    return {job_id: name for job_id, name in rows}


def test_all_four_versions_are_captured() -> None:
    assert SERIES == ["20.11", "22.05", "24.11", "26.05"]


@pytest.mark.parametrize("series", SERIES)
def test_version(series: str) -> None:
    assert parse.parse_version((DATA / series / "sinfo-V.txt").read_text()).startswith(series)


@pytest.mark.parametrize("series", SERIES)
def test_sbatch_parsable(series: str) -> None:
    assert parse.parse_sbatch((DATA / series / "sbatch-parsable.txt").read_text()).isdigit()


@pytest.mark.parametrize("series", SERIES)
def test_scontrol_show_job(series: str) -> None:
    jobs = parse.parse_scontrol_jobs((DATA / series / "scontrol-show-job.txt").read_text())
    for job_id, name in truth(series).items():
        state, code = OUTCOME[name]
        job = jobs[job_id]
        assert parse.normalise(job.native_state, job.reason) is state, (series, name, job)
        if code is not None:
            assert job.exit_code == code
    cancelled = next(j for i, j in jobs.items() if truth(series).get(i) == "cancel")
    # Seen in the captures: 20.11 reports a cancelled batch job as ExitCode=143:0 (128 + SIGTERM
    # from the shell), later versions as 0:15.
    if series == "20.11":
        assert (cancelled.exit_code, cancelled.signal) == (143, 0)
    else:
        assert (cancelled.exit_code, cancelled.signal) == (0, 15)


@pytest.mark.parametrize("series", [s for s in SERIES if s != "20.11"])
def test_squeue_json(series: str) -> None:
    jobs = parse.parse_squeue_json((DATA / series / "squeue-all.json").read_text())
    for job_id, name in truth(series).items():
        state, code = OUTCOME[name]
        job = jobs[job_id]
        assert parse.normalise(job.native_state, job.reason) is state, (series, name, job)
        if code is not None:
            assert job.exit_code == code, (series, name, job)
    cancelled = next(j for i, j in jobs.items() if truth(series).get(i) == "cancel")
    assert cancelled.signal == 15


def test_json_shapes_really_differ_between_versions() -> None:
    """The reason the parser is defensive: 22.05 raw wait status vs 24.11 objects."""
    old = (DATA / "22.05" / "squeue-all.json").read_text()
    new = (DATA / "24.11" / "squeue-all.json").read_text()
    assert '"exit_code": 768' in old
    assert '"job_state": [' in new or '"job_state":[' in new


def test_20_11_has_no_json() -> None:
    assert "json" in (DATA / "20.11" / "squeue-json.err").read_text()


@pytest.mark.parametrize("series", SERIES)
def test_sacct_completion_log(series: str) -> None:
    jobs = parse.parse_sacct_c((DATA / series / "sacct-c-format.txt").read_text())
    names = truth(series)
    finished = {i: n for i, n in names.items() if n in ("ok", "fail", "cancel")}
    assert set(finished) <= set(jobs)
    for job_id, name in finished.items():
        state, code = OUTCOME[name]
        assert parse.normalise(jobs[job_id].native_state) is state
        if code is not None:
            assert jobs[job_id].exit_code == code


@pytest.mark.parametrize("series", SERIES)
def test_jobcomp_log(series: str) -> None:
    jobs = parse.parse_jobcomp((DATA / series / "jobcomp.log").read_text())
    failed = next(j for i, j in jobs.items() if truth(series).get(i) == "fail")
    assert failed.exit_code == 3  # ExitCode, not DerivedExitCode


@pytest.mark.parametrize("series", SERIES)
def test_unknown_job_is_an_error_not_an_empty_answer(series: str) -> None:
    text = (DATA / series / "scontrol-unknown.txt").read_text()
    assert "# exit: 1" in text and "Invalid job id" in text


@pytest.mark.parametrize(("native", "reason", "state"), [
    ("PENDING", "Priority", JobState.PENDING), ("PENDING", "JobHeldAdmin", JobState.HELD),
    ("CANCELLED by 1000", "", JobState.CANCELLED), ("TIMEOUT", "", JobState.FAILED),
    ("OUT_OF_MEMORY", "", JobState.FAILED), ("COMPLETING", "", JobState.RUNNING),
    ("PENDING REQUEUED", "", JobState.PENDING), ("", "", JobState.UNKNOWN),
    ("SOMETHING_NEW", "", JobState.UNKNOWN),
])
def test_normalise(native: str, reason: str, state: JobState) -> None:
    assert parse.normalise(native, reason) is state


def test_sbatch_without_id_is_an_error() -> None:
    with pytest.raises(ValueError, match="no job id"):
        parse.parse_sbatch("sbatch: error: Batch job submission failed\n")
