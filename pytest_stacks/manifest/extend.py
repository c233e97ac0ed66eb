"""A project manifest that extends the catalogue: merge, with every field's origin kept.

The project says which catalogue version it was written for (a mismatch is refused, never a
surprise), which catalogue stacks it uses, its own capabilities and stacks, and stacks that
start from a catalogue stack (``extends``) with some fields overridden under a new name.
Problems name both files where both are involved; ``origins`` records, per stack and field,
the ``file:line`` it came from (``pytest-stacks show`` prints it).
"""

from __future__ import annotations

import copy
import fnmatch
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_stacks.errors import ManifestError
from pytest_stacks.manifest.catalogue import catalogue_manifest, catalogue_version
from pytest_stacks.manifest.positions import MergedPositions, Positions
from pytest_stacks.suggest import did_you_mean
from pytest_stacks.versions import in_series, series_after

Raw = dict[str, Any]


@dataclass
class Merged:
    """``window_origins``: per window (``<backend>.window``, ``<backend>.components.<c>``)
    the ``file:line`` it was written at: the project's file where it widens the catalogue's,
    else the catalogue's."""

    data: Raw
    positions: MergedPositions
    origins: dict[str, dict[str, str]] = field(default_factory=dict)
    window_origins: dict[str, str] = field(default_factory=dict)


@dataclass
class Source:
    data: Raw
    positions: Positions


def merge(project: Source, catalogue: Source) -> Merged:
    """The project's manifest laid over the catalogue's; raises ManifestError."""
    problems: list[str] = []
    data: Raw = {"version": 1,
                 "capabilities": _capabilities(project, catalogue, problems)}
    stacks: list[Raw] = []
    sources: list[tuple[Positions, int]] = []
    origins: dict[str, dict[str, str]] = {}
    for index, raw in _used(project, catalogue, problems):
        stacks.append(raw)
        sources.append((catalogue.positions, index))
        origins[raw["name"]] = _origins(raw, catalogue, index)
    for index, raw in enumerate(project.data.get("stacks") or []):
        merged = _own_stack(raw, index, project, catalogue, problems)
        if merged is None:
            continue
        if merged["name"] in origins:
            problems.append(
                f"{project.positions.where(('stacks', index, 'name'))}: stack "
                f"{merged['name']!r} is also a catalogue stack in use "
                f"({catalogue.positions.path}). Rename it, or leave it out of catalogue.use.")
            continue
        stacks.append(merged)
        sources.append((project.positions, index))
        origins[merged["name"]] = _own_origins(raw, index, project, catalogue)
    data["backends"], window_origins = _backends(project, catalogue, stacks, problems)
    if problems:
        raise ManifestError(problems)
    data["stacks"] = stacks
    return Merged(data, MergedPositions(project.positions, sources), origins, window_origins)


def check_version(project: Source) -> None:
    wanted = str(project.data["catalogue"]["version"])
    have = catalogue_version()
    if wanted != have:
        raise ManifestError([
            f"{project.positions.where(('catalogue', 'version'))}: catalogue.version: "
            f"{project.positions.path.name} was written for the pytest-stacks catalogue "
            f"{wanted}, but the installed pytest-stacks ships catalogue {have} "
            f"({catalogue_manifest()}). Review what changed between them (`pytest-stacks "
            f"list`), then set catalogue.version: \"{have}\", or install pytest-stacks "
            f"{wanted}.*."])


def _capabilities(project: Source, catalogue: Source, problems: list[str]) -> Raw:
    merged = dict(catalogue.data["capabilities"])
    for name, text in (project.data.get("capabilities") or {}).items():
        if name in merged and merged[name] != text:
            problems.append(
                f"{project.positions.where(('capabilities', name))}: capability {name!r} is "
                f"already declared by the catalogue "
                f"({catalogue.positions.where(('capabilities', name))}) with another meaning. "
                f"Use another name for yours.")
        merged[name] = text
    return merged


