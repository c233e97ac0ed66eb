"""Two-way capability dispatch and the results file, as users see them (pytester).

A capability a stack declares must be proven by a passing test that requires it; a whole run
fails on an unproven one, a partial run reports it. Every run with stacks writes a results
document that ``pytest-stacks report`` can read.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_stacks import cli
from pytest_stacks.verdicts.results import load
from tests.manifests import FAKE_SLURM_20_11, Project, manifest_of, stack

pytest_plugins = ["pytester"]

MANIFEST = manifest_of(
    stack("fake-slurm", capabilities=("submit", "status", "outputs", "outputs.repeatable")),
    FAKE_SLURM_20_11, windows={"slurm": ("20.11", "24.11")})

TESTS = """
import pytest
from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for

@pytest.mark.requires("submit", "status")
def test_runs(backend, stack):
    [s] = wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])), timeout=30)
    assert s.state is JobState.COMPLETED

@pytest.mark.requires("submit", "status", "outputs")
def test_outputs(backend, stack):
    pass
"""


# 'auto' (this project's own setting): a whole run fails on unproven, a partial one reports.
PROJECT = Project(MANIFEST, ini="stacks_manifest = manifest.yaml\ntestpaths = suite\n"
                  "stacks_unproven = auto\n", files={"suite/test_user.py": TESTS})


def _results(project: pytest.Pytester) -> dict:
    return json.loads((project.path / ".pytest-stacks" / "results.json").read_text())


def test_a_declared_capability_no_test_required_fails_the_whole_run(
        project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurm", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines([
        "*FAIL-CLOSED: fake-slurm: outputs.repeatable unproven (0 tests required it)*"])
    assert "2 passed" in result.stdout.str()
    doc = _results(project)
    [stack] = doc["stacks"]
    assert stack["verdict"] == "unproven"
    caps = stack["capabilities"]
    assert caps["outputs.repeatable"]["status"] == "unproven"
    assert caps["outputs"]["status"] == "pass"
    assert caps["outputs"]["passed"] == ["suite/test_user.py::test_outputs[fake-slurm]"]
    assert sorted(caps["submit"]["passed"]) == [
        "suite/test_user.py::test_outputs[fake-slurm]", "suite/test_user.py::test_runs[fake-slurm]"]
    assert doc["run"]["partial"] is False


def test_every_capability_proven_is_a_pass(project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurm-20.11")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    [stack] = _results(project)["stacks"]
    assert stack["verdict"] == "pass"
    # The other direction: a test requiring what the stack lacks is skipped, and the
    # capability it needed is "not offered" there, not unproven.
    assert stack["capabilities"]["outputs"]["status"] == "not-offered"
    assert stack["capabilities"]["outputs"]["skipped"] == [
        "suite/test_user.py::test_outputs[fake-slurm-20.11]"]
    by_id = {t["nodeid"]: t for t in stack["tests"]}
    skipped = by_id["suite/test_user.py::test_outputs[fake-slurm-20.11]"]
    assert skipped["outcome"] == "skipped" and "lacks capability: outputs" in skipped["message"]
    assert by_id["suite/test_user.py::test_runs[fake-slurm-20.11]"]["outcome"] == "passed"


@pytest.mark.parametrize("selection", [["-k", "runs"], ["suite/test_user.py"],
                                       ["suite/test_user.py::test_runs"]],
                         ids=["keyword", "file", "node-id"])
def test_a_partial_run_reports_unproven_without_failing_and_says_so(
        project: pytest.Pytester, selection: list[str]) -> None:
    result = project.runpytest("--stack=fake-slurm", *selection)
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    out = result.stdout.str()
    assert "FAIL-CLOSED" not in out
    result.stdout.fnmatch_lines([
        "fake-slurm: outputs.repeatable unproven (0 tests required it)",
        "unproven capabilities are not failing this run: a partial run (*); the whole suite "
        "fails on them"])
    doc = _results(project)
    assert doc["run"]["partial"] is True and doc["run"]["partial_reasons"]


def test_the_testpaths_given_by_hand_are_the_whole_suite(project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurm", "suite")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["*FAIL-CLOSED: fake-slurm: outputs.repeatable unproven*"])


def test_fail_policy_fails_a_selection_and_still_records_it_as_narrowed(
        project: pytest.Pytester) -> None:
    """The policy decides whether unproven capabilities fail this run; what the results file
    says was run is never the policy's to change."""
    result = project.runpytest("--stack=fake-slurm", "-k", "runs", "--stack-unproven=fail")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines([
        "*FAIL-CLOSED: fake-slurm: outputs unproven (0 tests required it)*"])
    run = _results(project)["run"]
    assert run["partial"] is True and run["partial_reasons"] == ["-k 'runs'"]
    assert run["scope"] == {"paths": [], "keyword": "runs", "markexpr": "", "other": []}


