"""The fake's ``squeue --json`` envelope is its release's (issue 55): 22.05 prints meta/errors
before the jobs (openapi/v0.0.38, an integer version under ``Slurm``), 24.11 and 26.05 the
jobs first with the data parser's meta, errors and warnings. The recorded real outputs
(tests/data/slurm/SERIES/squeue-all.json, tests/parity/recordings/*.corpus.json) are the truth.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_stacks.backends.slurm.fake import FakeSlurmHost

DATA = Path(__file__).parents[1] / "data" / "slurm"
RECORDINGS = Path(__file__).parents[1] / "parity" / "recordings"
RELEASES = {"22.05": "22.05.8", "24.11": "24.11.5", "26.05": "26.05.5"}
ARGV = ["squeue", "--json", "-t", "all"]  # what tests/data/slurm/capture.sh ran


@pytest.fixture(params=sorted(RELEASES))
def series(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def host(series: str, tmp_path: Path) -> Iterator[FakeSlurmHost]:
    fake = FakeSlurmHost(RELEASES[series], min_job_age=300)
    fake.share(tmp_path)
    yield fake
    fake.close()


def _submit(host: FakeSlurmHost, cwd: Path) -> int:
    result = host.run(["sbatch", "--parsable", "--wrap", "true"], user="submitter",
                      cwd=str(cwd))
    assert result.ok, result.stderr
    return int(result.stdout)


def test_the_envelope_is_the_releases_own(series: str, host: FakeSlurmHost,
                                          tmp_path: Path) -> None:
    _submit(host, tmp_path)
    recorded_text = (DATA / series / "squeue-all.json").read_text()
    recorded = json.loads(recorded_text)
    answered = host.run(ARGV, user="submitter")
    assert answered.ok, answered.stderr
    fake = json.loads(answered.stdout)
    assert list(fake) == list(recorded), "the top-level keys (and their order) differ"
    assert fake["meta"] == recorded["meta"]
    assert fake["errors"] == recorded["errors"]
    assert ("warnings" in fake) == ("warnings" in recorded)
    for timed in ("last_backfill", "last_update"):
        if timed in recorded:
            assert set(fake[timed]) == set(recorded[timed])
    # Every recorded release escapes slashes; a client reading bytes sees the same text.
    assert ('"\\/' in answered.stdout) == ('"\\/' in recorded_text)


def test_22_05_as_the_corpus_recording_shows(tmp_path: Path) -> None:
    """The corpus replay on slurm-22.05: a completed job's ``squeue --json -j`` envelope."""
    recording = json.loads((RECORDINGS / "slurm-22.05.corpus.json").read_text())
    step = next(s for s in recording["steps"] if s["name"].startswith("squeue --json -j"))
    real = step["exchanges"][0]["response"]["stdout"]["json"]
    fake = FakeSlurmHost("22.05.8", min_job_age=300)
    try:
        fake.share(tmp_path)
        job = _submit(fake, tmp_path)
        answered = json.loads(fake.run(["squeue", "--json", "-j", str(job)]).stdout)
    finally:
        fake.close()
    assert list(answered) == list(real) == ["meta", "errors", "jobs"]
    assert answered["meta"] == real["meta"]
    assert answered["errors"] == real["errors"] == []


def test_nothing_listed_is_a_warning_only_from_24_11(series: str,
                                                     host: FakeSlurmHost) -> None:
    document = json.loads(host.run(["squeue", "--json"], user="submitter").stdout)
    assert document["jobs"] == []
    if series == "22.05":
        assert "warnings" not in document
    else:
        assert document["warnings"] == [{"description": "Zero jobs to dump", "source": ""}]


def test_a_release_without_a_recorded_layout_is_refused(tmp_path: Path) -> None:
    fake = FakeSlurmHost("23.02.7")
    try:
        answered = fake.run(["squeue", "--json"])
    finally:
        fake.close()
    assert not answered.ok
    assert "Slurm 23.02.7 has no recorded `squeue --json` layout" in answered.stderr
    assert "22.05, 24.11" in answered.stderr
