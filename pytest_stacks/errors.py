"""Exception types that cross layer boundaries.

They are few on purpose: callers (the plugin, the CLI) turn them into user-facing messages, so
each carries a message written for a person, never a traceback.
"""

from __future__ import annotations


class StacksError(Exception):
    """Base class: anything pytest-stacks reports to a user as a clear message."""


class ManifestError(StacksError):
    """The manifest cannot be used. ``problems`` holds one formatted line per defect."""

    def __init__(self, problems: list[str]) -> None:
        self.problems = problems
        super().__init__("\n".join(problems))


class UnknownStackError(StacksError):
    """A requested stack name or pattern matches nothing in the manifest."""


class InfrastructureError(StacksError):
    """A stack could not be brought up, verified or torn down.

    This is never a product failure: the plugin reports it in its own category so a broken
    Docker engine can never pass for, or hide behind, a red test.
    """

    def __init__(self, stack: str, message: str, logs: str = "") -> None:
        self.stack = stack
        self.message = message
        self.logs = logs
        super().__init__(f"stack {stack!r}: {message}")


class BackendCallError(StacksError):
    """A whole bulk call failed (daemon down, auth refused). Per-job failures are values."""
