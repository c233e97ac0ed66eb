"""A copy of this process's environment that is safe while other threads change it.

``{**os.environ}`` lists the keys, then reads each one; pytest sets and removes
``PYTEST_CURRENT_TEST`` around every test phase, so a stack torn down on a worker thread while
the next test starts could read a key that was there a moment ago and fail with a KeyError (a
teardown reported as unproven for nothing). :func:`snapshot` skips a key that went away.
"""

from __future__ import annotations

import os
from collections.abc import Mapping


def snapshot(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    """The environment now, plus ``extra``; a key removed while it is read is left out."""
    env: dict[str, str] = {}
    for key in list(os.environ):
        value = os.environ.get(key)
        if value is not None:
            env[key] = value
    env.update(extra or {})
    return env
