"""The Slurm driver's partition knobs (``backend_options["partition"]`` and
``["memory_mb"]``): what reaches sbatch, and bad values refused per job, naming the key."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest

from pytest_stacks.backends.slurm.driver import SlurmClient
from pytest_stacks.backends.slurm.fake import FakeSlurmHost
from pytest_stacks.contract import JobSpec
from pytest_stacks.transports import CommandResult


class _Recording:
    """A transport that keeps every argv and answers sbatch with a job id."""

    def __init__(self) -> None:
        self.argvs: list[list[str]] = []

    def run(self, argv: Sequence[str], *, user: str | None = None,
            timeout: float = 60.0) -> CommandResult:
        self.argvs.append(list(argv))
        return CommandResult(tuple(argv), 0, "42\n", "")

    def put_files(self, directory: str, files: Mapping[str, bytes], *, user: str,
                  mode: int = 0o644) -> None:
        return None

    def get_files(self, directory: str, names: Sequence[str]) -> dict[str, bytes]:
        return {}


def _sbatch(options: dict[str, object]) -> list[str]:
    transport = _Recording()
    [result] = SlurmClient(transport, "s").submit(
        [JobSpec("true\n", backend_options=options)])
    assert result.ok, result.error
    [argv] = [a for a in transport.argvs if a[0] == "sbatch"]
    return argv


def test_the_partition_and_memory_reach_sbatch() -> None:
    argv = _sbatch({"partition": "short", "memory_mb": 512})
    assert "--partition=short" in argv and "--mem=512M" in argv, argv
    plain = _sbatch({})
    assert not [a for a in plain if a.startswith(("--partition", "--mem"))], plain


@pytest.mark.parametrize(("options", "named"), [
    ({"partition": "short; rm -rf /"}, "backend_options['partition']"),
    ({"partition": 3}, "backend_options['partition']"),
    ({"memory_mb": "512"}, "backend_options['memory_mb']"),
    ({"memory_mb": 0}, "backend_options['memory_mb']"),
    ({"memory_mb": True}, "backend_options['memory_mb']"),
])
def test_a_bad_value_refuses_that_job_only_naming_the_key(options: dict[str, object],
                                                          named: str) -> None:
    fake = FakeSlurmHost("24.11.5")
    try:
        bad, good = SlurmClient(fake, "fake").submit(
            [JobSpec("true\n", backend_options=options), JobSpec("true\n")])
        assert not bad.ok and named in bad.error, bad
        assert good.ok, good.error
    finally:
        fake.close()


def test_a_partition_the_stack_lacks_gets_slurms_refusal() -> None:
    fake = FakeSlurmHost("24.11.5")
    try:
        [refused] = SlurmClient(fake, "fake").submit(
            [JobSpec("true\n", backend_options={"partition": "short"})])
        assert not refused.ok and "Invalid partition name specified" in refused.error, refused
    finally:
        fake.close()
