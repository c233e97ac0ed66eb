"""The GitHub workflows executed end to end with act, every job on this host.

Not in the default test paths (each scenario runs real stacks again, as GitHub would):
``bash scripts/act-lanes.sh`` runs them. What is checked is what the run left (the uploaded
artifacts, every job summary, act's exit status), never what the workflow files say:

- this repository's ``integration.yml`` on a pull request: the pr lane planned from the
  manifest, one job per row, each leaving its results and its summary row, and the
  compatibility report merging every leg. A row this machine cannot run (an upstream image,
  no registry) must turn the report red, and only that row.
- the example user project's workflow calling the reusable one at its pinned commit (mapped
  to this checkout), installing pytest-stacks from a wheel as users do: green.
- a project whose legs fail on purpose (one crashes mid-run, one never reaches its tests, one
  runs a narrowed selection): the report job is red, naming each, and the good leg passes.
- ``canary.yml``: the whole canary lane; then its issue job, whose calls to GitHub's issue API
  are recorded by a ``gh`` stand-in, after a red and a green lane.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from tests.workflows.act import ROOT, ActRun, copy_project, run_act

PR_EVENT = {"pull_request": {"number": 7, "head": {"ref": "topic", "sha": "0" * 40},
                             "base": {"ref": "main"}}}
# What integration.yml asks each row to run.
REAL_TESTS = "tests/contract tests/backend tests/parity"
PINNED = "OWNER/pytest-stacks"  # the example project's `uses:`, mapped to this checkout


def _matrix(project: Path, lane: str, tests: str, *extra: str) -> list[str]:
    """The stacks of a lane as `pytest-stacks matrix` plans them (our own reading, to compare
    with what the workflow planned and ran)."""
    argv = [str(Path(sys.executable).parent / "pytest-stacks"), "matrix", "--lane", lane,
            "--tests", tests, "--format", "names", *extra]
    done = subprocess.run(argv, cwd=project, capture_output=True, text=True, check=False)
    assert done.returncode in (0, 3), done.stderr
    return done.stdout.split()


def _report(run: ActRun, lane: str) -> dict[str, object]:
    folder = run.artifact(f"compatibility-report-{lane}")
    for name in ("compatibility.md", "compatibility.html", "compatibility.json", "matrix.json"):
        assert (folder / name).is_file(), f"the report artifact lacks {name}"
    report: dict[str, object] = json.loads((folder / "compatibility.json").read_text())
    # The report job's summary is the markdown table it uploaded, word for word.
    assert (folder / "compatibility.md").read_text() in "".join(run.summaries_of("report"))
    return report


def _row_summary(run: ActRun, stack: str) -> str:
    """The summary the stack's own job wrote: its row of the compatibility table."""
    found = [s for s in run.summaries_of("stack") if f"| {stack} |" in s]
    assert len(found) == 1, f"expected one summary with the row of {stack}, got {len(found)}"
    return found[0]


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """pytest-stacks as a wheel, in a folder pip is pointed at (it is not on PyPI)."""
    dist = tmp_path_factory.mktemp("dist")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                            str(dist), str(ROOT)], capture_output=True, text=True, check=False)
    assert built.returncode == 0, built.stderr[-3000:]
    return dist


def _pip_env(wheel: Path) -> dict[str, str]:
    links = f"{os.environ.get('PIP_FIND_LINKS', '')} {wheel}".strip()
    return {"PIP_FIND_LINKS": links}


# ---------------------------------------------------------------- this repository's pr lane

@pytest.fixture(scope="module")
def pr_lane(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[ActRun, Path]]:
    work = tmp_path_factory.mktemp("pr-lane")
    project = copy_project(ROOT, work / "project")
    yield run_act(project, "pull_request", PR_EVENT, work, workflow="integration.yml"), project


