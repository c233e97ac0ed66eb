"""Which runs are kept is the same for every run of this user on the machine, whatever its
``TMPDIR``: reapers work from Docker's labels, which are machine-wide, so a run under another
``TMPDIR`` (another shell, a CI job beside this one) must see the record, or it reaps what a
person kept (seen: a fault test's kept pool reaped by the real window beside it)."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from pytest_stacks import places


def _tmpdir(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    folder.mkdir(exist_ok=True)
    monkeypatch.setenv("TMPDIR", str(folder))
    monkeypatch.setattr(tempfile, "tempdir", None)  # gettempdir() caches its answer


@pytest.fixture(autouse=True)
def _private_state(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))


def test_a_run_kept_under_one_tmpdir_is_kept_under_another(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    _tmpdir(monkeypatch, tmp_path / "a")
    places.mark_kept("run-1", places.up_root() / "run-1", ["slurm-24.11"], "pytest-stacks up")
    _tmpdir(monkeypatch, tmp_path / "b")
    assert list(places.kept_runs()) == ["run-1"]
    places.unmark_kept("run-1")
    assert places.kept_runs() == {}


def test_records_from_before_still_keep_their_runs(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """Records an older version wrote under TMPDIR are read too: an upgrade never turns a kept
    run into a dead one; down removes them from wherever they are."""
    _tmpdir(monkeypatch, tmp_path / "a")
    legacy = places.runs_root() / places.MARKS_FOLDER
    legacy.mkdir()
    (legacy / "old-run.json").write_text('{"run_dir": "/x", "stacks": ["s"], "why": "up"}')
    assert places.kept_runs()["old-run"]["stacks"] == ["s"]
    places.unmark_kept("old-run")
    assert places.kept_runs() == {}


def test_the_records_sit_in_a_folder_of_this_user_only(tmp_path: Path) -> None:
    assert places.state_root() == tmp_path / "state" / "pytest-stacks"
    assert places.state_root().stat().st_mode & 0o077 == 0


def test_down_ends_the_kept_runs_made_under_its_own_tmpdir_only(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Every TMPDIR sees every record (so nothing kept is reaped), but `down NAME` ends what was
    kept here: a fault test's private `down` never ends a person's kept stack of the same
    name."""
    import argparse

    from pytest_stacks.cli.stacks import cmd_down
    from pytest_stacks.providers import kind_owners, reaper

    swept: list[str] = []
    monkeypatch.setattr(reaper, "sweep_run", lambda run_id: swept.append(run_id) or [])
    monkeypatch.setattr(kind_owners, "reap", lambda *a, **k: [])
    for name in ("theirs", "mine"):
        _tmpdir(monkeypatch, tmp_path / name)
        run_dir = places.up_root() / name
        run_dir.mkdir(parents=True)
        places.mark_kept(name, run_dir, ["slurm-24.11"], "pytest-stacks up")
    assert cmd_down(argparse.Namespace(name="slurm-24.11", force=False)) == 0
    assert swept == ["mine"] and list(places.kept_runs()) == ["theirs"]
    assert "ended run mine" in capsys.readouterr().out