@pytest.mark.parametrize(("selection", "reason"), [
    (["--deselect", "suite/test_user.py::test_outputs"],
     "--deselect=suite/test_user.py::test_outputs"),
    (["--ignore", "suite/other"], "--ignore=suite/other"),
    (["--ignore-glob", "*other*"], "--ignore-glob=*other*"),
    (["-x"], "--maxfail=1"),
    (["-m", "not slow"], "-m 'not slow'"),
])
def test_every_narrowing_option_makes_a_run_partial(project: pytest.Pytester,
                                                    selection: list[str], reason: str) -> None:
    project.runpytest("--stack=fake-slurm-20.11", "--stack-unproven=fail", *selection)
    run = _results(project)["run"]
    assert run["partial"] is True and reason in run["partial_reasons"], run


def test_a_narrowed_run_merges_red_naming_its_selection(project: pytest.Pytester,
                                                        capsys: pytest.CaptureFixture[str]
                                                        ) -> None:
    """A -k that keeps one passing test per capability passes its own run under
    --stack-unproven=fail; the table built from it must still be red, and say why."""
    result = project.runpytest("--stack=fake-slurm-20.11", "-k", "runs",
                               "--stack-unproven=fail")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    target = project.path / ".pytest-stacks" / "results.json"
    capsys.readouterr()
    code = cli.main(["--manifest", str(project.path / "manifest.yaml"), "report", str(target),
                     "--single", "--format", "json"])
    table = json.loads(capsys.readouterr().out)
    assert code == 1 and table["green"] is False, table
    assert any(p.startswith(f"{target}: stack fake-slurm-20.11: partial run: -k runs "
                            f"(-k 'runs'), and the plan named no selection")
               for p in table["problems"]), table["problems"]


def test_warn_policy_never_fails_on_unproven(project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurm", "--stack-unproven=warn")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["*not failing this run: --stack-unproven=warn*"])


def test_a_bad_unproven_ini_value_is_a_usage_error(project: pytest.Pytester) -> None:
    project.makeini("[pytest]\nstacks_manifest = manifest.yaml\nstacks_unproven = maybe\n")
    result = project.runpytest("--stack=fake-slurm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*stacks_unproven is 'maybe'; use warn, auto or fail*"])


@pytest.mark.parametrize(("ini", "choices"), [("stacks_keep", "use never or on-failure"),
                                              ("stacks_release", "use early or at-end")])
def test_bad_keep_and_release_ini_values_are_usage_errors(project: pytest.Pytester, ini: str,
                                                          choices: str) -> None:
    project.makeini(f"[pytest]\nstacks_manifest = manifest.yaml\n{ini} = sometimes\n")
    result = project.runpytest("--stack=fake-slurm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{ini} is 'sometimes'; {choices}*"])


def test_a_failing_test_fails_its_capabilities(project: pytest.Pytester) -> None:
    project.path.joinpath("suite", "test_more.py").write_text(
        "import pytest\n\n@pytest.mark.requires('outputs.repeatable')\n"
        "def test_twice(backend):\n    assert 1 == 2, 'fetched twice, got different bytes'\n")
    result = project.runpytest("--stack=fake-slurm")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    [stack] = _results(project)["stacks"]
    assert stack["verdict"] == "fail"
    cap = stack["capabilities"]["outputs.repeatable"]
    assert cap["status"] == "fail" and cap["failed"] == [
        "suite/test_more.py::test_twice[fake-slurm]"]
    [case] = [t for t in stack["tests"] if t["nodeid"].endswith("test_twice[fake-slurm]")]
    assert "fetched twice, got different bytes" in case["message"]


def test_results_file_is_valid_and_readable_by_the_report(project: pytest.Pytester,
                                                          tmp_path: Path) -> None:
    target = tmp_path / "out" / "job.json"
    result = project.runpytest("--stack=fake-slurm-20.11", f"--stack-results={target}")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines([f"results: {target}"])
    doc = load(target)  # the report's own loader: schema and rules re-derived
    [stack] = doc.stacks
    assert stack.name == "fake-slurm-20.11" and stack.verdict == "pass"
    assert stack.observed_daemon == "20.11.4" and stack.pins["version"] == "20.11.4"
    html = tmp_path / "report.html"
    code = cli.main(["--manifest", str(project.path / "manifest.yaml"), "report", str(target),
                     "--single", "--format", "html", "--output", str(html)])
    assert code == 0
    assert "fake-slurm-20.11" in html.read_text()


