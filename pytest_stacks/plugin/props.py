"""The names the plugin writes on test reports (``user_properties``) and reads back from them:
kept apart from the session state and the tally, so both can read them without importing each
other."""

from __future__ import annotations

import pytest

PROP_STACK = "pytest-stacks:stack"
PROP_INFRA = "pytest-stacks:infra"
#: On the reports of a test's attempt that a fault broke and an infra retry ran again: JSON
#: ``{"attempt": N, "fault": "..."}`` (the bring-up that broke, the fault as named).
PROP_RETRIED = "pytest-stacks:infra-retried"
#: The outcome those reports carry: neither passed nor failed (the test's last attempt says).
RETRIED = "infra-retried"
#: On an item an infra retry ran again: the fault of each attempt it broke, in order.
RETRIED_FAULTS = pytest.StashKey[list[str]]()
PROP_REQUIRES = "pytest-stacks:requires"
PROP_IDENTITY = "pytest-stacks:identity"
#: Set by tests/parity on a fake: the recording it was checked against, and when it was made.
PROP_PARITY = "pytest-stacks:parity"
