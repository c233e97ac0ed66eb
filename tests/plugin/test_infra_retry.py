"""``--stack-infra-retry``: a stack that breaks under the run is brought down and up fresh and
the test the fault hit runs again on it; a pass after a retry is said as one (terminal,
results file, junit), never as a clean pass; a product failure is never retried; the retries
are bounded and counted across xdist workers; bad input is a usage error (exit 4).

The stack here is a compose stack whose provider is a double (no engine needed): its
bring-ups and teardowns are counted in files, its client is fake-slurm's, and its health check
finds it broken once a test has "broken" it (a file), as a real stack's finds a container
paused. The same retry on a real stack is proven in tests/faults/test_fault_matrix.py.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from tests.manifests import COMPOSE_SLURM, fake_slurm

pytest_plugins = ["pytester"]

#: The provider double, put in place for the pytester session by its conftest.
CONFTEST = '''
import dataclasses
import os
from pathlib import Path

import pytest_stacks.lifecycle.pool as pool
from pytest_stacks.errors import BackendCallError
from pytest_stacks.providers.base import StackInfo
from pytest_stacks.providers.fake import FakeProvider

STATE = Path(os.environ["RETRY_STATE"])


def _count(name):
    with (STATE / name).open("a") as out:
        out.write("x")


class _Live:
    """A client of one bring-up: once that stack is down, every call fails as a real
    client's would (its container is gone), so a test on a stale client cannot pass."""

    def __init__(self, inner, project):
        self._inner, self._project = inner, project

    def __getattr__(self, name):
        live = STATE / "live"
        if not live.exists() or live.read_text() != self._project:
            raise BackendCallError(f"No such container: {self._project}-slurm-1")
        return getattr(self._inner, name)


class BreakableProvider(FakeProvider):
    """Comes up as a compose stack would (counted), is broken by a test writing the file
    'broken', and is fresh again once brought down."""

    def preflight(self, stack, ctx):
        pass

    def up(self, stack, ctx):
        _count("up")
        if (STATE / "up-fails").exists():
            raise RuntimeError("the engine refused to start the container")
        project = f"p{len((STATE / 'up').read_text())}"
        (STATE / "live").write_text(project)
        return StackInfo(provider="compose", project=project)

    def attach(self, stack, info, ctx):
        attached = super().attach(stack, info, ctx)
        return dataclasses.replace(attached, client=_Live(attached.client, info.project))

    def health(self, stack, info):
        if (STATE / "broken").exists():
            return f"the stack's container {info.project}-slurm-1 (service slurm) is paused", ""
        return "", ""

    def down(self, stack, info, ctx):
        _count("down")
        (STATE / "broken").unlink(missing_ok=True)
        (STATE / "live").unlink(missing_ok=True)


pool.provider_for = lambda stack: BreakableProvider()
'''

TESTS = '''
import os
from pathlib import Path

import pytest

from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for

STATE = Path(os.environ["RETRY_STATE"])
pytestmark = pytest.mark.requires("submit")


def _break(times):
    """Break the stack under this test (the first ``times`` times it runs)."""
    seen = STATE / "breaks"
    done = len(seen.read_text()) if seen.exists() else 0
    if done < times:
        seen.write_text("x" * (done + 1))
        (STATE / "broken").touch()
        if os.environ.get("FRESH_UP_FAILS"):
            (STATE / "up-fails").touch()
        raise AssertionError("sbatch: error: Batch job submission failed: Socket timed out")


def test_1_before(backend, stack):
    [status] = wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])))
    assert status.state is JobState.COMPLETED


def test_2_the_fault(backend, stack, stack_info):
    _break(int(os.environ.get("BREAKS", "1")))
    (STATE / f"ran-on-{stack_info['project']}").touch()
    [status] = wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])))
    assert status.state is JobState.COMPLETED


def test_3_after(backend, stack):
    [status] = wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])))
    assert status.state is JobState.COMPLETED
