"""pytest-stacks: one backend-agnostic suite against pinned, real batch daemons and fakes.

The names a test file needs most are here (``from pytest_stacks import JobSpec, wait_for``);
:mod:`pytest_stacks.contract` has the whole contract. They are loaded on first use, not at
``import pytest_stacks``: the package is imported by every module of ours that reads
``__version__`` (the manifest's catalogue, the results' renderer), and the contract costs about
40 ms more to import (the polling helpers' file lock), which a CLI call that never submits a
job should not pay. The plugin itself is not here: it imports pytest, and a name read from this
package must never make a module of a lower layer import it.
"""

from __future__ import annotations

# Not typing's: importing typing would double what `import pytest_stacks` costs (mypy reads any
# name TYPE_CHECKING as true).
TYPE_CHECKING = False

__version__ = "0.1.0"

#: Each name of ``__all__`` (but ``__version__``) and the module it is loaded from.
_LAZY = {
    "JobSpec": "pytest_stacks.contract",
    "JobState": "pytest_stacks.contract",
    "JobHandle": "pytest_stacks.contract",
    "JobStatus": "pytest_stacks.contract",
    "SubmitResult": "pytest_stacks.contract",
    "OutputResult": "pytest_stacks.contract",
    "ActionResult": "pytest_stacks.contract",
    "JobClient": "pytest_stacks.contract",
    "TERMINAL": "pytest_stacks.contract",
    "submitted": "pytest_stacks.contract",
    "wait_for": "pytest_stacks.contract",
    "BackendCallError": "pytest_stacks.errors",
    "InfrastructureError": "pytest_stacks.errors",
    "StacksError": "pytest_stacks.errors",
}

__all__ = ["TERMINAL", "ActionResult", "BackendCallError", "InfrastructureError", "JobClient",
           "JobHandle", "JobSpec", "JobState", "JobStatus", "OutputResult", "StacksError",
           "SubmitResult", "__version__", "submitted", "wait_for"]

if TYPE_CHECKING:  # what type checkers and editors see; at run time, __getattr__ below
    from typing import Any

    from pytest_stacks.contract import (
        TERMINAL,
        ActionResult,
        JobClient,
        JobHandle,
        JobSpec,
        JobState,
        JobStatus,
        OutputResult,
        SubmitResult,
        submitted,
        wait_for,
    )
    from pytest_stacks.errors import BackendCallError, InfrastructureError, StacksError
else:
    def __getattr__(name: str) -> Any:
        """Load one exported name on first use (PEP 562), and keep it: the next read is a
        plain attribute. Any other name is an AttributeError, so ``from pytest_stacks import
        places`` still finds the submodule."""
        module = _LAZY.get(name)
        if module is None:
            raise AttributeError(f"module 'pytest_stacks' has no attribute {name!r}")
        from importlib import import_module

        value = getattr(import_module(module), name)
        globals()[name] = value
        return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
