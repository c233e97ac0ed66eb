"""Which stacks a run uses and which tests apply to a stack: pure functions, no pytest."""

from __future__ import annotations

import difflib
import fnmatch
from collections.abc import Iterable, Sequence

from packaging.specifiers import InvalidSpecifier, SpecifierSet

from pytest_stacks.errors import UnknownStackError
from pytest_stacks.manifest import Manifest, Stack


def select(manifest: Manifest, patterns: Sequence[str]) -> list[Stack]:
    """Stacks matching ``patterns`` (names or shell globs), in manifest order.

    No pattern means the fake stacks: the fast lane that needs no Docker. Every pattern must
    match something; a typo is a usage error, never an empty run.
    """
    if not patterns:
        return [s for s in manifest.stacks if s.provider == "fake"]
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
    close = difflib.get_close_matches(pattern, names, n=1, cutoff=0.5)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    return (f"unknown stack {pattern!r} (manifest: {manifest.path}).{hint}\n"
            f"Known stacks: {', '.join(names)}")


def missing_capabilities(stack: Stack, required: Iterable[str]) -> list[str]:
    return sorted(set(required) - stack.capabilities)


def unknown_capabilities(manifest: Manifest, named: Iterable[str]) -> list[tuple[str, str | None]]:
    """Capability names not in the manifest's vocabulary, each with its closest match."""
    out = []
    for name in named:
        if name not in manifest.capabilities:
            close = difflib.get_close_matches(name, list(manifest.capabilities), n=1, cutoff=0.6)
            out.append((name, close[0] if close else None))
    return out


def version_matches(stack: Stack, specifier: str, backend: str | None = None) -> bool:
    """True when ``stack`` is of ``backend`` (if given) and its version is in ``specifier``."""
    if backend is not None and stack.backend != backend:
        return False
    return stack.parsed_version in parse_specifier(specifier)


def parse_specifier(specifier: str) -> SpecifierSet:
    try:
        return SpecifierSet(specifier)
    except InvalidSpecifier as exc:
        raise ValueError(f"{specifier!r} is not a PEP 440 version specifier "
                         f"(e.g. '>=24.11', '<23.11,>=22.05'): {exc}") from None
