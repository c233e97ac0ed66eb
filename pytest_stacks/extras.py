"""The optional parts of pytest-stacks (pip extras) and which stacks need which.

A project that runs only the fakes installs pytest-stacks alone: no Docker SDK, SSH, Kubernetes
client, crypto library or HTCondor bindings. A stack brought up or reached another way needs
its extra, and a run or command that lacks it says which extra and the line that installs it
(never a traceback about a module).
"""

from __future__ import annotations

import importlib.util

from pytest_stacks import registry

#: Each extra (``pip install 'pytest-stacks[NAME]'``) and the modules it brings.
EXTRAS: dict[str, tuple[str, ...]] = {
    "docker": ("docker",),
    "ssh": ("paramiko", "cryptography"),
    "kubernetes": ("lightkube",),
    "htcondor": ("htcondor2", "classad2"),
}

#: Where the install lines for a git URL and a release wheel are written out.
INSTALL_DOCS = "docs/user-guide.md#install"


def needed(provider: str, transport: str) -> list[str]:
    """The extras a stack of this provider and transport needs (none for a fake)."""
    spec = registry.PROVIDERS.get(provider)
    if spec is None or spec.in_process:
        return []
    wanted = ["docker"] if spec.engine else []
    way = registry.TRANSPORTS.get(transport)
    return wanted + ([way.extra] if way is not None and way.extra else [])


def extra_of(module: str) -> str | None:
    """The extra that brings ``module`` (a dotted name is judged by its top package)."""
    top = module.split(".")[0]
    return next((name for name, modules in EXTRAS.items() if top in modules), None)


def missing(extras: list[str]) -> list[str]:
    """The extras among ``extras`` whose modules cannot be found in this environment (found
    without importing them: a run that uses no container stack never pays for the SDKs)."""
    return [name for name in extras if not all(_found(m) for m in EXTRAS[name])]


def _found(module: str) -> bool:
    try:
        return importlib.util.find_spec(module) is not None
    except (ImportError, ValueError):
        return False


def install_line(extras: list[str]) -> str:
    """The command that installs ``extras``, and where the other install forms are."""
    return (f"pip install 'pytest-stacks[{','.join(extras)}]' (the same [{','.join(extras)}] "
            f"after a git URL or a release wheel: {INSTALL_DOCS})")


def missing_module_message(module: str) -> str | None:
    """What to say for a ModuleNotFoundError of ``module``, if an extra brings it."""
    extra = extra_of(module)
    if extra is None:
        return None
    return (f"the Python package {module.split('.')[0]!r} is not installed; it comes with "
            f"pytest-stacks' {extra!r} extra: {install_line([extra])}")
