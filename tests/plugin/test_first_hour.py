"""A new user's first hour (issue 50), as they see it: a project with no manifest of its own,
only the catalogue that ships with pytest-stacks, and a small suite of its own tests.

The README's first example is ``pytest --stack=fake-slurm``: it must pass when the user's tests
pass. The catalogue's capabilities their suite does not prove are reported, not failed, unless
they ask (``--stack-unproven=fail``), and then the closing line says why the run failed.
"""

from __future__ import annotations

import json

import pytest

from pytest_stacks import dockerutil
from tests.manifests import Project

pytest_plugins = ["pytester"]

USER_TESTS = """
from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for

def test_a_job_completes(backend):
    [s] = wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])), timeout=30)
    assert s.state is JobState.COMPLETED

def test_the_stack_is_slurm(stack):
    assert stack.backend == "slurm"
"""


#: No manifest, no ini option: what a new project has after ``pip install``.
PROJECT = Project(ini=None, files={"tests/test_mine.py": USER_TESTS})


def test_the_readme_example_passes_when_the_users_tests_pass(
        project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurm", "-p", "no:randomly")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, out
    assert "2 passed" in out and "FAIL-CLOSED" not in out
    # What the suite did not prove is reported, a line per capability and why it is no failure.
    result.stdout.fnmatch_lines([
        "fake-slurm: * unproven (0 tests required it)",
        "unproven capabilities are not failing this run: --stack-unproven=warn (the default); "
        "--stack-unproven=fail fails on them"])
    doc = json.loads((project.path / ".pytest-stacks" / "results.json").read_text())
    assert doc["stacks"][0]["verdict"] == "unproven"  # recorded as it is, whatever the policy


def test_asking_for_every_capability_fails_and_the_closing_line_says_why(
        project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurm", "--stack-unproven=fail")
    assert result.ret == pytest.ExitCode.TESTS_FAILED, result.stdout.str()
    result.stdout.fnmatch_lines(["*FAIL-CLOSED: fake-slurm: * unproven*",
                                 "*2 passed, * fail-closed in *"])


@pytest.mark.parametrize("looking", ["--fixtures", "--co"])
def test_only_looking_keeps_the_results_file_and_tears_nothing_down(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch, looking: str) -> None:
    """--fixtures and --co run no test: the last run's results file stays, and a real stack
    that was never brought up has no teardown to fail (here with no Docker engine to ask)."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{project.path}/no-docker.sock")
    results = project.path / ".pytest-stacks" / "results.json"
    results.parent.mkdir()
    results.write_text('{"earlier": true}\n')
    result = project.runpytest(looking, "--stack=fake-slurm", "--stack=slurm-24.11")
    out = result.stdout.str()
    assert result.ret == pytest.ExitCode.OK, out
    assert "FAIL-CLOSED" not in out
    assert results.read_text() == '{"earlier": true}\n'


# ------------------------------------------------- a user's own client on a fake (issue 50)

OWN_CLIENT_TESTS = """
import pytest
from pytest_stacks.plugin.fixtures import RecordingClient

def test_slurm_commands_reach_the_fake(stack_fake, stack_info):
    assert stack_info["fake"] == "FakeSlurmHost"
    done = stack_fake.run(["sinfo", "-h", "-o", "%P"], user="submitter")
    assert done.ok, done.stderr

def test_the_raw_client_is_one_attribute_away(backend):
    assert isinstance(backend, RecordingClient)
    assert type(backend.raw).__name__ == "SlurmClient"
    assert backend.handles == []
"""


def test_a_users_own_client_reaches_the_fake_and_the_raw_client(
        project: pytest.Pytester) -> None:
    """A user's own client library is pointed at the fake itself (``stack_fake``: the
    in-process double, e.g. fake-slurm's host that answers sbatch/squeue/sacct), and the
    ``backend`` fixture's wrapper hands out the client it wraps."""
    project.makepyfile(test_own=OWN_CLIENT_TESTS)
    result = project.runpytest("--stack=fake-slurm", "-p", "no:randomly", "test_own.py")
    result.assert_outcomes(passed=2)


@pytest.mark.parametrize("fake,kind", [("fake-htcondor", "FakeSchedd"),
                                       ("fake-mpi-operator", "FakeCluster")])
def test_every_fake_has_a_way_in(project: pytest.Pytester, fake: str, kind: str) -> None:
    project.makepyfile(test_own=f"""
        def test_way_in(stack_fake, stack_info):
            assert type(stack_fake).__name__ == {kind!r} == stack_info["fake"]
        """)
    result = project.runpytest(f"--stack={fake}", "test_own.py")
    result.assert_outcomes(passed=1)


# ---------------------------------------------------------- no Docker: said once (issue 50)

def test_no_docker_is_said_once(project: pytest.Pytester,
                                monkeypatch: pytest.MonkeyPatch) -> None:
    """A real stack on a machine with no engine: the reason is printed once (the stack's
    paragraph); the summary line points at it; a run that never reached an engine has
    nothing of its own to sweep, so no FAIL-CLOSED teardown repeats it."""
    monkeypatch.setenv("DOCKER_HOST", f"unix://{project.path}/no-docker.sock")
    monkeypatch.setattr(dockerutil, "_CLIENT", None)  # none cached from an engine elsewhere
    result = project.runpytest("--stack=slurm-24.11", "-p", "no:randomly")
    out = result.stdout.str()
    assert out.count("no Docker engine is reachable") == 1, out
    assert "FAIL-CLOSED" not in out
    result.stdout.fnmatch_lines(["slurm-24.11 (*): 0 test(s) ran INFRASTRUCTURE ERROR (above)"])


def test_quiet_counts_the_fail_closed_lines_and_says_where_they_are(
        project: pytest.Pytester) -> None:
    loud = project.runpytest("--stack=fake-slurm", "--stack-unproven=fail")
    lines = [x for x in loud.stdout.lines if x.startswith("FAIL-CLOSED:")]
    assert len(lines) > 1
    quiet = project.runpytest("--stack=fake-slurm", "--stack-unproven=fail", "-q")
    out = quiet.stdout.str()
    assert quiet.ret == pytest.ExitCode.TESTS_FAILED
    assert not [x for x in quiet.stdout.lines if x.startswith("FAIL-CLOSED: fake-slurm")], out
    quiet.stdout.fnmatch_lines([f"FAIL-CLOSED: {len(lines)} problems; run without -q to see "
                                f"them, or read *problems* in *results.json"])
