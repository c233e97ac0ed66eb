"""A run whose evidence cannot be written fails, naming the path and the OS error; a run
whose CI variables the results file could not carry is refused when it starts (pytester).
Issue 59: ``--stack-results=/dev/full`` printed ``results: /dev/full``, ``1 passed``, exit 0;
``PYTEST_STACKS_CI_LANE='nightly; rm -rf /'`` landed in ``run.ci_lane``."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.manifests import Project, fake_slurm
from tests.unit.refusing_disk import REFUSALS, SAID, full_disk, leftovers, refusing

pytest_plugins = ["pytester"]

MANIFEST = fake_slurm(anchor="20.11", leading_edge="24.11")

TESTS = """
import pytest

@pytest.mark.requires("submit")
def test_submits(backend, stack):
    pass
"""


PROJECT = Project(MANIFEST, pyfiles={"test_user": TESTS})


@pytest.mark.parametrize("kind", REFUSALS)
def test_a_results_file_that_cannot_be_written_fails_the_run(
        project: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        kind: str) -> None:
    folder = refusing(kind, tmp_path, monkeypatch)
    target = folder / "results.json"
    result = project.runpytest_inprocess("--stack=fake-slurm", f"--stack-results={target}",
                                         "-p", "no:randomly")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert f"results: {target}" not in out, "a results file it did not write"
    [line] = [x for x in out.splitlines() if str(target) in x]
    assert SAID[kind] in line, line
    assert not target.exists() and leftovers(folder) == []


@pytest.mark.parametrize("kind", ["full", "a-folder-in-the-way"])
def test_allure_files_that_cannot_be_written_fail_the_run(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, kind: str) -> None:
    pytest.importorskip("allure_pytest")
    alluredir = project.path / "allure-results"
    alluredir.mkdir()
    blocked = alluredir / "environment.properties"
    if kind == "full":  # allure-pytest's own files are written by it, not through os.write
        full_disk(monkeypatch, alluredir)
    else:  # a folder where our file goes (EISDIR, root included)
        blocked.mkdir()
        (blocked / "x").write_text("")
    result = project.runpytest_inprocess("--stack=fake-slurm", f"--alluredir={alluredir}",
                                         "-p", "no:randomly")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert any(str(blocked) in line for line in out.splitlines()), out


def test_a_ci_lane_the_results_file_cannot_carry_is_refused_at_start(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTEST_STACKS_CI_LANE", "nightly; rm -rf /")
    result = project.runpytest_inprocess("--stack=fake-slurm", "-p", "no:randomly")
    err = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stdout.str() + err
    assert "PYTEST_STACKS_CI_LANE='nightly; rm -rf /'" in err and "pr, full or canary" in err
    assert not (project.path / ".pytest-stacks" / "results.json").exists()


@pytest.mark.parametrize(("variable", "value", "said"), [
    ("PYTEST_STACKS_CI_PLAN", "not-a-digest", "run.plan.digest"),
    ("PYTEST_STACKS_CI_LANE", "x" * 5000, "(5000 chars)"),
])
def test_other_ci_variables_are_checked_by_the_results_schema(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, variable: str, value: str,
        said: str) -> None:
    monkeypatch.setenv(variable, value)
    result = project.runpytest_inprocess("--stack=fake-slurm", "-p", "no:randomly")
    err = result.stderr.str()
    assert result.ret == pytest.ExitCode.USAGE_ERROR, err
    assert variable in err and said in err and len(err) < 2000


@pytest.mark.parametrize("lane", ["pr", "full", "canary"])
def test_a_documented_ci_lane_lands_in_the_results(project: pytest.Pytester,
                                                   monkeypatch: pytest.MonkeyPatch,
                                                   lane: str) -> None:
    monkeypatch.setenv("PYTEST_STACKS_CI_LANE", lane)
    result = project.runpytest_inprocess("--stack=fake-slurm", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    doc = json.loads((project.path / ".pytest-stacks" / "results.json").read_text())
    assert doc["run"]["ci_lane"] == lane


def test_a_timings_line_that_cannot_be_written_fails_the_run(
        project: pytest.Pytester, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_stacks import progress

    folder = full_disk(monkeypatch, tmp_path / "full")
    monkeypatch.setenv(progress.TIMINGS_ENV, str(folder / "timings.jsonl"))
    monkeypatch.setattr(progress, "_lost", [])
    project.makepyfile(test_timed="""
import pytest
from pytest_stacks import progress

@pytest.mark.requires("submit")
def test_a_timed_step(backend, stack):
    with progress.step("a bring-up step"):
        pass
""")
    result = project.runpytest_inprocess("--stack=fake-slurm", "-p", "no:randomly")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.TESTS_FAILED, out
    assert any(str(folder / "timings.jsonl") in line and "ENOSPC" in line
               for line in out.splitlines()), out
