"""A stack without a shared file system (``options.shared_fs: false``): the compose override
that gives each node its own job area, the run's shared folder kept to the login node, and the
Slurm driver that ships a job's inputs in its batch script (run here for real with bash) and
refuses what could never come back."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path

import pytest
import yaml

from pytest_stacks.backends import shared_fs
from pytest_stacks.backends.slurm import unshared
from pytest_stacks.backends.slurm.driver import SCRIPT_NAME, SlurmClient
from pytest_stacks.contract import JobSpec, JobState, JobStatus
from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import Stack, load
from pytest_stacks.providers import shared_folder, unshared_fs
from pytest_stacks.transports import CommandResult

ROOT = Path(__file__).resolve().parents[2]
NOSHARE, SHARED = "slurm-26.05-cluster-noshare", "slurm-26.05-cluster-ssh"


def _stack(name: str) -> Stack:
    return load(ROOT / "manifest.yaml").get(name)


def _source(stack: Stack) -> dict[str, object]:
    assert stack.compose is not None
    return yaml.safe_load((stack.compose.directory / "compose.yaml").read_text())


def test_each_node_and_the_login_node_get_their_own_job_area() -> None:
    stack = _stack(NOSHARE)
    part = unshared_fs.override(stack, _source(stack), {"run": "r"})
    assert sorted(part["services"]) == ["login", "node1", "node2"]  # not ctld, not jump
    for name, service in part["services"].items():
        assert service["volumes"] == [{"type": "volume", "source": f"{name}-work",
                                       "target": "/work"}]
    assert sorted(part["volumes"]) == ["login-work", "node1-work", "node2-work"]
    assert all(v == {"labels": {"run": "r"}} for v in part["volumes"].values())


def test_a_shared_stack_keeps_its_one_job_area() -> None:
    stack = _stack(SHARED)
    assert shared_fs.shared(stack)
    assert unshared_fs.override(stack, _source(stack), {}) == {}


def test_the_runs_shared_folder_reaches_only_the_login_node_without_a_shared_fs(
        tmp_path: Path) -> None:
    services = ["ctld", "node1", "node2", "login", "jump"]
    unshared_part = shared_folder.override(_stack(NOSHARE), tmp_path, services)
    assert list(unshared_part["services"]) == ["login"]
    assert list(shared_folder.override(_stack(SHARED), tmp_path, services)["services"]) == \
        services


@pytest.mark.parametrize("value", ["no", 0, None, [False]])
def test_an_option_that_is_not_a_boolean_is_refused_by_name(value: object) -> None:
    stack = dataclasses.replace(_stack(SHARED), options={"shared_fs": value})
    with pytest.raises(StacksError, match=r"options\.shared_fs must be true or false"):
        shared_fs.shared(stack)


def test_a_stack_with_no_job_area_to_split_is_refused() -> None:
    stack = dataclasses.replace(_stack(NOSHARE))
    with pytest.raises(StacksError, match="no service of its compose file mounts anything"):
        unshared_fs.override(stack, {"services": {"a": {"volumes": ["x:/data"]}}}, {})


def test_the_batch_script_makes_the_directory_and_unpacks_the_inputs(tmp_path: Path) -> None:
    """Run with bash, as the node would: the inputs byte for byte in the job's own new
    directory, the payload run there, its exit code the job's."""
    blob = os.urandom(70_000) + b"\x00\r\n__PYTEST_STACKS_INPUT__\n"
    workdir = tmp_path / "jobs" / "abc"
    spec = JobSpec(script="sha256sum blob.bin > digest.txt\ncat note.txt > copy.txt\nexit 5\n",
                   inputs={"blob.bin": blob, "note.txt": b"it's $HOME `id`\n"},
                   env={"A": "x y"})
    text = unshared.script(spec, str(workdir), "export A='x y'\n")
    assert text.startswith("#!/bin/bash\n")
    done = subprocess.run(["bash", "-c", text], cwd=tmp_path, capture_output=True, timeout=60)
    assert done.returncode == 5, done.stderr
    assert (workdir / "blob.bin").read_bytes() == blob
    assert (workdir / "digest.txt").read_text().split()[0] == hashlib.sha256(blob).hexdigest()
    assert (workdir / "copy.txt").read_bytes() == b"it's $HOME `id`\n"


