"""fake-htcondor's command line (``FakeSchedd.commands``, issue 55 item 3): condor_submit,
condor_q, condor_history, condor_rm and condor_transfer_data over the same schedd the
bindings-shaped interface drives. The jobs run for real."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_stacks.backends.htcondor.fake import FakeSchedd
from pytest_stacks.backends.htcondor.fake.submit_file import SubmitFileError, read_submit_file

SUBMIT = """\
# a comment
universe = vanilla
executable = job.sh
should_transfer_files = YES
transfer_output_files = out.txt
output = job.out
queue
"""


@pytest.fixture
def schedd(tmp_path: Path) -> Iterator[FakeSchedd]:
    fake = FakeSchedd("23.9.6", periodic_expr_interval=0.05)
    fake.commands.share(tmp_path)
    (tmp_path / "job.sh").write_text("#!/bin/sh\necho out > out.txt\necho stdout\n")
    (tmp_path / "job.sh").chmod(0o755)
    (tmp_path / "job.sub").write_text(SUBMIT)
    yield fake
    fake.close()


def _wait(schedd: FakeSchedd, argv: list[str], text: str) -> str:
    for _ in range(200):
        out = schedd.commands.run(argv).stdout
        if text in out:
            return out
        time.sleep(0.05)
    raise AssertionError(f"{argv} never printed {text!r}")


def test_submit_then_history_as_clients_read_them(schedd: FakeSchedd, tmp_path: Path) -> None:
    submitted = schedd.commands.run(["condor_submit", "job.sub"], cwd=str(tmp_path))
    assert submitted.stdout == "Submitting job(s).\n1 job(s) submitted to cluster 1.\n"
    assert _wait(schedd, ["condor_history", "1", "-af", "JobStatus", "ExitCode"], "4") == "4 0\n"
    # Not spooled: the job left the queue, its outputs are where its files came from.
    assert schedd.commands.run(["condor_q", "1.0", "-af", "JobStatus"]).stdout == ""
    assert (tmp_path / "out.txt").read_text() == "out\n"
    assert (tmp_path / "job.out").read_text() == "stdout\n"
    ads = json.loads(schedd.commands.run(
        ["condor_history", "-json", "-attributes", "ClusterId,JobStatus", "1"]).stdout)
    assert ads == [{"ClusterId": 1, "JobStatus": 4}]


def test_spooled_job_stays_until_its_data_is_fetched(schedd: FakeSchedd,
                                                     tmp_path: Path) -> None:
    out = schedd.commands.run(["condor_submit", "-terse", "-spool"], cwd=str(tmp_path),
                              stdin=SUBMIT)
    assert out.stdout == "1.0 - 1.0\n"
    _wait(schedd, ["condor_q", "1.0", "-af", "JobStatus"], "4")
    assert not (tmp_path / "out.txt").exists()
    fetched = schedd.commands.run(["condor_transfer_data", "1.0"])
    assert fetched.ok
    assert (tmp_path / "out.txt").read_text() == "out\n"
    assert schedd.commands.run(["condor_q", "-format", "%d.", "ClusterId", "-format",
                                "%d\\n", "ProcId"]).stdout == "1.0\n"


def test_rm_of_known_and_unknown_jobs(schedd: FakeSchedd, tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text("#!/bin/sh\nsleep 60\n")
    schedd.commands.run(["condor_submit", "job.sub"], cwd=str(tmp_path))
    removed = schedd.commands.run(["condor_rm", "1"])
    assert (removed.returncode, removed.stdout) == (
        0, "All jobs in cluster 1 have been marked for removal\n")
    unknown = schedd.commands.run(["condor_rm", "77.0"])
    assert (unknown.returncode, unknown.stderr) == (1, "\nJob 77.0 not found\n")


def test_unknown_tool_and_option(schedd: FakeSchedd) -> None:
    assert schedd.commands.run(["condor_qedit"]).returncode == 127
    bogus = schedd.commands.run(["condor_q", "-bogus"])
    assert bogus.returncode == 1 and "-bogus" in bogus.stderr


def test_submit_file_language() -> None:
    parsed = read_submit_file("a = 1\nB = two \\\n  words\n+Custom = \"x\"\nqueue 3\nc = late\n")
    assert parsed.description == {"a": "1", "b": "two words", "+Custom": '"x"'}
    assert parsed.count == 3
    with pytest.raises(SubmitFileError, match="queue 3 from"):
        read_submit_file("queue 3 from list.txt\n")
