"""Load, validate and type the manifest: the single source of truth for stacks and windows.

Validation happens in two passes: the shipped JSON Schema (shape, types, unknown keys), then the
references and orderings a schema cannot express (:mod:`.references`). Every problem becomes one
line naming the file, the line, the field path, what was expected and, where a typo is likely,
the closest valid name. Loading never raises anything but :class:`ManifestError`.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from pytest_stacks.errors import ManifestError, StacksError
from pytest_stacks.manifest.build import build
from pytest_stacks.manifest.catalogue import catalogue_manifest
from pytest_stacks.manifest.extend import (
    Source,
    check_version,
    merge,
    standalone_origins,
    window_origins,
)
from pytest_stacks.manifest.model import (
    LANES,
    PROVIDERS,
    Backend,
    BaseImage,
    CanarySpec,
    ComposeSpec,
    ExistingSpec,
    ImageRef,
    KindSpec,
    Lane,
    Manifest,
    NodeBuild,
    Provider,
    Role,
    Stack,
    Timeouts,
    Window,
)
from pytest_stacks.manifest.positions import Positions, parse_yaml
from pytest_stacks.manifest.reading import read_manifest
from pytest_stacks.manifest.references import reference_problems
from pytest_stacks.manifest.schema_check import (
    known_valid,
    remember_valid,
    schema,
    schema_problems,
)

__all__ = ["LANES", "PROVIDERS", "Backend", "BaseImage", "CanarySpec", "ComposeSpec",
           "ExistingSpec", "ImageRef", "KindSpec", "Lane", "Manifest", "NodeBuild", "Provider",
           "Role", "Stack", "Timeouts", "Window", "load", "loads", "schema"]


def load(path: str | Path) -> Manifest:
    """Read and validate ``path``; raise :class:`ManifestError` with every problem found."""
    return loads(read_manifest(Path(path)), path)


def loads(text: str, path: str | Path = "manifest.yaml") -> Manifest:
    path = Path(path)
    data, positions = _parsed(text, path)
    if "catalogue" in data:
        return _extending(Source(data, positions), path)
    problems = list(reference_problems(data, positions, path))
    if problems:
        raise ManifestError(problems)
    return replace(build(data, path), origins=standalone_origins(data, positions),
                   window_origins=window_origins(data, positions))


def _parsed(text: str, path: Path) -> tuple[dict[str, Any], Positions]:
    """Parsed and checked against the schema (a text that passed once is remembered)."""
    data, lines, problems = parse_yaml(text, path)
    if problems:
        raise ManifestError(problems)
    positions = Positions(path, lines)
    if not known_valid(text):
        problems = list(schema_problems(_outline(data), positions))
        if problems:
            raise ManifestError(problems)
        remember_valid(text)
    return data, positions


def _outline(data: Any) -> Any:
    """What the schema sees of a project manifest before merging: a stack that ``extends`` a
    catalogue stack is only complete once merged (and checked then), so here it is its name
    and its base."""
    if not isinstance(data, dict) or "catalogue" not in data \
            or not isinstance(data.get("stacks"), list):
        return data
    stacks = [{k: v for k, v in s.items() if k in ("name", "extends")}
              if isinstance(s, dict) and "extends" in s else s for s in data["stacks"]]
    return {**data, "stacks": stacks}


def _extending(project: Source, path: Path) -> Manifest:
    """A project manifest laid over the catalogue (see :mod:`.extend`)."""
    check_version(project)
    try:
        catalogue = catalogue_manifest()
        text = read_manifest(catalogue)
    except (StacksError, OSError) as exc:
        raise ManifestError([f"{path}: catalogue: {exc}"]) from None
    merged = merge(project, Source(*_parsed(text, catalogue)))
    inherited = {key.partition(".")[0] for key, where in merged.window_origins.items()
                 if key.endswith(".window") and where.startswith(f"{catalogue}:")}
    problems = [*schema_problems(merged.data, merged.positions),
                *reference_problems(merged.data, merged.positions, path, inherited=inherited)]
    if problems:
        raise ManifestError(problems)
    return replace(build(merged.data, path), origins=merged.origins, catalogue=catalogue,
                   window_origins=merged.window_origins)