def test_no_results_file_when_turned_off(project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurm-20.11", "--stack-results=none")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert not (project.path / ".pytest-stacks").exists()
    assert "results:" not in result.stdout.str()


def test_a_run_without_stack_tests_writes_no_results(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", manifest=MANIFEST)
    pytester.makeini("[pytest]\nstacks_manifest = manifest.yaml\n")
    pytester.makepyfile(test_plain="def test_plain():\n    pass\n")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert not (pytester.path / ".pytest-stacks").exists()


def test_xdist_controller_writes_every_workers_outcomes(project: pytest.Pytester) -> None:
    result = project.runpytest("-n", "2", "--stack=fake-slurm-20.11", "--stack=fake-slurm",
                               "--stack-unproven=warn")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    stacks = {s["name"]: s for s in _results(project)["stacks"]}
    assert {len(s["tests"]) for s in stacks.values()} == {2}
    assert stacks["fake-slurm"]["verdict"] == "unproven"
    assert stacks["fake-slurm-20.11"]["verdict"] == "pass"


def test_a_stack_whose_teardown_was_not_proven_is_not_a_pass_in_its_results(
        project: pytest.Pytester) -> None:
    """Not only the merged table: the stack's own verdict says infra, with the reason."""
    project.makeconftest("""
        from pytest_stacks.errors import InfrastructureError
        from pytest_stacks.providers.fake import FakeProvider

        ORIGINAL = FakeProvider.down

        def down(self, stack, info, ctx):
            raise InfrastructureError(stack.name, "containers remain: pst-x")

        FakeProvider.down = down

        def pytest_unconfigure(config):  # after teardown; pytester runs share this process
            FakeProvider.down = ORIGINAL
    """)
    result = project.runpytest("--stack=fake-slurm-20.11")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["*FAIL-CLOSED: fake-slurm-20.11: teardown not proven:*"])
    [stack] = _results(project)["stacks"]
    assert stack["verdict"] == "infra", stack
    assert "teardown not proven" in stack["infra"] and "pst-x" in stack["infra"]


def test_what_a_teardown_could_not_look_for_is_said_and_fails_nothing(
        project: pytest.Pytester) -> None:
    """A site's teardown returns what it cannot vouch for (jobs the suite's own client
    submitted): said in the summary as it is, never a FAIL-CLOSED, the verdict its tests'."""
    project.makeconftest("""
        from pytest_stacks.providers.fake import FakeProvider

        ORIGINAL = FakeProvider.down

        def down(self, stack, info, ctx):
            ORIGINAL(self, stack, info, ctx)
            return ["not tracked: 2 job(s) the suite's own client submitted (7001..7002)"]

        FakeProvider.down = down

        def pytest_unconfigure(config):  # after teardown; pytester runs share this process
            FakeProvider.down = ORIGINAL
    """)
    result = project.runpytest("--stack=fake-slurm-20.11")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    result.stdout.fnmatch_lines(["fake-slurm-20.11: not tracked: 2 job(s) the suite's own "
                                 "client submitted (7001..7002)"])
    assert "FAIL-CLOSED" not in result.stdout.str()
    [stack] = _results(project)["stacks"]
    assert stack["verdict"] == "pass", stack


def test_a_planned_narrowing_is_green_and_the_table_says_so(
        project: pytest.Pytester, capsys: pytest.CaptureFixture[str]) -> None:
    """A -k the plan names (one test per capability) stands in the table, which must then say
    what ran: the row's scope and how many tests it deselected, in every rendering."""
    result = project.runpytest("--stack=fake-slurm-20.11", "-k", "runs",
                               "--stack-unproven=fail")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    target = str(project.path / ".pytest-stacks" / "results.json")
    manifest = str(project.path / "manifest.yaml")
    for fmt, shown in (("markdown", "-k runs · 1 deselected"),
                       ("html", "-k runs · 1 deselected")):
        capsys.readouterr()
        code = cli.main(["--manifest", manifest, "report", target, "--single", "--tests",
                         "-k runs", "--format", fmt])
        out = capsys.readouterr().out
        assert code == 0, out
        assert shown in out, out
    capsys.readouterr()
    cli.main(["--manifest", manifest, "report", target, "--single", "--tests", "-k runs",
              "--format", "json"])
    [row] = json.loads(capsys.readouterr().out)["rows"]
    assert (row["scope"], row["deselected"]) == ("-k runs", 1)


def test_a_job_that_really_fails_is_failed_on_a_fake_even_in_a_daemon_s_outage_words(
        project: pytest.Pytester) -> None:
    """A product failure stays a failure: an in-process double has no service to lose, so a
    failure on it is the product's whatever its message says (issue 60)."""
    (project.path / "suite" / "test_user.py").write_text(TESTS + """
@pytest.mark.requires("submit", "status")
def test_exit_3(backend, stack):
    [s] = wait_for(backend, submitted(backend.submit([JobSpec(script="exit 3\\n")])), timeout=30)
    assert s.exit_code == 0, f"Unable to contact slurm controller? no: exit {s.exit_code}"
""")
    result = project.runpytest("--stack=fake-slurm", "-k", "runs or exit_3")
    result.assert_outcomes(passed=1, failed=1)
    [stack] = _results(project)["stacks"]
    assert stack["verdict"] == "fail" and stack["infra"] is None
    outcomes = {t["nodeid"].split("::")[1]: t["outcome"] for t in stack["tests"]}
    assert outcomes["test_exit_3[fake-slurm]"] == "failed"
