"""The stack catalogue that ships with pytest-stacks, and which manifest a run reads.

A wheel carries the repository's ``manifest.yaml`` and ``stacks/`` under
``pytest_stacks/catalogue/`` (copied there by ``setup.py`` at build time); a source checkout
(editable install) reads them where they are. Real stacks build from those folders, so the
catalogue must be real files, not resources inside a zip.
"""

from __future__ import annotations

import re
from pathlib import Path

from pytest_stacks import __version__
from pytest_stacks.errors import StacksError

MANIFEST_NAME = "manifest.yaml"
_PACKAGE = Path(__file__).resolve().parents[1]
_OURS = re.compile(r"^(stacks|catalogue):", re.MULTILINE)


def catalogue_version() -> str:
    """The catalogue's version: pytest-stacks' major.minor (the catalogue ships with it)."""
    return ".".join(__version__.split(".")[:2])


def catalogue_manifest() -> Path:
    """The packaged catalogue's manifest (wheel), or the source tree's (editable install)."""
    packaged = _PACKAGE / "catalogue" / MANIFEST_NAME
    if packaged.is_file():
        return packaged
    source = _PACKAGE.parent / MANIFEST_NAME
    if source.is_file() and (_PACKAGE.parent / "stacks").is_dir():
        return source
    raise StacksError(
        f"this installation of pytest-stacks {__version__} carries no stack catalogue "
        f"(looked for {packaged}); reinstall it from a wheel built with setup.py's build step")


def is_stacks_manifest(path: Path) -> bool:
    """Whether ``path`` looks like a pytest-stacks manifest rather than some other project's
    ``manifest.yaml`` (a Kubernetes object, say): it has a top-level ``stacks:`` or
    ``catalogue:`` key."""
    try:
        return bool(_OURS.search(path.read_text(encoding="utf-8", errors="replace")))
    except OSError:
        return False


def default_manifest(root: Path) -> Path:
    """The manifest a run reads when none is configured: the project's own ``manifest.yaml``
    if it is a pytest-stacks manifest, else the catalogue."""
    own = root / MANIFEST_NAME
    if own.is_file() and is_stacks_manifest(own):
        return own
    return catalogue_manifest()
