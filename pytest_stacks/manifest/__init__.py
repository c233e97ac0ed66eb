"""Load, validate and type the manifest: the single source of truth for stacks and windows.

Validation happens in two passes: the shipped JSON Schema (shape, types, unknown keys), then the
references and orderings a schema cannot express (:mod:`.references`). Every problem becomes one
line naming the file, the line, the field path, what was expected and, where a typo is likely,
the closest valid name. Loading never raises anything but :class:`ManifestError`.
"""

from __future__ import annotations

from pathlib import Path

from pytest_stacks.errors import ManifestError
from pytest_stacks.manifest.build import build
from pytest_stacks.manifest.model import (
    LANES,
    PROVIDERS,
    Backend,
    BaseImage,
    CanarySpec,
    ComposeSpec,
    ImageRef,
    KindSpec,
    Lane,
    Manifest,
    Provider,
    Role,
    Stack,
    Timeouts,
    Window,
)
from pytest_stacks.manifest.positions import parse_yaml
from pytest_stacks.manifest.references import reference_problems
from pytest_stacks.manifest.schema_check import (
    known_valid,
    remember_valid,
    schema,
    schema_problems,
)

__all__ = ["LANES", "PROVIDERS", "Backend", "BaseImage", "CanarySpec", "ComposeSpec",
           "ImageRef", "KindSpec", "Lane", "Manifest", "Provider", "Role", "Stack", "Timeouts",
           "Window", "load", "loads", "schema"]


def load(path: str | Path) -> Manifest:
    """Read and validate ``path``; raise :class:`ManifestError` with every problem found."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ManifestError(
            [f"{path}: no such manifest. Create it, or point --stack-manifest / the "
             f"'stacks_manifest' ini option at an existing file."]
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ManifestError([f"{path}: cannot be read: {exc}"]) from None
    return loads(text, path)


def loads(text: str, path: str | Path = "manifest.yaml") -> Manifest:
    path = Path(path)
    data, lines, problems = parse_yaml(text, path)
    if problems:
        raise ManifestError(problems)
    if not known_valid(text):
        problems = list(schema_problems(data, lines, path))
        if problems:
            raise ManifestError(problems)
        remember_valid(text)
    problems = list(reference_problems(data, lines, path))
    if problems:
        raise ManifestError(problems)
    return build(data, path)

