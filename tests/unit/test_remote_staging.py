"""How the drivers turn a job's remote files into what the resource runs: the URL and name
checks, the Slurm batch script's staging (run for real with a stand-in curl), HTCondor's
submit commands."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pytest_stacks.backends import remote_files
from pytest_stacks.backends.htcondor.translate import describe_job
from pytest_stacks.backends.slurm import staging
from pytest_stacks.contract import JobSpec

URL = "s3://store.pytest-stacks.test/jobs/in/a1.bin"
OUT = "s3://store.pytest-stacks.test/jobs/out/r.bin"
CREDS = "/run/pytest-stacks/store-credentials/store"


@pytest.mark.parametrize(("spec", "problem"), [
    (JobSpec("true", remote_inputs={"x": "s3://store/jobs/k"}, credentials=CREDS),
     "dotted HOST"),
    (JobSpec("true", remote_inputs={"x": "https://store.example/jobs/k"}, credentials=CREDS),
     "is not s3://"),
    (JobSpec("true", remote_inputs={"../x": URL}, credentials=CREDS), "plain name"),
    (JobSpec("true", remote_outputs={"x": "s3://store.example/jobs/k'; rm -rf /"},
             credentials=CREDS), "is not s3://"),
    (JobSpec("true", remote_inputs={"x": URL}), "need credentials"),
    (JobSpec("true", remote_inputs={"x": URL}, credentials="store"), "absolute path"),
    (JobSpec("true", remote_inputs={"x": URL}, credentials="/run/../etc"), "no '.' or '..'"),
    (JobSpec("true", remote_outputs={"-": OUT}, credentials=CREDS), "not first '-'"),
])
def test_what_cannot_be_staged_is_refused_with_the_reason(spec: JobSpec, problem: str) -> None:
    with pytest.raises(ValueError, match=problem):
        remote_files.check(spec)


def test_a_job_without_remote_files_is_the_plain_script() -> None:
    script = staging.staged(JobSpec("echo hi\n"), "export A=1\n")
    assert script == "#!/bin/bash\nexport A=1\necho hi\n\n"


def _run_staged(tmp_path: Path, spec: JobSpec, curl_exit: int = 0) -> tuple[int, str, str]:
    """The batch script, run with a curl that records its arguments and copies files."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "curl").write_text(
        '#!/bin/bash\necho "$*" >> "$CURL_LOG"\n'
        'while [ $# -gt 0 ]; do case "$1" in -o) out=$2; shift;; -T) up=$2; shift;; esac; '
        'shift; done\n'
        f'[ {curl_exit} = 0 ] || {{ echo "<Code>AccessDenied</Code>" > "$out"; '
        'echo "curl: (22) 403" >&2; exit 22; }\n'
        '[ -n "${up:-}" ] && cp "$up" "$UPLOADED"; [ "${out:-}" != /dev/null ] && '
        '[ -n "${out:-}" ] && echo downloaded > "$out"; exit 0\n')
    (bin_dir / "curl").chmod(0o755)
    creds = tmp_path / "creds"
    creds.mkdir()
    (creds / "access_key").write_text("AK")
    (creds / "secret_key").write_text("SECRET")
    spec = JobSpec(spec.script, remote_inputs=spec.remote_inputs,
                   remote_outputs=spec.remote_outputs, credentials=str(creds))
    script = tmp_path / "job.sh"
    script.write_text(staging.staged(spec, ""))
    work = tmp_path / "work"
    work.mkdir()
    env = {**os.environ, "PATH": f"{bin_dir}:{os.environ['PATH']}",
           "CURL_LOG": str(tmp_path / "curl.log"), "UPLOADED": str(tmp_path / "uploaded")}
    done = subprocess.run(["bash", str(script)], cwd=work, env=env, capture_output=True,
                          text=True, timeout=30)
    log = (tmp_path / "curl.log").read_text() if (tmp_path / "curl.log").exists() else ""
    return done.returncode, done.stderr, log


def test_the_batch_script_downloads_runs_uploads_and_keeps_the_payloads_exit(
        tmp_path: Path) -> None:
    spec = JobSpec("cat input.bin > result.bin\nexit 3\n", remote_inputs={"input.bin": URL},
                   remote_outputs={"result.bin": OUT})
    code, err, log = _run_staged(tmp_path, spec)
    assert code == 3, err
    get, put = log.splitlines()
    assert "https://store.pytest-stacks.test/jobs/in/a1.bin" in get and "-o input.bin" in get
    assert "https://store.pytest-stacks.test/jobs/out/r.bin" in put and "-T result.bin" in put
    assert "SECRET" not in log, "the secret reached curl's command line"
    assert (tmp_path / "uploaded").read_text() == "downloaded\n"


def test_a_failed_download_ends_the_job_before_its_payload(tmp_path: Path) -> None:
    spec = JobSpec("touch ran\n", remote_inputs={"input.bin": URL})
    code, err, _ = _run_staged(tmp_path, spec, curl_exit=22)
    assert code == staging.STAGE_IN_FAILED
    assert "staging input.bin in from" in err and "403" in err
    assert "<Code>AccessDenied</Code>" in err, "the store's own answer is not on stderr"
    assert not (tmp_path / "work" / "ran").exists()
    assert list((tmp_path / "work").iterdir()) == [], "a partial download was left behind"


@pytest.mark.parametrize(("payload", "expected"), [
    ("touch result.bin\n", staging.STAGE_OUT_FAILED),
    ("exit 3\n", 3),  # the payload's own failure is the job's, not the upload's
    ("# nothing but a comment\n", staging.STAGE_OUT_FAILED),
])
def test_a_failed_upload_fails_the_job_but_keeps_a_payloads_own_exit_code(
        tmp_path: Path, payload: str, expected: int) -> None:
    spec = JobSpec(payload, remote_outputs={"result.bin": OUT})
    code, err, _ = _run_staged(tmp_path, spec, curl_exit=22)
    assert code == expected, err
    assert "staging result.bin out to" in err


def test_htcondor_gets_urls_remaps_and_the_key_files_by_path(tmp_path: Path) -> None:
    spec = JobSpec("true\n", inputs={"local.txt": b"x"}, remote_inputs={"input.bin": URL},
                   outputs=("digest.txt",), remote_outputs={"result.bin": OUT},
                   credentials=CREDS)
    description = describe_job(spec, tmp_path / "job", None)
    assert description["transfer_input_files"].split(",")[1:] == [URL]
    assert description["transfer_output_files"] == "digest.txt,result.bin"
    assert description["transfer_output_remaps"] == f'"result.bin = {OUT}"'
    assert description["aws_access_key_id_file"] == f"{CREDS}/access_key"
    assert description["aws_secret_access_key_file"] == f"{CREDS}/secret_key"
    script = (tmp_path / "job").glob("*.sh")
    assert any("mv -f -- a1.bin input.bin" in p.read_text() for p in script)


def test_htcondor_refuses_inputs_that_would_land_under_one_name(tmp_path: Path) -> None:
    spec = JobSpec("true\n", remote_inputs={"a": URL, "b": URL.replace("/in/", "/other/")},
                   credentials=CREDS)
    with pytest.raises(ValueError, match="same name"):
        describe_job(spec, tmp_path / "job", None)
