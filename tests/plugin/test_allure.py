"""Allure support, as users run it: a small suite on fake stacks with ``--alluredir``, then the
files Allure reads, checked the way Allure itself interprets them.

allure-pytest is a dev dependency: without it these tests fail (the first one says why);
nothing here is skipped.
"""

from __future__ import annotations

import hashlib
import json
import re
import textwrap
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.plugin import allure as allure_support
from tests.manifests import Project, slurm_trio

pytest_plugins = ["pytester"]

MANIFEST = slurm_trio(("submit", "status", "outputs", "logs"), mpi_operator=False)

TESTS = """
import pytest
from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for
from pytest_stacks.errors import InfrastructureError

@pytest.mark.requires("submit", "outputs")
def test_green(backend, stack):
    [h] = submitted(backend.submit([JobSpec(script="true\\n")]))
    [s] = wait_for(backend, [h], timeout=30)
    assert s.state is JobState.COMPLETED

def test_red(backend):
    [h] = submitted(backend.submit([JobSpec(script="echo boom-marker; exit 9\\n")]))
    wait_for(backend, [h], timeout=30)
    assert False, "deliberate"

def test_daemon_gone(backend, stack):
    raise InfrastructureError(stack.name, "the daemon went away",
                              logs="slurmctld: fatal: gone-marker")

def test_plain():
    pass
"""


PROJECT = Project(MANIFEST, pyfiles={"test_user": TESTS})


def results(alluredir: Path) -> dict[str, dict[str, Any]]:
    """Allure's test results by test name (one result per test in these runs)."""
    found: dict[str, dict[str, Any]] = {}
    for path in alluredir.glob("*-result.json"):
        result = json.loads(path.read_text())
        assert result["name"] not in found, f"two results for {result['name']}"
        found[result["name"]] = result
    return found


def labels(result: dict[str, Any], name: str) -> list[str]:
    return [label["value"] for label in result["labels"] if label["name"] == name]


def attachment(alluredir: Path, result: dict[str, Any], name: str) -> str:
    [found] = [a for a in result.get("attachments", []) if a["name"] == name]
    return (alluredir / str(found["source"])).read_text()


def properties(path: Path) -> dict[str, str]:
    """environment.properties as Java (and Allure) parse these simple lines."""
    out = {}
    for line in path.read_text().splitlines():
        if line and not line.startswith(("#", "!")):
            key, _, value = re.split(r"(?<!\\)([=:])", line, maxsplit=1)
            out[re.sub(r"\\(.)", r"\1", key)] = re.sub(r"\\(.)", r"\1", value)
    return out


def allure2_categories(categories: list[dict[str, Any]], result: dict[str, Any]) -> list[str]:
    """Allure 2 (and Allure 3's classic report): every category whose regexes full-match
    (DOTALL) and whose statuses include the result's; Product/Test defects only if none."""
    details = result.get("statusDetails") or {}
    matched = []
    for category in categories:
        statuses = category.get("matchedStatuses") or []
        regex = category.get("messageRegex")
        message = details.get("message")
        if statuses and result["status"] not in statuses:
            continue
        if regex is not None and (message is None or not re.fullmatch(regex, message, re.S)):
            continue
        matched.append(category["name"])
    return matched


def allure3_category(categories: list[dict[str, Any]], result: dict[str, Any]) -> str | None:
    """Allure 3 (categories in allurerc, compatibility keys): the first rule whose regex is
    found (JavaScript ``RegExp.test``) and whose statuses include the result's."""
    message = (result.get("statusDetails") or {}).get("message") or ""
    for category in categories:
        if result["status"] in category["matchedStatuses"] and re.search(
                category["messageRegex"], message):
            return str(category["name"])
    return None


def test_allure_pytest_is_installed() -> None:
    assert allure_support.available(), (
        "allure-pytest is a dev dependency of pytest-stacks: pip install -e '.[dev]'")