def test_a_directory_the_node_cannot_make_ends_the_job_before_its_payload(
        tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("")
    text = unshared.script(JobSpec(script="touch ran\n"), f"{blocker}/abc", "")
    done = subprocess.run(["bash", "-c", text], cwd=tmp_path, capture_output=True, timeout=60)
    assert done.returncode == unshared.WORKDIR_FAILED
    assert b"cannot make" in done.stderr
    assert not (tmp_path / "ran").exists()


def test_inputs_over_slurms_script_limit_are_refused_with_the_way_out() -> None:
    spec = JobSpec(script="true\n", inputs={"big.bin": b"\0" * unshared.MAX_SCRIPT})
    with pytest.raises(ValueError, match=r"max_script_size.*remote_inputs"):
        unshared.script(spec, "/work/jobs/x", "")


class Recorder:
    """A login node that answers sbatch with a job id and keeps what was written."""

    def __init__(self) -> None:
        self.written: dict[str, dict[str, bytes]] = {}
        self.commands: list[tuple[str, ...]] = []

    def run(self, argv: Sequence[str], *, user: str | None = None,
            timeout: float = 60.0) -> CommandResult:
        self.commands.append(tuple(argv))
        out = "4242\n" if argv[0] == "sbatch" else ""
        return CommandResult(tuple(argv), 0, out, "")

    def put_files(self, directory: str, files: Mapping[str, bytes], *, user: str,
                  mode: int = 0o644) -> None:
        self.written[directory] = dict(files)

    def get_files(self, directory: str, names: Sequence[str]) -> dict[str, bytes]:
        raise AssertionError("nothing is read back from the login node's job directory")


def test_the_driver_writes_only_the_script_and_starts_the_job_in_the_job_root() -> None:
    login = Recorder()
    client = SlurmClient(login, "s", shared_fs=False)
    [result] = client.submit([JobSpec(script="true\n", inputs={"in.txt": b"hi"})])
    assert result.ok, result.error
    [(workdir, files)] = login.written.items()
    assert list(files) == [SCRIPT_NAME], "an input written on the login node never reaches a node"
    assert b"base64 -d > in.txt" in files[SCRIPT_NAME]
    sbatch = next(c for c in login.commands if c[0] == "sbatch")
    name = workdir.rsplit("/", 1)[1]
    assert "--chdir=/work/jobs" in sbatch
    assert f"--output=/work/jobs/{name}.slurm-%j.out" in sbatch


@pytest.mark.parametrize(("spec", "words"), [
    (JobSpec(script="true\n", outputs=("out.txt",)), "remote_outputs"),
    (JobSpec(script="true\n", container="docker.io/library/debian:trixie-slim"), "container"),
    (JobSpec(script="true\n", inputs={"../x": b""}), "plain name"),
])
def test_what_could_not_work_without_a_shared_fs_is_refused_at_submit(spec: JobSpec,
                                                                     words: str) -> None:
    login = Recorder()
    [result] = SlurmClient(login, "s", shared_fs=False).submit([spec])
    assert not result.ok and words in result.error, result.error
    assert not login.written and not login.commands


def test_purge_says_the_nodes_directory_is_out_of_reach() -> None:
    login = Recorder()
    client = SlurmClient(login, "s", shared_fs=False)
    [submitted] = client.submit([JobSpec(script="true\n")])
    assert submitted.handle is not None
    client.status = lambda handles: [  # type: ignore[method-assign]
        JobStatus(h, JobState.COMPLETED, "COMPLETED", 0, "") for h in handles]
    [purged] = client.purge([submitted.handle])
    assert not purged.ok and "out of the login node's reach" in purged.error
    assert not any(c[0] == "rm" for c in login.commands)