'''


@pytest.fixture
def project(pytester: pytest.Pytester, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    pytester.makefile(".yaml", manifest=COMPOSE_SLURM)
    (pytester.path / "stacks" / "slurm").mkdir(parents=True)
    (pytester.path / "stacks" / "slurm" / "compose.yaml").write_text("services: {}\n")
    pytester.makeini("[pytest]\nstacks_manifest = manifest.yaml\nstacks_unproven = warn\n")
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(test_user=TESTS)
    state = tmp_path / "state"
    state.mkdir()
    monkeypatch.setenv("RETRY_STATE", str(state))
    return pytester


def _state(name: str, project: pytest.Pytester) -> str:
    """What the provider double counted (``x`` per bring-up, teardown or break)."""
    path = Path(os.environ["RETRY_STATE"]) / name
    return path.read_text() if path.exists() else ""


def _results(project: pytest.Pytester) -> dict:  # type: ignore[type-arg]
    data = json.loads((project.path / ".pytest-stacks" / "results.json").read_text())
    [stack] = data["stacks"]
    return stack  # type: ignore[no-any-return]


def _run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    return project.runpytest_subprocess("--stack=slurm-24.11", "-p", "no:randomly",
                                        "-p", "no:cacheprovider", *args)


def test_a_stack_broken_once_is_brought_up_fresh_and_the_test_runs_again(
        project: pytest.Pytester) -> None:
    result = _run(project, "--stack-infra-retry=1", "--junitxml=junit.xml", "-rA")
    result.assert_outcomes(passed=3)
    assert result.ret == 0, result.stdout.str()
    result.stdout.fnmatch_lines(["*3 passed, 1 infra-retried*"])
    # The fresh stack is another bring-up, and the broken one was brought down first.
    assert (_state("up", project), _state("down", project)) == ("xx", "xx")
    ran = sorted(p.name for p in Path(os.environ["RETRY_STATE"]).glob("ran-on-*"))
    assert ran == ["ran-on-p2"], "the test ran again on the fresh stack, not the broken one"
    stack = _results(project)
    assert stack["verdict"] == "pass" and stack["infra"] is None
    [retry] = stack["infra_retries"]
    assert retry["attempt"] == 1 and "p1-slurm-1 (service slurm) is paused" in retry["fault"]
    assert [t.rsplit("::", 1)[1] for t in retry["tests"]] == ["test_2_the_fault[slurm-24.11]"]
    counts = {t["nodeid"].rsplit("::", 1)[1]: (t["outcome"], t["infra_retries"])
              for t in stack["tests"]}
    assert counts == {"test_1_before[slurm-24.11]": ("passed", 0),
                      "test_2_the_fault[slurm-24.11]": ("passed", 1),
                      "test_3_after[slurm-24.11]": ("passed", 0)}
    result.stdout.fnmatch_lines(["*slurm-24.11 (slurm 24.11.5, compose)*3 test(s) ran*"
                                 "passed after 1 infra retry*"])
    # junit: one test case per test, the retried one a pass once, not a failure and a pass.
    cases = ET.parse(project.path / "junit.xml").getroot().iter("testcase")
    named = [c.get("name") for c in cases]
    assert named.count("test_2_the_fault[slurm-24.11]") == 1 and len(named) == 3


def test_a_stack_that_breaks_again_after_its_retries_ends_infra_saying_they_are_spent(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BREAKS", "5")
    result = _run(project, "--stack-infra-retry=1")
    assert result.ret == 1
    assert (_state("up", project), _state("breaks", project)) == ("xx", "xx")
    result.stdout.fnmatch_lines(["*the 1 allowed retry is spent (--stack-infra-retry=1)*"])
    stack = _results(project)
    assert stack["verdict"] == "infra" and "is paused" in stack["infra"]
    assert [r["attempt"] for r in stack["infra_retries"]] == [1]
    outcome = {t["nodeid"].rsplit("::", 1)[1]: t["outcome"] for t in stack["tests"]}
    assert outcome["test_2_the_fault[slurm-24.11]"] == "infra"


def test_a_fresh_bring_up_that_fails_ends_the_stack_infra_saying_so(
        project: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FRESH_UP_FAILS", "1")
    result = _run(project, "--stack-infra-retry=2")
    assert result.ret == 1 and "INTERNALERROR" not in result.stdout.str()
    assert (_state("up", project), _state("down", project)) == ("xx", "x"), \
        "brought down, one fresh bring-up tried, and no more: it fails the same way again"
    result.stdout.fnmatch_lines(["*brought down, but the fresh bring-up failed*the engine "
                                 "refused to start the container*"])
    stack = _results(project)
    assert stack["verdict"] == "infra" and stack["infra_retries"] == []
    outcome = {t["nodeid"].rsplit("::", 1)[1]: t["outcome"] for t in stack["tests"]}
    assert outcome == {"test_1_before[slurm-24.11]": "passed",
                       "test_2_the_fault[slurm-24.11]": "infra",
                       "test_3_after[slurm-24.11]": "infra"}


def test_a_product_failure_on_a_healthy_stack_is_never_retried(
        project: pytest.Pytester) -> None:
    project.makepyfile(test_user='''
def test_refused(backend, stack):
    raise AssertionError("sbatch: error: invalid partition specified: nosuch")