def test_results_carry_the_stack_as_parameter_labels_and_suite(project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurm", "--stack=fake-slurm-20.11",
                               "--alluredir=allure-results", "-k", "green or plain")
    result.assert_outcomes(passed=2, skipped=1)
    found = results(project.path / "allure-results")
    green = found["test_green[fake-slurm]"]
    assert green["status"] == "passed"
    # The stack's name, not the repr of the whole Stack allure-pytest would show.
    assert green["parameters"] == [{"name": "stack", "value": "'fake-slurm'"}]
    assert labels(green, "stack") == ["fake-slurm"]
    assert labels(green, "backend") == ["slurm"]
    assert labels(green, "version") == ["24.11.5"]
    assert labels(green, "provider") == ["fake"]
    assert labels(green, "claimed_version") == ["fake, claims 24.11.5"]  # a double, not seen
    assert labels(green, "observed_version") == []
    assert labels(green, "capability") == ["outputs", "submit"]
    assert labels(green, "tag") == ["backend:slurm", "provider:fake", "requires:outputs",
                                    "requires:submit"]
    assert labels(green, "parentSuite") == ["fake-slurm"]
    assert labels(green, "suite") == ["test_user"]
    # Skipped for a missing capability on the other stack: described all the same.
    old = found["test_green[fake-slurm-20.11]"]
    assert old["status"] == "skipped"
    assert "lacks capability: outputs" in old["statusDetails"]["message"]
    assert labels(old, "version") == ["20.11.4"]
    assert labels(old, "parentSuite") == ["fake-slurm-20.11"]
    # A test without a stack is left as allure-pytest describes it.
    plain = found["test_plain"]
    assert not labels(plain, "stack") and not labels(plain, "parentSuite")
    assert labels(plain, "suite") == ["test_user"]


def test_history_is_keyed_on_the_stack_name(project: pytest.Pytester) -> None:
    """Allure groups history and retries by historyId; the whole Stack's repr (paths, every
    manifest field) would break it across checkouts and manifest edits."""
    project.runpytest("--stack=fake-slurm", "--stack=fake-slurm-20.11",
                      "--alluredir=allure-results", "-k", "green")
    found = results(project.path / "allure-results")
    for name in ("fake-slurm", "fake-slurm-20.11"):
        green = found[f"test_green[{name}]"]
        expected = hashlib.md5(f"{green['fullName']}{name}".encode()).hexdigest()
        assert green["historyId"] == expected, name


def test_a_failure_carries_the_scheduler_view_and_daemon_logs(project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurm", "--alluredir=allure-results",
                               "-k", "red")
    result.assert_outcomes(failed=1)
    alluredir = project.path / "allure-results"
    red = results(alluredir)["test_red[fake-slurm]"]
    assert red["status"] == "failed"
    assert red["statusDetails"]["message"].startswith("AssertionError: deliberate")
    view = attachment(alluredir, red, "scheduler view of this test's jobs")
    assert "scontrol show job" in view and "ExitCode=9:0" in view and "boom-marker" in view
    logs = attachment(alluredir, red, "daemon logs")
    # The daemon's own log: the job's submission and its end, as slurmctld writes them.
    assert "_slurm_rpc_submit_batch_job: JobId=1 " in logs and "JobState=FAILED" in logs
    assert all(a["type"] == "text/plain" for a in red["attachments"])


def test_an_infrastructure_error_is_broken_and_in_the_infra_category(
        project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurm", "--stack=broken-slurm",
                               "--alluredir=allure-results", "-k", "green or red")
    result.assert_outcomes(passed=1, failed=1, skipped=1)  # and the infra below
    assert "1 infra" in result.stdout.lines[-1]  # broken-slurm: red is infra, green skipped
    alluredir = project.path / "allure-results"
    found = results(alluredir)
    cats = json.loads((alluredir / "categories.json").read_text())
    infra = found["test_red[broken-slurm]"]
    assert infra["status"] == "broken"
    message = infra["statusDetails"]["message"]
    assert message.startswith(f"{allure_support.INFRA_PREFIX}: stack 'broken-slurm': "
                              "functional probe job did not finish")
    assert re.fullmatch(allure_support.INFRA_REGEX, message, re.S)
    # The traceback reporting's one-line verdict hides stays in the trace.
    assert "InfrastructureError" in infra["statusDetails"]["trace"]
    # The daemon's own record of the probe job it never ran (submitted, never allocated).
    assert "_slurm_rpc_submit_batch_job: JobId=1 " in attachment(alluredir, infra,
                                                                  "daemon logs")
    assert allure2_categories(cats, infra) == [allure_support.INFRA_CATEGORY]
    assert allure3_category(cats, infra) == allure_support.INFRA_CATEGORY
    product = found["test_red[fake-slurm]"]
    assert allure2_categories(cats, product) == [allure_support.PRODUCT_CATEGORY]
    assert allure3_category(cats, product) == allure_support.PRODUCT_CATEGORY
    assert allure2_categories(cats, found["test_green[fake-slurm]"]) == []


