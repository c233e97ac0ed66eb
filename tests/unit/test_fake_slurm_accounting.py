"""fake-slurm's ``sacct`` where its stack keeps accounting storage (capability ``accounting``),
and where it does not. The expected lines are what slurm-24.11 with slurmdbd printed for the
same jobs (seen 2026-12-07; the corpus recording tests/parity/recordings/slurm-24.11.corpus.json
holds the clients' lines). The jobs run for real; the fake ages them out of the queue at once
(min_job_age 0), which accounting storage must survive.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_stacks.backends.slurm.fake import FakeSlurmHost


@pytest.fixture
def host(tmp_path: Path) -> Iterator[FakeSlurmHost]:
    fake = FakeSlurmHost("24.11.5", min_job_age=0, accounting=True)
    fake.share(tmp_path)
    yield fake
    fake.close()


def _sbatch(host: FakeSlurmHost, *argv: str, cwd: Path) -> str:
    result = host.run(["sbatch", "--parsable", *argv], user="submitter", cwd=str(cwd))
    assert result.ok, result.stderr
    return result.stdout.strip()


def _sacct(host: FakeSlurmHost, *argv: str, user: str = "submitter") -> tuple[int, str, str]:
    result = host.run(["sacct", *argv], user=user)
    return result.returncode, result.stdout, result.stderr


def _ended(host: FakeSlurmHost, *jobs: str) -> None:
    for _ in range(200):
        states = _sacct(host, "-j", ",".join(jobs), "-X", "-n", "-P", "-o", "State")[1]
        if states and not {"PENDING", "RUNNING"} & set(states.split()):
            return
        time.sleep(0.05)
    raise AssertionError(f"jobs {jobs} never ended")


def test_finished_jobs_keep_their_state_and_exit_code(host: FakeSlurmHost,
                                                      tmp_path: Path) -> None:
    ok = _sbatch(host, "--wrap", "true", cwd=tmp_path)
    failed = _sbatch(host, "--wrap", "exit 3", cwd=tmp_path)
    _ended(host, ok, failed)
    assert host.run(["squeue", "-h", "-j", ok]).returncode == 1  # aged out of the queue
    assert _sacct(host, "-j", f"{ok},{failed}", "-X", "-n", "-P", "-o",
                  "JobID,State,ExitCode") == (0, f"{ok}|COMPLETED|0:0\n{failed}|FAILED|3:0\n", "")
    assert _sacct(host, "-j", ok, "-o", "JobID,State,NodeList", "--parsable2") == (
        0, f"JobID|State|NodeList\n{ok}|COMPLETED|localhost\n{ok}.batch|COMPLETED|localhost\n",
        "")
    assert _sacct(host, "-j", f"{ok},", "-o", "JobID,STATE", "-X", "-n", "-P",
                  "--delimiter=,")[1] == f"{ok},COMPLETED\n"
    assert _sacct(host, "-j", f"{ok}.batch", "-n", "-P", "-o", "JobID,State")[1] == (
        f"{ok}.batch|COMPLETED\n")


def test_a_cancelled_job_and_a_held_one_as_slurmdbd_words_them(host: FakeSlurmHost,
                                                                tmp_path: Path) -> None:
    victim = _sbatch(host, "--wrap", "sleep 300", cwd=tmp_path)
    held = _sbatch(host, "--hold", "--wrap", "true", cwd=tmp_path)
    assert host.run(["scancel", victim], user="submitter").ok
    assert _sacct(host, "-j", f"{victim},{held}", "-P", "-o", "JobID,State,ExitCode,NodeList")[1] \
        == ("JobID|State|ExitCode|NodeList\n"
            f"{victim}|CANCELLED by 1000|0:0|localhost\n{victim}.batch|CANCELLED|0:15|localhost\n"
            f"{held}|PENDING|0:0|None assigned\n")
    # Without -j only eligible jobs are listed (the held one is not).
    assert _sacct(host, "-n", "-P", "-X", "-o", "JobID,State")[1] == (
        f"{victim}|CANCELLED by 1000\n")


def test_the_default_columns_and_the_refusals(host: FakeSlurmHost, tmp_path: Path) -> None:
    job = _sbatch(host, "--wrap", "true", cwd=tmp_path)
    _ended(host, job)
    code, out, _ = _sacct(host, "-j", job)
    assert code == 0 and out.splitlines() == [
        "JobID           JobName  Partition    Account  AllocCPUS      State ExitCode ",
        "------------ ---------- ---------- ---------- ---------- ---------- -------- ",
        f"{job:<12}       wrap      debug     stacks          1  COMPLETED      0:0 ",
        f"{job + '.batch':<12}      batch                stacks          1  COMPLETED      0:0 "]
    assert _sacct(host, "-j", "987654", "-X", "-n", "-P", "-o", "JobID,State") == (0, "", "")
    assert _sacct(host, "-j", "abc") == (1, "", "sacct: fatal: Bad job/step specified: abc\n")
    assert _sacct(host, "-j", job, "-o", "Bogus") == (
        1, "", "sacct: error: Invalid field requested: \"Bogus\"\n")
    # Another user sees none of submitter's jobs; root sees them all.
    assert _sacct(host, "-X", "-n", "-P", "-o", "JobID", user="other")[1] == ""
    assert _sacct(host, "-X", "-n", "-P", "-o", "JobID", user="root")[1] == f"{job}\n"


def test_without_accounting_storage_sacct_says_so(tmp_path: Path) -> None:
    fake = FakeSlurmHost("24.11.5")
    try:
        assert fake.run(["sacct", "-j", "1", "-X", "-n", "-P", "-o", "State"],
                        user="submitter").stderr == "Slurm accounting storage is disabled\n"
    finally:
        fake.close()
