"""The doubles' scratch folders: private, named after the process that made them, and reaped
once it is gone (a killed fake lane leaves its job directories behind; the next run removes
them, and never a live process's)."""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from pytest_stacks import places
from pytest_stacks.processes import process_start_time


@pytest.fixture(autouse=True)
def _own_tmpdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() caches its answer


def test_the_folder_names_its_process_and_is_private(tmp_path: Path) -> None:
    folder = places.scratch_folder("fake-slurm")
    assert folder.parent == tmp_path / f"pytest-stacks-{os.getuid()}-scratch"
    pid, start, prefix, _ = folder.name.split(".", 3)
    assert (int(pid), prefix) == (os.getpid(), "fake-slurm")
    assert start == process_start_time(os.getpid()) != ""
    assert oct(folder.parent.stat().st_mode & 0o777) == oct(0o700)


def test_a_dead_process_s_folder_is_reaped_and_a_live_one_s_is_not(tmp_path: Path) -> None:
    child = subprocess.run(
        [sys.executable, "-c", "from pytest_stacks import places; "
         "f = places.scratch_folder('fake-slurm'); (f / 'job.out').write_text('x'); print(f)"],
        capture_output=True, text=True, check=True, env={**os.environ, "TMPDIR": str(tmp_path)})
    dead = Path(child.stdout.strip())
    assert (dead / "job.out").exists(), "the child made its folder and exited without closing"
    alive = places.scratch_folder("fake-htcondor")
    stranger = alive.parent / "not-ours"
    stranger.mkdir()
    assert places.reap_dead_scratch() == [dead]
    assert not dead.exists()
    assert alive.is_dir() and stranger.is_dir()


def test_nothing_to_reap_makes_nothing() -> None:
    assert places.reap_dead_scratch() == []
    assert not (Path(tempfile.gettempdir()) / f"pytest-stacks-{os.getuid()}-scratch").exists()


def test_the_doubles_keep_their_files_there_and_remove_them_when_closed() -> None:
    from pytest_stacks.backends.htcondor.fake import FakeSchedd
    from pytest_stacks.backends.slurm.fake import FakeSlurmHost

    slurm, schedd = FakeSlurmHost(), FakeSchedd("23.9.6")
    for double in (slurm, schedd):
        assert double.root.name.startswith(f"{os.getpid()}."), double.root
        double.close()
        assert not double.root.exists()
