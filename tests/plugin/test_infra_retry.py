"""``--stack-infra-retry``: bad input is a usage error (exit 4) naming the option and the fix,
before any stack starts; 0 is the default and changes nothing; a count above 0 is refused
(fail closed) until the retry itself exists, never accepted and ignored."""

from __future__ import annotations

import pytest

from tests.manifests import Project, fake_slurm

pytest_plugins = ["pytester"]

MANIFEST = fake_slurm()

TESTS = """
def test_a(backend, stack):
    pass
"""


PROJECT = Project(MANIFEST, ini="stacks_manifest = manifest.yaml\nstacks_unproven = warn\n",
                  pyfiles={"test_user": TESTS})


@pytest.mark.parametrize("bad", ["-1", "1.5", "", "many", " "])
def test_bad_counts_are_usage_errors(project: pytest.Pytester, bad: str) -> None:
    result = project.runpytest(f"--stack-infra-retry={bad}", "--stack=fake-slurm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--stack-infra-retry must be a whole number >= 0*"
                                 "use --stack-infra-retry=0*"])
    assert "Traceback" not in result.stderr.str()
    assert "passed" not in result.stdout.str()


def test_a_bad_ini_count_is_a_usage_error_naming_the_ini_option(
        pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", manifest=MANIFEST)
    pytester.makeini("[pytest]\nstacks_manifest = manifest.yaml\nstacks_infra_retry = -3\n")
    pytester.makepyfile(test_user=TESTS)
    result = pytester.runpytest("--stack=fake-slurm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*the ini option stacks_infra_retry must be a whole number*"
                                 "got '-3'*"])
    assert "Traceback" not in result.stderr.str()


def test_zero_is_the_default_and_runs_as_before(project: pytest.Pytester) -> None:
    result = project.runpytest("--stack-infra-retry=0", "--stack=fake-slurm",
                               "--stack-results=none")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str() + result.stderr.str()
    result.assert_outcomes(passed=1)


def test_a_positive_count_is_refused_until_retry_exists(project: pytest.Pytester) -> None:
    result = project.runpytest("--stack-infra-retry=1", "--stack=fake-slurm")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--stack-infra-retry is 1, but bringing a broken stack up "
                                 "again is not supported yet*"])
    assert "passed" not in result.stdout.str()


def test_the_option_is_in_the_help(project: pytest.Pytester) -> None:
    result = project.runpytest("--help")
    result.stdout.fnmatch_lines(["*--stack-infra-retry=N*"])
    result.stdout.fnmatch_lines(["*stacks_infra_retry*"])
