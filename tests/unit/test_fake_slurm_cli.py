"""fake-slurm's command line follows the real tools' option grammar (issue 55 item 3).

Each case is a command line a client sends; the expected answers are what the pinned daemons
printed (tests/parity/recordings/*.corpus.json, tests/data/slurm). The jobs run for real.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_stacks.backends.slurm.fake import FakeSlurmHost
from pytest_stacks.backends.slurm.fake_options import Option, OptionError, parse
from pytest_stacks.backends.slurm.fake_sbatch import directives


@pytest.fixture
def host(tmp_path: Path) -> Iterator[FakeSlurmHost]:
    fake = FakeSlurmHost("24.11.5", min_job_age=300)
    fake.share(tmp_path)
    yield fake
    fake.close()


def _sbatch(host: FakeSlurmHost, *argv: str, cwd: Path, stdin: str = "") -> int:
    result = host.run(["sbatch", "--parsable", *argv], user="submitter", cwd=str(cwd),
                      stdin=stdin)
    assert result.ok, result.stderr
    return int(result.stdout)


def _done(host: FakeSlurmHost, job: int) -> str:
    for _ in range(200):
        state = host.run(["squeue", "-h", "-t", "all", "-o", "%T", "-j",
                          str(job)]).stdout.strip()
        if state in ("COMPLETED", "FAILED", "CANCELLED"):
            return state
        time.sleep(0.05)
    raise AssertionError(f"job {job} never ended")


@pytest.mark.parametrize("argv", [["--wrap=echo hi"], ["--wrap", "echo hi"]])
def test_wrap_takes_its_command_either_way(host: FakeSlurmHost, tmp_path: Path,
                                           argv: list[str]) -> None:
    job = _sbatch(host, *argv, cwd=tmp_path)
    assert _done(host, job) == "COMPLETED"
    assert (tmp_path / f"slurm-{job}.out").read_text() == "hi\n"


def test_a_short_option_takes_the_next_word_not_the_script(host: FakeSlurmHost,
                                                           tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text("#!/bin/sh\necho named $SLURM_JOB_NAME\n")
    job = _sbatch(host, "-J", "x", "job.sh", cwd=tmp_path)
    _done(host, job)
    assert (tmp_path / f"slurm-{job}.out").read_text() == "named x\n"


def test_sbatch_lines_apply_and_the_command_line_wins(host: FakeSlurmHost,
                                                      tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text(
        "#!/bin/sh\n\n#SBATCH -J inline\n#SBATCH --output=%x-%j.log\necho $SLURM_JOB_NAME\n"
        "#SBATCH -J ignored-after-the-first-command\n")
    inline = _sbatch(host, "job.sh", cwd=tmp_path)
    overridden = _sbatch(host, "--job-name=cli", "job.sh", cwd=tmp_path)
    _done(host, inline), _done(host, overridden)
    assert (tmp_path / f"inline-{inline}.log").read_text() == "inline\n"
    assert (tmp_path / f"cli-{overridden}.log").read_text() == "cli\n"


def test_the_script_comes_from_stdin_when_no_file_is_named(host: FakeSlurmHost,
                                                           tmp_path: Path) -> None:
    job = _sbatch(host, cwd=tmp_path, stdin="#!/bin/sh\necho from stdin\n")
    _done(host, job)
    assert (tmp_path / f"slurm-{job}.out").read_text() == "from stdin\n"


def test_squeue_noheader_and_format_fields(host: FakeSlurmHost, tmp_path: Path) -> None:
    job = _sbatch(host, "-J", "fields", "--wrap", "exit 3", cwd=tmp_path)
    _done(host, job)
    assert host.run(["squeue", "-h", "-t", "all", "-o", "%T", "-j", str(job)]).stdout == \
        "FAILED\n"
    # Seen on 24.11: without -t, a finished job asked for by id is not listed (exit 0).
    quiet = host.run(["squeue", "-h", "-o", "%T", "-j", str(job)])
    assert (quiet.returncode, quiet.stdout) == (0, "")
    shown = host.run(["squeue", "-t", "all", "-j", str(job), "-o", "%.6i|%j|%u|%P|%t|%r"])
    assert shown.stdout.splitlines() == [
        " JOBID|NAME|USER|PARTITION|ST|REASON",
        f"{job:>6}|fields|submitter|debug|F|NonZeroExitCode"]


def test_squeue_json_of_a_completed_job_as_24_11_answers(host: FakeSlurmHost,
                                                         tmp_path: Path) -> None:
    """Seen on slurm-24.11 (the corpus recording): ``squeue --json -j ID`` of a completed job
    lists no job (exit 0); with ``-t all`` it is listed while slurmctld holds it."""
    job = _sbatch(host, "--wrap", "true", cwd=tmp_path)
    _done(host, job)
    asked = host.run(["squeue", "--json", "-j", str(job)])
    assert (asked.returncode, json.loads(asked.stdout)["jobs"]) == (0, [])
    jobs = json.loads(host.run(["squeue", "--json", "-t", "all", "-j", str(job)]).stdout)["jobs"]
    assert [(j["job_id"], j["job_state"]) for j in jobs] == [(job, ["COMPLETED"])]


def test_sacct_without_accounting_storage_fails_as_the_stacks_do(host: FakeSlurmHost,
                                                                 tmp_path: Path) -> None:
    job = _sbatch(host, "--wrap", "true", cwd=tmp_path)
    result = host.run(["sacct", "-j", str(job), "-X", "-n", "-P", "-o", "State"],
                      user="submitter")
    assert (result.returncode, result.stdout, result.stderr) == (
        1, "", "Slurm accounting storage is disabled\n")


def test_sacct_c_honours_format_and_parsable(host: FakeSlurmHost, tmp_path: Path) -> None:
    job = _sbatch(host, "--wrap", "exit 2", cwd=tmp_path)
    _done(host, job)
    result = host.run(["sacct", "-c", "-nP", "-j", str(job), "--format=JobID,State,ExitCode"],
                      user="slurm")
    assert result.stdout == f"{job}|FAILED|2:0\n"


def test_scancel_by_name_ends_the_job(host: FakeSlurmHost, tmp_path: Path) -> None:
    job = _sbatch(host, "-J", "long", "--wrap", "sleep 60", cwd=tmp_path)
    assert host.run(["scancel", "-n", "long"]).ok
    assert _done(host, job) == "CANCELLED"


@pytest.mark.parametrize(("argv", "code", "stderr"), [
    (["squeue", "--bogus"], 1, "squeue: unrecognized option '--bogus'\n"),
    (["squeue", "-x"], 1, "squeue: invalid option -- 'x'\n"),
    # Seen on 24.11 (the corpus recording): sbatch exits 255 on a refused option.
    (["sbatch", "--wrap"], 255, "sbatch: option '--wrap' requires an argument\n"),
    (["squeue", "-j", "987654321"], 1, "slurm_load_jobs error: Invalid job id specified\n"),
])
def test_wrong_command_lines_get_the_tools_messages(host: FakeSlurmHost, argv: list[str],
                                                    code: int, stderr: str) -> None:
    result = host.run(argv)
    assert result.returncode == code
    assert result.stderr.splitlines()[0] == stderr.rstrip("\n")


def test_getopt_grammar_bundles_prefixes_and_stops_at_the_script() -> None:
    options = [Option("noheader", "h"), Option("parsable2", "P"), Option("jobs", "j", True)]
    parsed = parse("sacct", ["-hPj7", "--job", "8", "--", "-x"], options)
    assert parsed.options == {"noheader": [""], "parsable2": [""], "jobs": ["7", "8"]}
    assert parsed.operands == ["-x"]
    stopped = parse("sbatch", ["-h", "job.sh", "-j", "1"], options, stop_at_operand=True)
    assert stopped.operands == ["job.sh", "-j", "1"]
    with pytest.raises(OptionError, match="requires an argument"):
        parse("sacct", ["-j"], options)


def test_sbatch_directives_stop_at_the_first_command() -> None:
    assert directives("#!/bin/sh\n#SBATCH -J a # comment\n\n#SBATCH --time=5\necho\n"
                      "#SBATCH -p late\n") == ["-J", "a", "--time=5"]
