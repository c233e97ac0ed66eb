"""Fixtures every test folder shares. Kept light: this file is loaded by every run of the
suite (the contract tests on real stacks too), so it imports nothing heavier than pytest."""

from __future__ import annotations

import pytest

from tests.manifests import Project


@pytest.fixture
def project(request: pytest.FixtureRequest, pytester: pytest.Pytester) -> pytest.Pytester:
    """The pytester project the test's module declares as ``PROJECT`` (a
    :class:`tests.manifests.Project`): its manifest, ini and test files, made in the test's
    own folder. One fixture instead of a copy in every module that runs the plugin."""
    declared = getattr(request.module, "PROJECT", None)
    if not isinstance(declared, Project):
        pytest.fail(f"{request.module.__name__} asks for the `project` fixture but declares no "
                    "PROJECT = Project(...) (tests/manifests.py)", pytrace=False)
    return declared.make(pytester)