def test_an_infrastructure_error_during_the_test_is_not_a_product_failure(
        project: pytest.Pytester) -> None:
    result = project.runpytest("--stack=fake-slurm", "--alluredir=allure-results",
                               "-k", "daemon_gone or green")
    assert "1 infra" in result.stdout.lines[-1]
    alluredir = project.path / "allure-results"
    gone = results(alluredir)["test_daemon_gone[fake-slurm]"]
    assert gone["status"] == "broken"
    assert gone["statusDetails"]["message"] == (
        "INFRASTRUCTURE ERROR (not a test failure): stack 'fake-slurm': the daemon went away")
    assert "gone-marker" in attachment(alluredir, gone, "daemon logs")
    cats = json.loads((alluredir / "categories.json").read_text())
    assert allure2_categories(cats, gone) == [allure_support.INFRA_CATEGORY]


def test_an_infrastructure_error_in_teardown_keeps_an_earlier_product_failure(
        project: pytest.Pytester) -> None:
    project.makepyfile(test_teardown="""
        import pytest
        from pytest_stacks.errors import InfrastructureError

        @pytest.fixture
        def dies_after(stack):
            yield
            raise InfrastructureError(stack.name, "lost the daemon in teardown")

        def test_fails_then_infra(backend, dies_after):
            assert 1 == 2, "the product's own failure"
    """)
    project.runpytest("--stack=fake-slurm", "--alluredir=allure-results", "test_teardown.py")
    result = results(project.path / "allure-results")["test_fails_then_infra[fake-slurm]"]
    assert result["status"] == "failed"
    assert result["statusDetails"]["message"].startswith(
        "AssertionError: the product's own failure")


def test_environment_properties_record_the_observed_versions(project: pytest.Pytester) -> None:
    alluredir = project.path / "allure-results"
    alluredir.mkdir()
    (alluredir / "environment.properties").write_text(
        "# the project's own\nteam=hpc\nstack.fake-slurm.claimed_version=stale\n")
    project.runpytest("--stack=fake-slurm", "--stack=broken-slurm",
                      "--alluredir=allure-results", "-k", "green or red")
    env = properties(alluredir / "environment.properties")
    assert env["team"] == "hpc"  # kept
    # A fake's version is what it claims (replaced, not duplicated), never "observed".
    assert env["stack.fake-slurm.claimed_version"] == "fake, claims 24.11.5"
    assert (alluredir / "environment.properties").read_text().count("fake-slurm.claimed") == 1
    assert "stack.fake-slurm.observed_version" not in env
    assert env["stack.fake-slurm.pinned_version"] == "24.11.5"
    assert env["stack.fake-slurm.backend"] == "slurm"
    assert env["stack.fake-slurm.provider"] == "fake"
    assert "stack.broken-slurm.observed_version" not in env  # it never came up
    assert env["stack.broken-slurm.infrastructure_error"].startswith(
        "functional probe job did not finish")
    assert env["pytest-stacks.lane"] == "pinned"
    assert env["pytest.version"] == pytest.__version__
    assert not any(k.startswith("stack.fake-slurm-20.11.") for k in env)  # not selected


def test_categories_merge_with_the_projects_own(project: pytest.Pytester) -> None:
    alluredir = project.path / "allure-results"
    alluredir.mkdir()
    theirs = {"name": "Timeouts", "messageRegex": ".*TimeoutError.*",
              "matchedStatuses": ["broken"]}
    stale = {"name": allure_support.PRODUCT_CATEGORY, "matchedStatuses": ["skipped"]}
    (alluredir / "categories.json").write_text(json.dumps([stale, theirs]))
    project.runpytest("--stack=fake-slurm", "--alluredir=allure-results", "-k", "green")
    cats = json.loads((alluredir / "categories.json").read_text())
    assert [c["name"] for c in cats] == [allure_support.INFRA_CATEGORY, "Timeouts",
                                        allure_support.PRODUCT_CATEGORY,
                                        allure_support.TEST_ERRORS_CATEGORY]
    assert cats[1] == theirs
    [infra] = [c for c in cats if c["name"] == allure_support.INFRA_CATEGORY]
    assert infra["messageRegex"] == r"INFRASTRUCTURE ERROR \(not a test failure\).*"
    assert infra["matchedStatuses"] == ["broken", "failed"]
    assert cats[2]["matchedStatuses"] == ["failed"]  # ours, not the stale copy


