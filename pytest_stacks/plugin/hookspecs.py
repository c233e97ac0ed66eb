"""Hooks a user's conftest.py can implement."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_stacks.manifest import Stack


@pytest.hookspec(firstresult=True)
def pytest_stacks_backend(stack: Stack, default: Any, info: dict[str, Any]) -> Any:
    """Return the client object the ``backend`` fixture hands to tests on ``stack``.

    ``default`` is the repo's reference driver, already connected; ``info`` says how the stack
    is reached (ports, token directory, container, observed versions). Return None to keep the
    default. Called once per stack per process.
    """
