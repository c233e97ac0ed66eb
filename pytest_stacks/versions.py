"""Release series and version comparisons, in one place.

A backend's window names release *series* ("22.05", "25.13"); stacks pin exact versions
("22.05.8"). Whether a version lies in a series, beyond it, or which role it plays in a window
is asked by the manifest, the CI lanes and the drivers alike, so the rule is written once.
"""

from __future__ import annotations

from typing import Literal

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

Role = Literal["legacy", "anchor", "supported", "leading-edge"]


def release(version: str) -> tuple[int, ...]:
    """The numeric release of ``version`` (``"25.8.2"`` -> ``(25, 8, 2)``); () if unparsable."""
    try:
        return Version(version).release
    except InvalidVersion:
        return ()


def in_series(version: str, series: str) -> bool:
    """True when ``version`` lies in the release series ``series`` (22.05.8 in 22.05)."""
    head = release(series)
    return bool(head) and release(version)[: len(head)] == head


def series_after(version: str, series: str) -> bool:
    """True when ``version`` lies beyond the release series ``series``."""
    head = release(series)
    return release(version)[: len(head)] > head


def series_of(version: str) -> tuple[int, ...]:
    """The release series of ``version``: its first two numbers (``24.11.5`` -> ``(24, 11)``)."""
    return release(version)[:2]


def not_older_series(version: str, pin: str) -> bool:
    """True when ``version`` lies in the series of ``pin`` or a later one: what a canary's
    floating reference may report (it floats forward from its pin, never back). Unparsable
    or empty: False."""
    mine, head = series_of(version), series_of(pin)
    return bool(mine) and bool(head) and mine >= head


def at_least(version: str, minimum: tuple[int, ...]) -> bool:
    """True when ``version``'s release is ``minimum`` or newer (unparsable: False)."""
    mine = release(version)
    return bool(mine) and mine >= minimum


def role(version: str, anchor: str, leading_edge: str) -> Role:
    """Where ``version`` sits in the window ``anchor .. leading_edge``."""
    if in_series(version, leading_edge):
        return "leading-edge"
    if in_series(version, anchor):
        return "anchor"
    head = release(anchor)
    if release(version)[: len(head)] < head:
        return "legacy"
    return "supported"


def sort_key(version: str) -> tuple[int, ...]:
    return release(version)


def parse_specifier(specifier: str) -> SpecifierSet:
    """A PEP 440 specifier set, or ValueError with an example of a valid one."""
    try:
        return SpecifierSet(specifier)
    except InvalidSpecifier as exc:
        raise ValueError(f"{specifier!r} is not a PEP 440 version specifier "
                         f"(e.g. '>=24.11', '<23.11,>=22.05'): {exc}") from None


def in_range(version: str, specifier: str) -> bool:
    """True when ``version`` satisfies the PEP 440 ``specifier`` (an unparsable version or
    range: False; the manifest check refuses an unparsable range before this is asked).

    Slurm's "24.11.5" and HTCondor's "23.9.6" are valid PEP 440 versions, so '>=24.11,<27'
    reads as a site's admin means it; pre-releases count as in range.
    """
    try:
        return Version(version) in SpecifierSet(specifier, prereleases=True)
    except (InvalidVersion, InvalidSpecifier):
        return False
