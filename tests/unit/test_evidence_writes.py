"""Every writer of evidence lands its file whole or fails naming the path and the OS error:
on a full disk, under a regular file (fails as root too) and in a read-only folder (not as
root). Issue 59, item 1. The plugin's side (a run fails, its summary says why) is in
tests/plugin/test_evidence_refused.py."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path

import pytest

from pytest_stacks import cli, evidence, places, progress
from pytest_stacks.evidence import EvidenceError, append_line, write_whole
from pytest_stacks.lifecycle.rundir import OWNER_FILE, RunDirectory
from pytest_stacks.parity.provenance import Provenance
from pytest_stacks.parity.store import Recording
from pytest_stacks.plugin.allure import write_categories, write_environment
from pytest_stacks.providers import kind_owners
from pytest_stacks.providers.base import RunContext
from pytest_stacks.verdicts.results import write_atomic
from tests.unit.refusing_disk import REFUSALS, SAID, leftovers, refusing


def _refused(caught: pytest.ExceptionInfo[BaseException], path: Path, kind: str) -> None:
    said = str(caught.value)
    assert str(path) in said, said
    assert SAID[kind] in said, said
    assert "Traceback" not in said


@pytest.mark.parametrize("kind", REFUSALS)
def test_a_whole_file_lands_whole_or_names_its_path(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch,
                                                    kind: str) -> None:
    folder = refusing(kind, tmp_path, monkeypatch)
    target = folder / "evidence.json"
    with pytest.raises(EvidenceError) as caught:
        write_whole(target, "{}\n", what="test file")
    _refused(caught, target, kind)
    assert not target.exists() and leftovers(folder) == []


def test_an_old_file_is_kept_whole_when_its_replacement_cannot_be_written(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    folder = tmp_path / "full"
    folder.mkdir()
    target = folder / "results.json"
    target.write_text('{"old": true}\n')
    refusing("full", tmp_path, monkeypatch)
    with pytest.raises(EvidenceError):
        write_whole(target, '{"new": true}\n', what="results file")
    assert target.read_text() == '{"old": true}\n', "half a new file over the old one"
    assert leftovers(folder) == [target]


def test_a_short_write_is_finished_not_taken_as_done(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    real = os.write

    def one_byte(fd: int, data: bytes | memoryview) -> int:
        return real(fd, bytes(data[:1]))

    monkeypatch.setattr(os, "write", one_byte)
    write_whole(tmp_path / "f", "whole\n", what="test file")
    assert (tmp_path / "f").read_text() == "whole\n"


@pytest.mark.skipif(not os.path.exists("/dev/full")
                    or not stat.S_ISCHR(os.stat("/dev/full").st_mode),
                    reason="this machine has no /dev/full device (the ENOSPC patch stands in)")
def test_the_real_full_device_is_refused_and_left_a_device() -> None:
    with pytest.raises(EvidenceError) as caught:
        write_whole(Path("/dev/full"), "x" * 10_000, what="results file")
    assert "/dev/full" in str(caught.value) and "ENOSPC" in str(caught.value)
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode), "renamed over the device"


@pytest.mark.parametrize("kind", REFUSALS)
def test_results_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    folder = refusing(kind, tmp_path, monkeypatch)
    with pytest.raises(EvidenceError) as caught:
        write_atomic(folder / "results.json", "{}\n")
    _refused(caught, folder / "results.json", kind)


@pytest.mark.parametrize("kind", REFUSALS)
@pytest.mark.parametrize("writer", ["environment", "categories"])
def test_allure_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str,
                      writer: str) -> None:
    folder = refusing(kind, tmp_path, monkeypatch)
    target = folder / ("environment.properties" if writer == "environment"
                       else "categories.json")
    with pytest.raises(EvidenceError) as caught:
        if writer == "environment":
            write_environment(target, {"stack": "fake-slurm"})
        else:
            write_categories(target)
    _refused(caught, target, kind)


@pytest.mark.parametrize("kind", REFUSALS)
def test_parity_recording(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    folder = refusing(kind, tmp_path, monkeypatch)
    made = Provenance.read(None)
    recording = Recording("s", "slurm", {"daemon": "1"}, "t", made,
                          [{"name": "submit", "exchanges": []}])
    with pytest.raises(EvidenceError) as caught:
        recording.write(folder / "recordings" / "s.json")
    _refused(caught, folder / "recordings" / "s.json", kind)
    assert leftovers(folder) in ([], [folder / "recordings"])


@pytest.fixture
def private_places(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)
    return folder


@pytest.mark.parametrize("kind", REFUSALS)
def test_kept_run_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                         private_places: Path, kind: str) -> None:
    folder = refusing(kind, tmp_path, monkeypatch)
    monkeypatch.setenv("XDG_STATE_HOME", str(folder))
    with pytest.raises(EvidenceError) as caught:
        places.mark_kept("run-1", tmp_path / "run-1", ["slurm-24.11"], "pytest-stacks up")
    said = str(caught.value)
    assert str(folder) in said and SAID[kind] in said, said
    assert "run-1" in said


@pytest.mark.parametrize("kind", REFUSALS)
def test_kind_cluster_owner_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                   kind: str) -> None:
    folder = refusing(kind, tmp_path, monkeypatch)
    with pytest.raises(EvidenceError) as caught:
        kind_owners.record_owner(folder, "pst-abc-s", run_id="r", pid=1, start="0",
                                 kind=Path("/k"), stack="s")
    _refused(caught, kind_owners.owner_file(folder, "pst-abc-s"), kind)


def test_run_directory_owner_record(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    private_places: Path) -> None:
    # Only the full disk: the run directory itself is made first, so a folder that cannot
    # hold it fails before its owner record is reached (that mkdir's error is the run's).
    folder = refusing("full", tmp_path, monkeypatch)
    ctx = RunContext.for_this_process("run-1", folder / "run-1", "pinned")
    with pytest.raises(EvidenceError) as caught:
        RunDirectory(ctx).ensure()
    _refused(caught, folder / "run-1" / OWNER_FILE, "full")
    assert not (folder / "run-1" / OWNER_FILE).exists()


@pytest.mark.parametrize("kind", REFUSALS)
def test_timings_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    folder = refusing(kind, tmp_path, monkeypatch)
    with pytest.raises(EvidenceError) as caught:
        append_line(folder / "timings.jsonl", "{}", what="timings file")
    _refused(caught, folder / "timings.jsonl", kind)


def test_a_lost_timings_line_fails_the_command_naming_the_file(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    folder = refusing("full", tmp_path, monkeypatch)
    monkeypatch.setenv(progress.TIMINGS_ENV, str(folder / "timings.jsonl"))
    monkeypatch.setattr(progress, "_lost", [])
    with progress.step("a build"):  # the step itself is not failed by its timing
        pass
    [lost] = progress.lost_writes()
    assert str(folder / "timings.jsonl") in lost and "ENOSPC" in lost
    code = cli.main(["timings", str(tmp_path / "other.jsonl")])
    err = capsys.readouterr().err
    assert code != 0 and str(folder / "timings.jsonl") in err


def test_errno_names_are_said() -> None:
    assert evidence.describe(OSError(28, "No space left on device")) == \
        "No space left on device (ENOSPC)"
