"""Bringing several stacks up: the setting that bounds it, runs that must start nothing, and
keeping a stack's tests on one xdist worker."""

from __future__ import annotations

import re

import pytest

from tests.manifests import Project, slurm_trio, stack

pytest_plugins = ["pytester"]

MANIFEST = slurm_trio(keep_jobs=False)


TESTS = """
def test_a(backend, stack):
    pass

def test_b(backend, stack):
    pass

def test_c(backend, stack):
    pass
"""


# Not about capabilities: these tests prove none, and say so without failing.
PROJECT = Project(MANIFEST, ini="stacks_manifest = manifest.yaml\nstacks_unproven = warn\n",
                  pyfiles={"test_user": TESTS})


@pytest.mark.parametrize("bad", ["0", "-2"])
def test_a_bound_below_one_is_a_usage_error(project: pytest.Pytester, bad: str) -> None:
    result = project.runpytest(f"--stack-parallel={bad}", "--stack=fake-slurm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--stack-parallel must be a whole number >= 1*"])


def test_a_bad_ini_bound_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", manifest=MANIFEST)
    pytester.makeini("[pytest]\nstacks_manifest = manifest.yaml\nstacks_parallel = many\n")
    pytester.makepyfile(test_user=TESTS)
    result = pytester.runpytest("--stack=fake-slurm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*stacks_parallel*got 'many'*"])
    assert "Traceback" not in result.stderr.str()


def test_collect_only_starts_nothing_and_does_not_fail_closed(project: pytest.Pytester) -> None:
    result = project.runpytest("--collect-only", "-q", "--stack=fake-slurm",
                               "--stack=broken-slurm")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    assert "FAIL-CLOSED" not in result.stdout.str()
    assert "INFRASTRUCTURE" not in result.stdout.str()


def _workers_by_stack(lines: list[str]) -> dict[str, set[str]]:
    workers: dict[str, set[str]] = {}
    for line in lines:
        found = re.search(r"\[(gw\d)\] .*PASSED .*test_\w\[([\w.-]+)\]", line)
        if found:
            workers.setdefault(found.group(2), set()).add(found.group(1))
    return workers


def test_stack_group_keeps_each_stacks_tests_on_one_worker(project: pytest.Pytester) -> None:
    project.makepyfile(test_more="".join(f"def test_{i}(backend, stack):\n    pass\n"
                                         for i in range(8)))
    result = project.runpytest("-n", "2", "--stack-group", "-v", "-p", "no:randomly",
                               "--stack=fake-slurm", "--stack=fake-slurm-20.11")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    workers = _workers_by_stack(result.stdout.lines)
    assert set(workers) == {"fake-slurm", "fake-slurm-20.11"}, result.stdout.str()
    assert all(len(gws) == 1 for gws in workers.values()), workers
    assert workers["fake-slurm"] != workers["fake-slurm-20.11"], "both stacks on one worker"


@pytest.mark.parametrize(("nodeid", "scope"), [
    ("t.py::test_a[slurm-24.11]", "stack:slurm-24.11"),
    ("t.py::test_a[fake-slurm-24.11]", "stack:fake-slurm-24.11"),
    ("t.py::test_a[slurm-24.11-x1]", "stack:slurm-24.11"),
    ("t.py::test_a[x1-slurm-24.11]", "stack:slurm-24.11"),
    ("t.py::test_slurm-24.11", "t.py::test_slurm-24.11"),
    ("t.py::test_plain", "t.py::test_plain"),
])
def test_the_scope_is_the_stack_named_in_the_parameters(nodeid: str, scope: str) -> None:
    from pytest_stacks.plugin.xdist import stack_scope

    assert stack_scope(nodeid, ["slurm-24.11", "fake-slurm-24.11"]) == scope


SLOW_SITE = stack("slow-site", description="A compose stack whose bring-up is replaced by a "
                  "slow one (conftest).", provider="compose", configuration="default",
                  capabilities=("submit", "status"), lanes=("full",),
                  compose="{directory: ., service: slurm}")

SLOW_UP = """
import time

from pytest_stacks import progress
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.providers.compose import ComposeProvider

ORIGINAL = ComposeProvider.up
progress.STILL_EVERY = 0.3


def up(self, stack, ctx):
    with progress.step("Go build kubernetes-v9.9.9"):
        time.sleep(1.0)
    raise InfrastructureError(stack.name, "no engine in this test")


ComposeProvider.up = up


def pytest_unconfigure(config):  # pytester runs share this process
    ComposeProvider.up = ORIGINAL
    progress.STILL_EVERY = 60.0
"""


def test_long_bring_up_steps_are_said_while_they_run_and_not_under_q(
        project: pytest.Pytester) -> None:
    (project.path / "manifest.yaml").write_text(MANIFEST + SLOW_SITE)
    (project.path / "compose.yaml").write_text("services: {slurm: {image: none}}\n")
    project.makeconftest(SLOW_UP)
    said = project.runpytest("--stack=slow-site", "-k", "test_a", "-p", "no:randomly")
    out = said.stdout.str()
    assert re.search(r"\[pytest-stacks \d\d:\d\d:\d\d\] slow-site: Go build kubernetes-v9\.9\.9 "
                     r"\.\.\.", out), out
    assert "slow-site: Go build kubernetes-v9.9.9: still running after" in out, out
    assert re.search(r"slow-site: Go build kubernetes-v9\.9\.9 done in 1\.\d s", out), out
    assert "slow-site: bring-up failed in" in out, out
    quiet = project.runpytest("--stack=slow-site", "-k", "test_a", "-q", "-p", "no:randomly")
    assert "[pytest-stacks" not in quiet.stdout.str()
    assert "1 infra" in quiet.stdout.str()