def _backends(project: Source, catalogue: Source, stacks: list[Raw],
              problems: list[str]) -> tuple[Raw, dict[str, str]]:
    """The catalogue's backends, with the windows the project widens (a newer leading edge,
    an older anchor: for stacks of its own), and the backends it adds. A window narrowed, or
    anything else of a catalogue backend changed, is refused. Returns the backends and where
    each window was written (:attr:`Merged.window_origins`)."""
    merged: Raw = copy.deepcopy(catalogue.data["backends"])
    origins = window_origins(catalogue.data, catalogue.positions)
    for name, backend in (project.data.get("backends") or {}).items():
        if name not in merged:
            merged[name] = copy.deepcopy(backend)
            origins.update(window_origins({"backends": {name: backend}}, project.positions))
            continue
        theirs = catalogue.data["backends"][name]
        for key, value in backend.items():
            windows: list[tuple[str, ...]] = (
                [("window",)] if key == "window" else
                [("components", c) for c in value] if key == "components" else [])
            for at in windows:
                mine = value if key == "window" else value[at[1]]
                base = theirs.get("components", {}).get(at[1]) if key == "components" \
                    else theirs["window"]
                if base is not None:
                    problems += _narrowed(project, catalogue, name, at, mine, base, stacks)
                target = merged[name] if key == "window" else merged[name].setdefault(key, {})
                target[at[-1]] = copy.deepcopy(mine)
                origins[".".join((name, *at))] = project.positions.where(("backends", name, *at))
            if not windows and theirs.get(key) != value:
                problems.append(
                    f"{project.positions.where(('backends', name, key))}: backends.{name}."
                    f"{key}: the catalogue describes backend {name!r} "
                    f"({catalogue.positions.where(('backends', name))}); a project manifest may "
                    f"widen its window (backends.{name}.window, backends.{name}.components) but "
                    f"not change its {key}. Remove backends.{name}.{key} here.")
    return merged, origins


def _narrowed(project: Source, catalogue: Source, backend: str, at: tuple[str, ...],
              mine: Raw, base: Raw, stacks: list[Raw]) -> list[str]:
    """A project may widen a catalogue window, never narrow it: the catalogue's stacks are
    proven over all of it, and a stack in use must stay inside the window it is judged by."""
    field = ".".join(("backends", backend, *at))
    problems = []
    if series_after(base["leading_edge"], mine["leading_edge"]):
        problems.append(
            f"{project.positions.where(('backends', backend, *at, 'leading_edge'))}: "
            f"{field}.leading_edge: {mine['leading_edge']!r} is older than the catalogue's "
            f"{base['leading_edge']!r} ({catalogue.positions.where(('backends', backend, *at))})"
            f": a project manifest may widen a catalogue window, never narrow it. Set it to "
            f"{base['leading_edge']!r} or newer, or remove {field} here.")
    if series_after(mine["anchor"], base["anchor"]):
        left_out = [f"{s['name']} ({s['version']})" for s in stacks
                    if at == ("window",) and s.get("backend") == backend
                    and s.get("provider") != "fake" and not series_after(s["version"],
                                                                         mine["anchor"])
                    and not in_series(s["version"], mine["anchor"])]
        leaves = f"; it would leave out {', '.join(left_out)}" if left_out else ""
        problems.append(
            f"{project.positions.where(('backends', backend, *at, 'anchor'))}: {field}.anchor: "
            f"{mine['anchor']!r} is newer than the catalogue's {base['anchor']!r} "
            f"({catalogue.positions.where(('backends', backend, *at))}){leaves}: a project "
            f"manifest may widen a catalogue window, never narrow it. Set it to "
            f"{base['anchor']!r} or older, or remove {field} here.")
    return problems


def window_origins(data: Raw, positions: Positions) -> dict[str, str]:
    """Where each window of ``data``'s backends is written (``<backend>.window``,
    ``<backend>.components.<component>``: ``file:line``)."""
    found = {}
    for name, backend in (data.get("backends") or {}).items():
        found[f"{name}.window"] = positions.where(("backends", name, "window"))
        for component in backend.get("components") or {}:
            found[f"{name}.components.{component}"] = positions.where(
                ("backends", name, "components", component))
    return found


