"""examples/subprocess-client, unchanged, passes its own tests on the fakes (the default
lane); tests/backend/test_example_subprocess_client.py runs the same on a real stack."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

pytest_plugins = ["pytester"]

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "subprocess-client"


def test_the_example_client_passes_its_own_tests_on_the_fakes(
        pytester: pytest.Pytester) -> None:
    shutil.copytree(EXAMPLE, pytester.path / "client", ignore=shutil.ignore_patterns(
        "__pycache__", ".pytest_cache", ".pytest-stacks"))
    result = pytester.runpytest_subprocess(
        str(pytester.path / "client"), "--rootdir", str(pytester.path / "client"),
        "-c", str(pytester.path / "client" / "pytest.ini"), "-p", "no:randomly",
        "-p", "no:cacheprovider", "--stack=fake-slurm-minjobage", "--stack=fake-htcondor",
        "--stack-results=", timeout=600)
    # 5 Slurm tests on fake-slurm, 4 HTCondor tests on fake-htcondor; none skipped.
    result.assert_outcomes(passed=9, deselected=9)