def test_an_unreadable_categories_file_is_left_alone(project: pytest.Pytester) -> None:
    alluredir = project.path / "allure-results"
    alluredir.mkdir()
    (alluredir / "categories.json").write_text("{not json")
    result = project.runpytest("--stack=fake-slurm", "--alluredir=allure-results", "-k", "green")
    assert (alluredir / "categories.json").read_text() == "{not json"
    result.stdout.fnmatch_lines(["*pytest-stacks:*categories.json is not valid JSON*left as it "
                                 "is*"])


def test_fail_closed_problems_become_global_errors(project: pytest.Pytester) -> None:
    project.makepyfile(test_only_mpi="""
        import pytest
        @pytest.mark.requires("mpi")
        def test_mpi(backend):
            pass
    """)
    result = project.runpytest("--stack=fake-slurm", "--alluredir=allure-results",
                               "test_only_mpi.py")
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    errors = [e["message"] for path in (project.path / "allure-results").glob("*-globals.json")
              for e in json.loads(path.read_text()).get("errors", [])]
    assert errors == ["FAIL-CLOSED: fake-slurm: no test ran on this stack (all skipped or "
                      "deselected). A selected stack must run at least one test."]


def test_under_xdist_workers_write_results_and_the_controller_the_run_files(
        project: pytest.Pytester) -> None:
    result = project.runpytest_subprocess("-n", "2", "--stack=fake-slurm",
                                          "--stack=fake-slurm-20.11",
                                          "--alluredir=allure-results", "-k", "green or red")
    result.assert_outcomes(passed=1, failed=2, skipped=1)
    alluredir = project.path / "allure-results"
    found = results(alluredir)
    assert labels(found["test_red[fake-slurm-20.11]"], "parentSuite") == ["fake-slurm-20.11"]
    assert "scheduler view of this test's jobs" in [
        a["name"] for a in found["test_red[fake-slurm-20.11]"]["attachments"]]
    env = properties(alluredir / "environment.properties")
    assert env["stack.fake-slurm.claimed_version"] == "fake, claims 24.11.5"
    assert env["stack.fake-slurm-20.11.claimed_version"] == "fake, claims 20.11.4"


PROBE = textwrap.dedent("""
    def test_probe(pytestconfig):
        print("ALLURE-PLUGIN:", pytestconfig.pluginmanager.has_plugin("pytest-stacks-allure"))
""")


def test_registered_only_with_alluredir(project: pytest.Pytester) -> None:
    project.makepyfile(test_probe=PROBE)
    without = project.runpytest("-s", "test_probe.py")
    without.stdout.fnmatch_lines(["*ALLURE-PLUGIN: False*"])
    with_dir = project.runpytest("-s", "--alluredir=allure-results", "test_probe.py")
    with_dir.stdout.fnmatch_lines(["*ALLURE-PLUGIN: True*"])


def test_nothing_without_allure_pytest(project: pytest.Pytester,
                                       monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(allure_support, "available", lambda: False)
    project.makepyfile(test_probe=PROBE)
    result = project.runpytest("-s", "--alluredir=allure-results", "test_probe.py")
    result.stdout.fnmatch_lines(["*ALLURE-PLUGIN: False*"])
    assert not (project.path / "allure-results" / "categories.json").exists()


def test_a_project_without_a_manifest_gets_nothing(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")
    pytester.makepyfile(test_probe=PROBE)
    result = pytester.runpytest("-s", "--alluredir=allure-results")
    result.stdout.fnmatch_lines(["*ALLURE-PLUGIN: False*"])
    assert not (pytester.path / "allure-results" / "environment.properties").exists()