def _used(project: Source, catalogue: Source,
          problems: list[str]) -> Iterator[tuple[int, Raw]]:
    """The catalogue stacks the project uses (``catalogue.use`` globs; default: all)."""
    names = [s["name"] for s in catalogue.data["stacks"]]
    patterns = project.data["catalogue"].get("use")
    chosen = set(names) if patterns is None else set()
    for p_index, pattern in enumerate(patterns or []):
        matched = fnmatch.filter(names, pattern)
        if not matched:
            problems.append(
                f"{project.positions.where(('catalogue', 'use', p_index))}: catalogue.use"
                f"[{p_index}]: {pattern!r} matches no catalogue stack "
                f"({catalogue.positions.path}).{did_you_mean(pattern, names, cutoff=0.5)} "
                f"Known: {', '.join(names)}")
        chosen.update(matched)
    for index, raw in enumerate(catalogue.data["stacks"]):
        if raw["name"] in chosen:
            yield index, _anchored(raw, catalogue.positions.path)


def _anchored(raw: Raw, manifest: Path) -> Raw:
    """A catalogue stack whose folder stays where the catalogue is, whoever reads it."""
    stack = copy.deepcopy(raw)
    compose = stack.get("compose")
    if compose is not None:
        compose["directory"] = str((manifest.parent / compose["directory"]).resolve())
    node_build = (stack.get("kind") or {}).get("node_build")
    if node_build is not None:
        node_build["directory"] = str((manifest.parent / node_build["directory"]).resolve())
    return stack


def _own_stack(raw: Raw, index: int, project: Source, catalogue: Source,
               problems: list[str]) -> Raw | None:
    base_name = raw.get("extends")
    if base_name is None:
        return copy.deepcopy(raw)
    by_name = {s["name"]: (i, s) for i, s in enumerate(catalogue.data["stacks"])}
    if base_name not in by_name:
        problems.append(
            f"{project.positions.where(('stacks', index, 'extends'))}: stacks[{index}] "
            f"({raw['name']}).extends: {base_name!r} is not a catalogue stack "
            f"({catalogue.positions.path}).{did_you_mean(base_name, by_name)} "
            f"Known: {', '.join(by_name)}")
        return None
    _, base = by_name[base_name]
    merged = _deep_merge(_anchored(base, catalogue.positions.path),
                         {k: v for k, v in raw.items() if k != "extends"})
    return merged


def _deep_merge(base: Raw, override: Mapping[str, Any]) -> Raw:
    for key, value in override.items():
        if isinstance(value, Mapping) and isinstance(base.get(key), dict):
            base[key] = _deep_merge(base[key], value)
        else:
            base[key] = copy.deepcopy(value)
    return base


def _leaves(raw: Mapping[str, Any], at: tuple[str, ...] = ()) -> Iterator[tuple[str, ...]]:
    for key, value in raw.items():
        if isinstance(value, Mapping) and value:
            yield from _leaves(value, (*at, key))
        else:
            yield (*at, key)


def _origins(raw: Raw, source: Source, index: int) -> dict[str, str]:
    return {".".join(leaf): source.positions.where(("stacks", index, *leaf))
            for leaf in _leaves(raw)}


def _own_origins(raw: Raw, index: int, project: Source, catalogue: Source) -> dict[str, str]:
    own = _origins(raw, project, index)
    base_name = raw.get("extends")
    if base_name is None:
        return own
    base_index = next(i for i, s in enumerate(catalogue.data["stacks"])
                      if s["name"] == base_name)
    inherited = _origins(catalogue.data["stacks"][base_index], catalogue, base_index)
    own.pop("extends", None)
    return {**{k: f"{v} (catalogue, via extends: {base_name})" for k, v in inherited.items()
               if not _overridden(k, own)}, **own}


def _overridden(leaf: str, own: Mapping[str, str]) -> bool:
    return leaf in own or any(leaf.startswith(f"{k}.") for k in own)


def standalone_origins(data: Raw, positions: Positions) -> dict[str, dict[str, str]]:
    """Origins for a manifest that extends nothing: every field is its own file's."""
    source = Source(data, positions)
    return {raw["name"]: _origins(raw, source, index)
            for index, raw in enumerate(data["stacks"])}
