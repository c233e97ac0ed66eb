"""Which stacks a run uses and which tests apply to a stack: pure functions, no pytest."""

from __future__ import annotations

import fnmatch
from collections.abc import Iterable, Sequence

import yaml
from packaging.version import Version

from pytest_stacks.errors import UnknownStackError
from pytest_stacks.manifest import Manifest, Stack
from pytest_stacks.suggest import closest, did_you_mean
from pytest_stacks.versions import parse_specifier

__all__ = ["missing_capabilities", "parse_specifier", "select", "unknown_capabilities",
           "unknown_stack_message", "version_matches"]


def select(manifest: Manifest, patterns: Sequence[str]) -> list[Stack]:
    """Stacks matching ``patterns`` (names or shell globs), in manifest order.

    No pattern means the fake stacks: the fast lane that needs no Docker. Every pattern must
    match something; a typo is a usage error, never an empty run.
    """
    if not patterns:
        return [s for s in manifest.stacks if s.is_fake]
    names = manifest.names()
    chosen: set[str] = set()
    for pattern in patterns:
        for part in (p.strip() for p in pattern.split(",")):
            if not part:
                continue
            matched = fnmatch.filter(names, part)
            if not matched:
                raise UnknownStackError(unknown_stack_message(part, names, manifest))
            chosen.update(matched)
    return [s for s in manifest.stacks if s.name in chosen]


def unknown_stack_message(pattern: str, names: Sequence[str], manifest: Manifest) -> str:
    left_out = _left_out_of_use(pattern, manifest)
    if left_out:
        return (f"unknown stack {pattern!r} (manifest: {manifest.path}): the catalogue "
                f"({manifest.catalogue}) has {', '.join(left_out)}, but this manifest's "
                f"catalogue.use leaves it out. Add {left_out[0]!r} to catalogue.use in "
                f"{manifest.path} (or drop `use` to use every catalogue stack).\n"
                f"Known stacks: {', '.join(names)}")
    hint = did_you_mean(pattern, names, cutoff=0.5)
    return (f"unknown stack {pattern!r} (manifest: {manifest.path}).{hint}\n"
            f"Known stacks: {', '.join(names)}")


def _left_out_of_use(pattern: str, manifest: Manifest) -> list[str]:
    """The catalogue stacks ``pattern`` names that the manifest extending the catalogue did
    not pick with ``catalogue.use`` (read from the catalogue file itself; empty if none)."""
    if manifest.catalogue is None:
        return []
    try:
        raw = yaml.safe_load(manifest.catalogue.read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return []
    catalogue = [str(s.get("name")) for s in raw.get("stacks") or [] if isinstance(s, dict)]
    return [n for n in fnmatch.filter(catalogue, pattern) if n not in manifest.names()]


def missing_capabilities(stack: Stack, required: Iterable[str]) -> list[str]:
    return sorted(set(required) - stack.capabilities)


def unknown_capabilities(manifest: Manifest, named: Iterable[str]) -> list[tuple[str, str | None]]:
    """Capability names not in the manifest's vocabulary, each with its closest match."""
    out = []
    for name in named:
        if name not in manifest.capabilities:
            out.append((name, closest(name, manifest.capabilities)))
    return out


def version_matches(stack: Stack, specifier: str, backend: str | None = None,
                    component: str | None = None) -> bool:
    """True when ``stack`` is of ``backend`` (if given) and its version, or the pinned version
    of ``component`` (the MPI Operator's ``kubernetes``), is in ``specifier``. A stack that
    pins no such component matches nothing: what it runs is not known before it is up."""
    if backend is not None and stack.backend != backend:
        return False
    if component is None:
        return stack.parsed_version in parse_specifier(specifier)
    version = stack.components.get(component)
    return version is not None and Version(version) in parse_specifier(specifier)

