"""The reference pass: what a schema cannot express.

Dangling backends and capabilities, duplicate names, windows in the wrong order, versions past
the leading edge, missing compose folders, and stacks this release cannot run (a backend with
no driver, a transport its driver does not speak).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_stacks import registry
from pytest_stacks.manifest.positions import Positions
from pytest_stacks.suggest import did_you_mean
from pytest_stacks.versions import release, series_after


class _Locator:
    """Formats ``file:line: field path`` for a problem at a place in the raw data."""

    def __init__(self, data: Any, positions: Positions) -> None:
        self.data, self.positions = data, positions

    def __call__(self, *parts: str | int) -> str:
        return (f"{self.positions.where(tuple(parts))}: "
                f"{self.positions.describe(self.data, tuple(parts))}")


def reference_problems(data: dict[str, Any], positions: Positions,
                       path: Path) -> Iterable[str]:
    """``path`` is the manifest the stacks' relative folders are resolved against."""
    at = _Locator(data, positions)
    yield from _window_problems(data["backends"], at)
    seen: dict[str, int] = {}
    for index, stack in enumerate(data["stacks"]):
        name = stack["name"]
        if name in seen:
            yield (f"{at('stacks', index, 'name')}: duplicate stack name {name!r} (also "
                   f"stacks[{seen[name]}]). Stack names must be unique.")
        seen.setdefault(name, index)
        yield from _stack_problems(data, index, stack, at, path)


def _window_problems(backends: Mapping[str, Any], at: _Locator) -> Iterable[str]:
    for name, backend in backends.items():
        window = backend["window"]
        if release(window["anchor"]) > release(window["leading_edge"]):
            yield (f"{at('backends', name, 'window', 'anchor')}: anchor {window['anchor']!r} is "
                   f"newer than leading_edge {window['leading_edge']!r}. The anchor is the oldest "
                   f"supported version: swap them or fix the newer one.")


def _stack_problems(data: dict[str, Any], index: int, stack: dict[str, Any], at: _Locator,
                    path: Path) -> Iterable[str]:
    if "extends" in stack:
        yield (f"{at('stacks', index, 'extends')}: 'extends' starts from a catalogue stack, "
               f"so it needs a top-level 'catalogue:' block (catalogue: {{version: ...}}).")
        return
    capabilities = list(data["capabilities"])
    backends: dict[str, Any] = data["backends"]
    backend = stack["backend"]
    if backend not in backends:
        yield (f"{at('stacks', index, 'backend')}: backend {backend!r} is not declared under "
               f"'backends' (so it has no support window). Declare it with a window, or use "
               f"one of: {', '.join(backends)}.{did_you_mean(backend, backends)}")
    yield from _driver_problems(index, stack, at)
    for c_index, capability in enumerate(stack["capabilities"]):
        if capability not in capabilities:
            yield (f"{at('stacks', index, 'capabilities', c_index)}: unknown capability "
                   f"{capability!r}. Declare it under 'capabilities' or use one of: "
                   f"{', '.join(capabilities)}.{did_you_mean(capability, capabilities)}")
    if backend in backends and stack["provider"] != "fake":
        window = backends[backend]["window"]
        if series_after(stack["version"], window["leading_edge"]):
            yield (f"{at('stacks', index, 'version')}: {stack['version']!r} is newer than the "
                   f"{backend} window's leading_edge {window['leading_edge']!r}. Move the "
                   f"leading edge in backends.{backend}.window.")
    compose = stack.get("compose")
    if compose is not None:
        directory = path.parent / compose["directory"]
        if not (directory / "compose.yaml").is_file():
            yield (f"{at('stacks', index, 'compose', 'directory')}: {str(directory)!r} has no "
                   f"compose.yaml. Point 'directory' at the stack's folder under stacks/.")
    node_build = (stack.get("kind") or {}).get("node_build")
    if node_build is not None:
        directory = path.parent / node_build["directory"]
        if not (directory / "Dockerfile").is_file():
            yield (f"{at('stacks', index, 'kind', 'node_build', 'directory')}: "
                   f"{str(directory)!r} has no Dockerfile. Point 'directory' at the node "
                   f"image's folder under stacks/ (stacks/kind-node).")
    if stack["provider"] == "compose" and "docker" not in stack.get("requires", ["docker"]):
        yield (f"{at('stacks', index, 'requires')}: a compose stack requires 'docker'. "
               f"Add it to the list.")


def _driver_problems(index: int, stack: dict[str, Any], at: _Locator) -> Iterable[str]:
    """A stack this release cannot drive is refused now, not when it is brought up."""
    backend = stack["backend"]
    spec = registry.BACKENDS.get(backend)
    if spec is None:
        known = list(registry.BACKENDS)
        yield (f"{at('stacks', index, 'backend')}: pytest-stacks has no driver for backend "
               f"{backend!r}. Drivers exist for: {', '.join(known)}."
               f"{did_you_mean(backend, known)}")
        return
    transport = stack["transport"]
    if transport not in spec.transports:
        yield (f"{at('stacks', index, 'transport')}: the {backend} driver does not support "
               f"transport {transport!r}. Supported for {backend}: "
               f"{', '.join(spec.transports)}.")
