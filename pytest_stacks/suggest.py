""""Did you mean ...?": one closest-match rule for every message that names a typo.

Stack names, capabilities, backends, manifest keys and enum values all go through here, so a
user sees the same kind of hint wherever they mistype.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable

DEFAULT_CUTOFF = 0.6


def closest(word: str, choices: Iterable[str], cutoff: float = DEFAULT_CUTOFF) -> str | None:
    """The closest of ``choices`` to ``word``, or None when nothing is near enough."""
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=cutoff)
    return match[0] if match else None


def did_you_mean(word: str, choices: Iterable[str], cutoff: float = DEFAULT_CUTOFF) -> str:
    """`` Did you mean 'x'?`` (with its leading space), or "" when nothing is near."""
    close = closest(word, choices, cutoff)
    return f" Did you mean {close!r}?" if close else ""