''')
    result = _run(project, "--stack-infra-retry=3")
    result.assert_outcomes(failed=1)
    assert _state("up", project) == "x", "one bring-up: nothing was retried"
    stack = _results(project)
    assert stack["verdict"] == "fail" and stack["infra_retries"] == []


def test_a_failed_bring_up_is_not_retried(project: pytest.Pytester) -> None:
    (Path(os.environ["RETRY_STATE"]) / "up-fails").touch()
    result = _run(project, "--stack-infra-retry=2")
    assert result.ret == 1
    assert _state("up", project) == "x", "a bring-up that fails fails again: not retried"
    assert _results(project)["infra_retries"] == []


def test_without_the_option_a_broken_stack_ends_infra_as_before(
        project: pytest.Pytester) -> None:
    result = _run(project)
    assert result.ret == 1
    assert _state("up", project) == "x"
    result.stdout.fnmatch_lines(["*is paused*"])
    assert "infra-retried" not in result.stdout.str()


def test_under_xdist_the_retry_and_its_record_reach_the_controller(
        project: pytest.Pytester) -> None:
    # --stack-group: the stack's tests on one worker, so the outcome is deterministic; two
    # workers meeting one broken stack at once are proven in tests/unit/test_stack_run_replace.py
    # (the late one attaches to the fresh stack for free, never marks it broken).
    result = _run(project, "--stack-infra-retry=1", "-n", "2", "--stack-group")
    result.assert_outcomes(passed=3)
    assert _state("up", project) == "xx", "one retry for the run, not one per worker"
    assert [r["attempt"] for r in _results(project)["infra_retries"]] == [1]


# ---------------------------------------------------------------- bad input


FAKE_TESTS = """
def test_a(backend, stack):
    pass
"""


@pytest.fixture
def fake_project(pytester: pytest.Pytester) -> pytest.Pytester:
    pytester.makefile(".yaml", manifest=fake_slurm())
    pytester.makeini("[pytest]\nstacks_manifest = manifest.yaml\nstacks_unproven = warn\n")
    pytester.makepyfile(test_user=FAKE_TESTS)
    return pytester


@pytest.mark.parametrize("bad", ["-1", "1.5", "", "many", " ", "11"])
def test_bad_counts_are_usage_errors(fake_project: pytest.Pytester, bad: str) -> None:
    result = fake_project.runpytest(f"--stack-infra-retry={bad}", "--stack=fake-slurm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--stack-infra-retry *use --stack-infra-retry=N with N "
                                 "from 0*to 10*"])
    assert "Traceback" not in result.stderr.str()


def test_a_bad_ini_value_is_a_usage_error_naming_the_ini_option(
        pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", manifest=fake_slurm())
    pytester.makeini("[pytest]\nstacks_manifest = manifest.yaml\nstacks_infra_retry = -3\n")
    pytester.makepyfile(test_user=FAKE_TESTS)
    result = pytester.runpytest("--stack=fake-slurm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the ini option stacks_infra_retry must be a whole number*"])


def test_fakes_are_run_as_pytest_runs_them(fake_project: pytest.Pytester) -> None:
    result = fake_project.runpytest("--stack-infra-retry=2", "--stack=fake-slurm")
    result.assert_outcomes(passed=1)


def test_the_option_is_in_the_help(fake_project: pytest.Pytester) -> None:
    result = fake_project.runpytest("--help")
    result.stdout.fnmatch_lines(["*--stack-infra-retry=N*"])
    result.stdout.fnmatch_lines(["*stacks_infra_retry*"])


def test_allure_shows_a_retried_pass_as_flaky_with_the_fault(project: pytest.Pytester,
                                                             tmp_path: Path) -> None:
    alluredir = tmp_path / "allure"
    result = _run(project, "--stack-infra-retry=1", f"--alluredir={alluredir}")
    assert result.ret == 0, result.stdout.str()
    found = {r["name"]: r for r in (json.loads(p.read_text())
                                    for p in alluredir.glob("*-result.json"))}
    retried = found["test_2_the_fault[slurm-24.11]"]
    assert retried["status"] == "passed" and retried["statusDetails"]["flaky"] is True
    assert "after 1 infra retry" in retried["statusDetails"]["message"]
    assert "is paused" in retried["statusDetails"]["message"]
    assert {"name": "infra_retries", "value": "1"} in retried["labels"]
    clean = found["test_3_after[slurm-24.11]"]
    assert not clean.get("statusDetails", {}).get("flaky")


def test_a_client_whose_attributes_fail_never_breaks_the_report(
        fake_project: pytest.Pytester) -> None:
    """A client of a stack that went away (replaced under another worker's test) may fail on
    any attribute; the report is still written, the test's own outcome kept."""
    fake_project.makeconftest('''
class Gone:
    def __init__(self, inner):
        self._inner = inner

    def __getattr__(self, name):
        if name == "identities":
            raise RuntimeError("No such container: p1-slurm-1")
        return getattr(self._inner, name)


def pytest_stacks_backend(stack, default, info):
    return Gone(default)
''')
    fake_project.makepyfile(test_user='''
from pytest_stacks.contract import JobSpec, submitted, wait_for

def test_a(backend, stack):
    wait_for(backend, submitted(backend.submit([JobSpec(script="true\\n")])))
''')
    result = fake_project.runpytest("--stack=fake-slurm")
    result.assert_outcomes(passed=1)
    assert "INTERNALERROR" not in result.stdout.str()