def test_the_pr_lane_runs_every_row_and_reports_each(pr_lane: tuple[ActRun, Path]) -> None:
    run, project = pr_lane
    planned = _matrix(project, "pr", REAL_TESTS)
    here = set(_matrix(project, "pr", REAL_TESTS, "--runnable-here"))
    assert planned and here, "the pr lane has rows, and this machine can run some"
    report = _report(run, "pr")
    matrix = json.loads((run.artifact("compatibility-report-pr") / "matrix.json").read_text())
    assert [r["stack"] for r in matrix["include"]] == planned
    assert all(r["tests"] == REAL_TESTS for r in matrix["include"])
    verdicts = {r["stack"]: r["verdict"] for r in report["rows"]}  # type: ignore[index]
    assert sorted(verdicts) == sorted(planned)
    for stack in planned:
        if stack in here:
            results = run.artifact(f"stack-results-pr-{stack}") / f"results-{stack}.json"
            assert json.loads(results.read_text())["stacks"][0]["name"] == stack
            assert verdicts[stack] == "pass", (stack, verdicts[stack], report["problems"])
            row = _row_summary(run, stack)
            assert "GREEN: single job" in row and "NOT GREEN" not in row, row
        else:
            assert verdicts[stack] != "pass", (stack, verdicts)
    # Green only if every row passed: a row this machine cannot run keeps the lane red.
    assert report["green"] is (set(planned) <= here)
    assert (run.returncode == 0) is (set(planned) <= here), run.log[-3000:]


# ---------------------------------------------------------------- a user's project

def _user_project_run(source: Path, work: Path, wheel: Path) -> tuple[ActRun, Path]:
    """A user's project on a pull request: its workflow calls the reusable one at a pinned
    commit of pytest-stacks (this checkout) and installs pytest-stacks from the wheel."""
    project = copy_project(source, work / "project")
    reusable = copy_project(ROOT, work / "pytest-stacks")
    run = run_act(project, "pull_request", PR_EVENT, work, workflow="stacks.yml",
                  extra_repos={PINNED: reusable}, env=_pip_env(wheel))
    return run, project


