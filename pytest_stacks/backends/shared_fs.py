"""Whether a stack's submit side and its nodes share the job area (``options.shared_fs``,
true unless said otherwise): read by the compose override that gives each node its own
(:mod:`pytest_stacks.providers.unshared_fs`) and by the drivers that must then stage
everything through the scheduler itself, so the two never disagree about the stack."""

from __future__ import annotations

from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import Stack

OPTION = "shared_fs"


def shared(stack: Stack) -> bool:
    """StacksError naming the option and the fix for anything but a boolean."""
    value = stack.options.get(OPTION, True)
    if not isinstance(value, bool):
        raise StacksError(f"manifest: stack {stack.name}: options.{OPTION} must be true or "
                          f"false (false: the login node and each compute node have their "
                          f"own job area), got {value!r}")
    return value
