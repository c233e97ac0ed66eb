"""What a run selected, as its results file records it, however the selection was made.

A table is only as good as the runs behind it. Paths and ``-k`` are not the only ways to run
fewer tests than the suite: ``-o testpaths=``, ``-c`` another ini, PYTEST_ADDOPTS, starting
pytest in a sub-folder, a conftest that deselects. Each must leave the run recorded as
partial, and the collected test ids are recorded so a merge can check them against the plan.
A run that ends early writes results that say so, and never leaves an older file standing.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.manifests import Project, manifest_of, stack

pytest_plugins = ["pytester"]

MANIFEST = manifest_of(
    stack("fake-slurm-20.11", "20.11.4", capabilities=("submit", "status")),
    windows={"slurm": ("20.11", "24.11"), "htcondor": ("23.9", "25.0")})

TESTS = """
import pytest

@pytest.mark.requires("submit", "status")
def test_runs(backend, stack):
    pass

@pytest.mark.requires("submit")
def test_submits(backend, stack):
    pass
"""

DEEP = """
import pytest

@pytest.mark.requires("submit", "status")
def test_deep(backend, stack):
    pass
"""

WHOLE = ["suite/deep/test_deep.py::test_deep[fake-slurm-20.11]",
         "suite/test_user.py::test_runs[fake-slurm-20.11]",
         "suite/test_user.py::test_submits[fake-slurm-20.11]"]


PROJECT = Project(MANIFEST, ini="stacks_manifest = manifest.yaml\ntestpaths = suite\n",
                  files={"suite/test_user.py": TESTS, "suite/deep/test_deep.py": DEEP})


def _run(project: pytest.Pytester) -> dict[str, Any]:
    doc = json.loads((project.path / ".pytest-stacks" / "results.json").read_text())
    return dict(doc["run"])


def _runs(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest("--stack=fake-slurm-20.11", "-p", "no:randomly", *args)


def test_a_whole_run_records_every_collected_test_and_no_deselection(
        project: pytest.Pytester) -> None:
    result = _runs(project)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    run = _run(project)
    assert run["partial"] is False, run
    assert run["collected"] == WHOLE
    assert run["deselected"] == 0


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_only_stack_tests_are_recorded_as_collected_for_a_stack(
        project: pytest.Pytester, workers: list[str]) -> None:
    """A test whose own parameter merely starts with a stack's name (``[fake-slurm-20.11-x]``)
    is no stack test: recorded as one, the report would want its outcome among the stack's
    and refuse the file (as it did the fake lane's ``test_every_fake_has_a_way_in``)."""
    (project.path / "suite" / "test_lookalike.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.parametrize('name', ['fake-slurm-20.11-x'])\n"
        "def test_lookalike(name):\n    assert name\n")
    result = _runs(project, *workers)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert _run(project)["collected"] == WHOLE


@pytest.mark.parametrize(("option", "reason"), [
    (["-o", "testpaths=suite/deep"], "-o testpaths=suite/deep"),
    (["-o", "python_files=test_deep.py"], "-o python_files=test_deep.py"),
    (["-o", "norecursedirs=deep"], "-o norecursedirs=deep"),
], ids=["testpaths", "python_files", "norecursedirs"])
def test_an_ini_override_that_changes_collection_makes_the_run_partial(
        project: pytest.Pytester, option: list[str], reason: str) -> None:
    _runs(project, *option)
    run = _run(project)
    assert run["partial"] is True and reason in run["partial_reasons"], run
    assert reason in run["scope"]["other"]
    assert run["collected"] != WHOLE


def test_an_override_of_a_setting_that_does_not_collect_leaves_the_run_whole(
        project: pytest.Pytester) -> None:
    _runs(project, "-o", "console_output_style=classic")
    assert _run(project)["partial"] is False


def test_the_override_through_pytest_addopts_is_seen_too(project: pytest.Pytester,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    monkeypatch.setenv("PYTEST_ADDOPTS", "-o testpaths=suite/deep")
    _runs(project)
    run = _run(project)
    assert run["partial"] is True and "-o testpaths=suite/deep" in run["partial_reasons"]


@pytest.mark.parametrize(("addopts", "reason"), [
    ("-k runs", "-k 'runs'"),
    ("-m 'not slow'", "-m 'not slow'"),
    ("--deselect suite/test_user.py::test_submits",
     "--deselect=suite/test_user.py::test_submits"),
    ("--lf", "--last-failed"),
    ("suite/deep", "only suite/deep"),
], ids=["keyword", "markexpr", "deselect", "last-failed", "path"])
def test_every_narrowing_through_pytest_addopts_makes_the_run_partial(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, addopts: str,
        reason: str) -> None:
    """PYTEST_ADDOPTS is set by whoever prepares the environment (the reusable workflow's
    `setup` input can write it to $GITHUB_ENV): what it narrows is recorded like the command
    line's own options."""
    monkeypatch.setenv("PYTEST_ADDOPTS", addopts)
    _runs(project)
    run = _run(project)
    assert run["partial"] is True and reason in run["partial_reasons"], run


def test_a_narrowing_in_the_ini_addopts_makes_the_run_partial(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nstacks_manifest = manifest.yaml\ntestpaths = suite\n"
                    "addopts = -k runs\n")
    _runs(project)
    run = _run(project)
    assert run["partial"] is True and "-k 'runs'" in run["partial_reasons"], run


def test_another_ini_file_makes_the_run_partial(project: pytest.Pytester) -> None:
    other = project.path / "other.ini"
    other.write_text("[pytest]\nstacks_manifest = manifest.yaml\ntestpaths = suite/deep\n")
    _runs(project, "-c", str(other))
    run = _run(project)
    assert run["partial"] is True, run
    assert any(r.startswith("-c=") for r in run["partial_reasons"]), run


def test_a_run_started_in_a_sub_folder_records_that_folder(project: pytest.Pytester,
                                                           monkeypatch: pytest.MonkeyPatch
                                                           ) -> None:
    """``cd tests/contract && pytest``: pytest collects the folder it was started in, not the
    ini's testpaths, so the run is the folder's tests, never the whole suite."""
    monkeypatch.chdir(project.path / "suite" / "deep")
    result = _runs(project)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    run = _run(project)
    assert run["partial"] is True and "only suite/deep" in run["partial_reasons"], run
    assert run["scope"]["paths"] == ["suite/deep"]
    assert run["collected"] == ["suite/deep/test_deep.py::test_deep[fake-slurm-20.11]"]


DESELECTING_CONFTEST = """
def pytest_collection_modifyitems(config, items):
    gone = [i for i in items if "test_submits" in i.nodeid]
    config.hook.pytest_deselected(items=gone)
    items[:] = [i for i in items if i not in gone]
"""


@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one-process", "xdist"])
def test_a_conftest_that_deselects_makes_the_run_partial_and_is_counted(
        project: pytest.Pytester, workers: list[str]) -> None:
    project.makeconftest(DESELECTING_CONFTEST)
    result = _runs(project, *workers)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    run = _run(project)
    assert run["deselected"] == 1, run
    assert run["partial"] is True, run
    assert "1 test(s) deselected by a plugin or conftest" in run["partial_reasons"]
    assert "suite/test_user.py::test_submits[fake-slurm-20.11]" not in run["collected"]
    assert len(run["collected"]) == 2


def test_a_keyword_counts_its_deselected_tests(project: pytest.Pytester) -> None:
    _runs(project, "-k", "runs")
    run = _run(project)
    assert run["deselected"] == 2 and run["partial_reasons"] == ["-k 'runs'"], run


def test_the_plugins_own_filter_of_another_backends_tests_is_no_narrowing(
        project: pytest.Pytester) -> None:
    (project.path / "suite" / "test_condor.py").write_text(
        "import pytest\n\n@pytest.mark.for_backend('htcondor')\n"
        "@pytest.mark.requires('submit')\ndef test_condor_only(backend, stack):\n    pass\n")
    result = _runs(project)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    run = _run(project)
    assert run["partial"] is False and run["deselected"] == 0, run
    assert run["collected"] == WHOLE


STALE = {"schema": "pytest-stacks/results", "note": "a previous run's green file"}


def _stale(project: pytest.Pytester) -> Path:
    target = project.path / ".pytest-stacks" / "results.json"
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(json.dumps(STALE))
    return target


def test_an_interrupted_run_writes_results_that_say_it_ended_early(
        project: pytest.Pytester) -> None:
    _stale(project)
    (project.path / "suite" / "test_user.py").write_text(TESTS + (
        "\n@pytest.mark.requires('submit')\ndef test_zz_interrupted(backend, stack):\n"
        "    raise KeyboardInterrupt\n"))
    # In a process of its own: Ctrl-C's KeyboardInterrupt would end an in-process run's caller.
    result = project.runpytest_subprocess("--stack=fake-slurm-20.11", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    run = _run(project)
    assert run["partial"] is True, run
    assert any(r.startswith("the run ended early") for r in run["partial_reasons"]), run
    assert run["pytest_exit"] == int(pytest.ExitCode.INTERRUPTED)


def test_a_collection_error_writes_ended_early_in_place_of_the_older_file(
        project: pytest.Pytester) -> None:
    _stale(project)
    (project.path / "suite" / "test_broken.py").write_text("def test_(:\n")
    result = _runs(project)
    assert result.ret == pytest.ExitCode.INTERRUPTED, result.stdout.str()
    run = _run(project)
    assert any(r.startswith("the run ended early") for r in run["partial_reasons"]), run


@pytest.mark.parametrize("option", ["--collect-only", "--fixtures"])
def test_listing_tests_or_fixtures_leaves_the_results_file_alone(project: pytest.Pytester,
                                                                 option: str) -> None:
    target = _stale(project)
    result = _runs(project, option)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert json.loads(target.read_text()) == STALE