@pytest.fixture(scope="module")
def example(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> tuple[ActRun, Path]:
    return _user_project_run(ROOT / "examples" / "user-project",
                             tmp_path_factory.mktemp("example"), wheel)


def test_the_example_project_runs_the_reusable_workflow_green(
        example: tuple[ActRun, Path]) -> None:
    run, project = example
    planned = _matrix(project, "pr", "tests")
    assert "site-slurm" in planned
    report = _report(run, "pr")
    assert report["green"] is True, report["problems"]
    assert sorted(r["stack"] for r in report["rows"]) == sorted(planned)  # type: ignore[index]
    for stack in planned:
        assert "GREEN: single job" in _row_summary(run, stack)
    assert run.returncode == 0, run.log[-3000:]


# ---------------------------------------------------------------- legs that go wrong

FAULTS_MANIFEST = """\
version: 1
catalogue:
  version: "0.1"
  use: []
stacks:
{legs}
"""
LEG = """\
  - name: {name}
    extends: {base}
    description: One leg of the workflow fault check.
    capabilities: [submit, status, outputs]
    lanes: [pr]
"""
FAULTS_TESTS = '''
import os
import signal

import pytest

from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for


@pytest.mark.requires("submit", "status", "outputs")
def test_a_job_writes_its_result(backend, stack, tmp_path):
    [job] = submitted(backend.submit([JobSpec(script="echo 42 > answer.txt\\n",
                                              outputs=("answer.txt",))]))
    [status] = wait_for(backend, [job], timeout=stack.timeouts.job)
    assert status.state is JobState.COMPLETED, status
    [result] = backend.fetch_outputs([job], tmp_path)
    assert result.files["answer.txt"].read_text() == "42\\n"


def test_a_leg_told_to_crash_dies_here(stack):
    if os.environ.get("CRASH_LEG") == stack.name:
        os.kill(os.getpid(), signal.SIGKILL)
'''
# Each leg's fault, injected through the reusable workflow's `setup` input (run with the
# leg's STACK in the environment; what it appends to $GITHUB_ENV reaches the test step).
FAULTS_SETUP = """\
case "$STACK" in
  leg-never-tested) echo "this leg fails before its tests"; exit 3 ;;
  leg-crashes) echo "CRASH_LEG=$STACK" >> "$GITHUB_ENV" ;;
  leg-narrowed) echo "PYTEST_ADDOPTS=-k a_job" >> "$GITHUB_ENV" ;;
esac
"""
FAULTS_WORKFLOW = f"""\
name: stacks
on: pull_request
permissions: {{}}
jobs:
  stacks:
    uses: {PINNED}/.github/workflows/stacks.yml@0123456789abcdef0123456789abcdef01234567
    with:
      lane: pr
      test-paths: tests
      pytest-stacks: pytest-stacks==0.1.*
      setup: |
{textwrap.indent(FAULTS_SETUP, " " * 8)}
    permissions:
      contents: read
"""
# name -> the catalogue stack it extends (the lane needs the window's anchor and leading edge)
LEGS = {"leg-ok": "slurm-26.05", "leg-crashes": "slurm-22.05",
        "leg-never-tested": "slurm-24.11", "leg-narrowed": "slurm-24.11"}


@pytest.fixture(scope="module")
def faults(tmp_path_factory: pytest.TempPathFactory, wheel: Path) -> tuple[ActRun, Path]:
    work = tmp_path_factory.mktemp("faults")
    source = work / "source"
    (source / "tests").mkdir(parents=True)
    (source / ".github" / "workflows").mkdir(parents=True)
    (source / "manifest.yaml").write_text(FAULTS_MANIFEST.format(
        legs="".join(LEG.format(name=n, base=b) for n, b in LEGS.items())))
    (source / "pytest.ini").write_text("[pytest]\ntestpaths = tests\n")
    (source / "tests" / "test_legs.py").write_text(FAULTS_TESTS)
    (source / ".github" / "workflows" / "stacks.yml").write_text(FAULTS_WORKFLOW)
    return _user_project_run(source, work, wheel)


def test_legs_that_crash_miss_or_narrow_turn_the_report_red(
        faults: tuple[ActRun, Path]) -> None:
    run, project = faults
    assert _matrix(project, "pr", "tests") == list(LEGS)
    report = _report(run, "pr")
    rows = {r["stack"]: r for r in report["rows"]}  # type: ignore[index]
    problems = "\n".join(report["problems"])  # type: ignore[arg-type]
    assert report["green"] is False and run.returncode != 0
    assert rows["leg-ok"]["verdict"] == "pass"
    assert "GREEN: single job" in _row_summary(run, "leg-ok")
    for missing in ("leg-crashes", "leg-never-tested"):
        assert rows[missing]["verdict"] == "missing", rows[missing]
        assert f"stack {missing}: no results" in problems
        assert not (run.artifacts / f"stack-results-pr-{missing}").exists()
        # the failed leg's logs were collected and uploaded (`if: failure()`)
        assert (run.artifact(f"stack-logs-pr-{missing}")).is_dir()
    assert "SIGKILL" in run.log or "signal: killed" in run.log or "Killed" in run.log
    narrowed = [p for p in report["problems"] if "leg-narrowed" in p]  # type: ignore[union-attr]
    assert narrowed and all("-k a_job" in p for p in narrowed), narrowed
    assert rows["leg-narrowed"]["verdict"] == "pass"  # its tests passed; the scope is what fails
    assert "this leg fails before its tests" in run.log
    assert any("no results file" in s for s in run.summaries_of("stack"))


# ---------------------------------------------------------------- the canary

@pytest.fixture(scope="module")
def canary(tmp_path_factory: pytest.TempPathFactory) -> tuple[ActRun, Path]:
    work = tmp_path_factory.mktemp("canary")
    project = copy_project(ROOT, work / "project")
    return run_act(project, "workflow_dispatch", {"inputs": {}}, work,
                   workflow="canary.yml"), project


def test_the_canary_lane_runs_every_row_from_its_floating_reference(
        canary: tuple[ActRun, Path]) -> None:
    """canary.yml -> integration.yml (lane canary) -> stacks.yml: every canary row built from
    its floating reference and reported; the rows this machine cannot run keep it red."""
    run, project = canary
    planned = _matrix(project, "canary", REAL_TESTS)
    here = set(_matrix(project, "canary", REAL_TESTS, "--runnable-here"))
    report = _report(run, "canary")
    verdicts = {r["stack"]: r["verdict"] for r in report["rows"]}  # type: ignore[index]
    assert sorted(verdicts) == sorted(planned)
    for stack in planned:
        assert (verdicts[stack] == "pass") is (stack in here), (stack, report["problems"])
    assert report["green"] is (set(planned) <= here)


CANARY_LANE_STANDIN = {
    "name": "the canary lane (its outcome and its uploaded table come from the real run)",
    "runs-on": "ubuntu-latest",
    "steps": [{"run": "exit ${LANE_EXIT:?}"}],
}


def _canary_issue_workflow() -> str:
    """canary.yml's issue job, verbatim, after a stand-in for its `lane` job.

    act v0.2.89 ends a run as soon as a job that calls a reusable workflow fails, so the
    issue job (`if: always()`) never starts after a red lane under act, as it does on GitHub
    (seen in the run above: the report job of the lane is the last one). Here the lane is a
    plain job whose outcome is set per case, and the table it "uploaded" is the one the real
    canary run uploaded."""
    canary = yaml.safe_load((ROOT / ".github" / "workflows" / "canary.yml").read_text())
    derived = {"name": "canary issue job", "on": {"workflow_dispatch": None},
               "permissions": {}, "defaults": canary["defaults"],
               "jobs": {"lane": CANARY_LANE_STANDIN, "report": canary["jobs"]["report"]}}
    return yaml.safe_dump(derived, sort_keys=False)


@pytest.mark.parametrize(("lane", "open_issues", "expected"), [
    ("failure", "15 12", [["issue", "close", "15", "--comment", "Duplicate of #12."],
                          ["issue", "comment", "12", "--body"]]),
    ("failure", "", [["issue", "create", "--label", "canary-failure", "--title",
                      "Canary lane is failing", "--body"]]),
    ("success", "12", [["issue", "close", "12", "--comment"]]),
    ("success", "", []),
])
def test_the_canary_keeps_exactly_one_issue_current(
        canary: tuple[ActRun, Path], tmp_path: Path, lane: str, open_issues: str,
        expected: list[list[str]]) -> None:
    real, _ = canary
    table = (real.artifact("compatibility-report-canary") / "compatibility.md").read_text()
    source = tmp_path / "source" / ".github" / "workflows"
    source.mkdir(parents=True)
    (source / "canary-issue.yml").write_text(_canary_issue_workflow())
    project = copy_project(tmp_path / "source", tmp_path / "project")
    work = tmp_path / "work"
    shutil.copytree(real.artifacts, work / "artifacts")
    if lane == "success":  # the issue is closed only on a green table, whatever this host ran
        green = work / "artifacts" / "compatibility-report-canary" / "compatibility.md"
        green.write_text("**✅ GREEN: canary lane, 1 stack(s) (1 pass), 0 problem(s)**\n")
    run = run_act(project, "workflow_dispatch", {"inputs": {}}, work,
                  workflow="canary-issue.yml",
                  env={"ACT_GH_OPEN_ISSUES": open_issues,
                       "LANE_EXIT": "1" if lane == "failure" else "0"})
    calls = run.gh_calls()
    assert calls[0][:3] == ["label", "create", "canary-failure"], calls
    assert calls[1][:3] == ["issue", "list", "--label"] and "canary-failure" in calls[1]
    assert [c[:len(e)] for c, e in zip(calls[2:], expected, strict=False)] == expected, calls
    assert len(calls) == 2 + len(expected), calls
    for call in calls[2:]:
        text = call[-1]
        assert "/actions/runs/" in text or text == "Duplicate of #12.", call
        if lane == "failure" and "--body" in call:
            assert table.strip()[:2000] in text  # the lane's own table goes into the issue
    assert (run.returncode == 0) is (lane == "success"), run.log[-3000:]  # the lane's outcome
