"""The reference pass: what a schema cannot express.

Dangling backends and capabilities, duplicate names, windows in the wrong order, versions past
the leading edge, missing compose folders, and stacks this release cannot run (a backend with
no driver, a transport its driver does not speak).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import Any

from pytest_stacks import registry
from pytest_stacks.manifest import names
from pytest_stacks.manifest.build import component_pins
from pytest_stacks.manifest.positions import Positions
from pytest_stacks.suggest import did_you_mean
from pytest_stacks.versions import parse_specifier, release, series_after

#: How an existing deployment is reached, by the stack's transport.
SITE_ROUTES = {name: spec.site_route for name, spec in registry.TRANSPORTS.items()
               if spec.site_route}


class _Locator:
    """Formats ``file:line: field path`` for a problem at a place in the raw data."""

    def __init__(self, data: Any, positions: Positions) -> None:
        self.data, self.positions = data, positions

    def __call__(self, *parts: str | int) -> str:
        return (f"{self.positions.where(tuple(parts))}: "
                f"{self.positions.describe(self.data, tuple(parts))}")


def reference_problems(data: dict[str, Any], positions: Positions, path: Path, *,
                       inherited: Collection[str] = ()) -> Iterable[str]:
    """``path`` is the manifest the stacks' relative folders are resolved against (a
    project's own file); ``inherited``: the backends whose window is the catalogue's, which
    the project widens by writing it in that file."""
    at = _Locator(data, positions)
    yield from _window_problems(data["backends"], at)
    seen: dict[str, int] = {}
    for index, stack in enumerate(data["stacks"]):
        name = stack["name"]
        if name in seen:
            yield (f"{at('stacks', index, 'name')}: duplicate stack name {name!r} (also "
                   f"stacks[{seen[name]}]). Stack names must be unique.")
        seen.setdefault(name, index)
        yield from _name_problems(index, stack, at)
        yield from _stack_problems(data, index, stack, at, path, inherited)


def _name_problems(index: int, stack: dict[str, Any], at: _Locator) -> Iterable[str]:
    """Names that become engine or Kubernetes object names, bounded to what every provider
    carries (:mod:`.names`: the limits and where they come from)."""
    problem = names.stack_name_problem(stack["name"])
    if problem:
        yield f"{at('stacks', index, 'name')}: {problem}."
    namespace = (stack.get("existing") or {}).get("namespace")
    if isinstance(namespace, str):  # a literal (an {env: NAME} is read when the run attaches)
        problem = names.namespace_problem(namespace)
        if problem:
            yield f"{at('stacks', index, 'existing', 'namespace')}: {problem}."


def _window_problems(backends: Mapping[str, Any], at: _Locator) -> Iterable[str]:
    for name, backend in backends.items():
        windows: list[tuple[tuple[str, ...], Any]] = [(("window",), backend["window"])]
        windows += [(("components", c), w) for c, w in backend.get("components", {}).items()]
        for where, window in windows:
            if release(window["anchor"]) > release(window["leading_edge"]):
                yield (f"{at('backends', name, *where, 'anchor')}: anchor "
                       f"{window['anchor']!r} is newer than leading_edge "
                       f"{window['leading_edge']!r}. The anchor is the oldest supported "
                       f"version: swap them or fix the newer one.")


def _pin_place(stack: dict[str, Any]) -> tuple[str, ...]:
    """Where a stack writes its Kubernetes pin (the component the manifest derives)."""
    kind = stack.get("kind") or {}
    if "node_build" in kind:
        return ("kind", "node_build", "build_args", "K8S_VERSION")
    if "node_image" in kind:
        return ("kind", "node_image", "tag")
    return ("compose", "build_args", "K8S_VERSION")


def _component_problems(index: int, stack: dict[str, Any], backend: dict[str, Any],
                        at: _Locator) -> Iterable[str]:
    """A component a stack names needs its window under the backend; a written version must
    agree with the pin, and no pin may be past the leading edge."""
    windows = backend.get("components", {})
    pinned = {c: v for c, v in component_pins(stack).items() if c in windows}
    written = stack.get("components", {})
    for component, version in {**written, **pinned}.items():
        where = ("components", component) if component in written else _pin_place(stack)
        if component not in windows:
            yield (f"{at('stacks', index, *where)}: the stack names {component} {version}, "
                   f"but backends.{stack['backend']}.components has no {component!r} window. "
                   f"Declare it there ({component}: {{anchor: ..., leading_edge: ...}}), or "
                   f"remove it.")
            continue
        if component in written and component in pinned and written[component] != version:
            yield (f"{at('stacks', index, 'components', component)}: {written[component]!r} "
                   f"contradicts the stack's own pin {version!r}. Remove components."
                   f"{component} (the pin says it), or make them agree.")
        edge = windows[component]["leading_edge"]
        if stack["provider"] != "fake" and series_after(version, edge):
            yield (f"{at('stacks', index, *where)}: {component} {version!r} is newer than "
                   f"the window's leading_edge {edge!r}. Move backends.{stack['backend']}"
                   f".components.{component}.leading_edge.")


def _stack_problems(data: dict[str, Any], index: int, stack: dict[str, Any], at: _Locator,
                    path: Path, inherited: Collection[str] = ()) -> Iterable[str]:
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
            series = ".".join(str(stack["version"]).split(".")[:2])
            fix = (f"The window is the catalogue's: add backends.{backend}.window to {path} "
                   f"with leading_edge: \"{series}\" (anchor: \"{window['anchor']}\"): a "
                   f"project manifest may widen a catalogue window" if backend in inherited
                   else f"Move the leading edge in backends.{backend}.window")
            yield (f"{at('stacks', index, 'version')}: {stack['version']!r} is newer than the "
                   f"{backend} window's leading_edge {window['leading_edge']!r}. {fix}.")
    if backend in backends:
        yield from _component_problems(index, stack, backends[backend], at)
    compose = stack.get("compose")
    if compose is not None:
        directory = path.parent / compose["directory"]
        if not (directory / "compose.yaml").is_file():
            yield (f"{at('stacks', index, 'compose', 'directory')}: {str(directory)!r} has no "
                   f"compose.yaml. Point 'directory' at the stack's folder under stacks/.")
    node_build = (stack.get("kind") or {}).get("node_build")
    if (stack.get("kind") or {}).get("nodes", 1) > 1 and node_build is None:
        yield (f"{at('stacks', index, 'kind', 'nodes')}: more than one node needs a node "
               f"image built here (kind.node_build), whose CNI routes pods across nodes. "
               f"Use node_build, or nodes: 1.")
    if node_build is not None:
        directory = path.parent / node_build["directory"]
        if not (directory / "Dockerfile").is_file():
            yield (f"{at('stacks', index, 'kind', 'node_build', 'directory')}: "
                   f"{str(directory)!r} has no Dockerfile. Point 'directory' at the node "
                   f"image's folder under stacks/ (stacks/kind-node).")
    yield from _existing_problems(index, stack, at)
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


def _existing_problems(index: int, stack: dict[str, Any], at: _Locator) -> Iterable[str]:
    """An existing deployment runs in the ``site`` lane only, is reached over SSH (Slurm,
    HTCondor) or by kubeconfig (Kubernetes), and names files that hold secrets, never the
    secrets themselves."""
    existing = stack.get("existing")
    lanes = stack.get("lanes", [])
    if stack["provider"] != "existing":
        if existing is not None:
            yield (f"{at('stacks', index, 'existing')}: only a stack with provider 'existing' "
                   f"takes an 'existing' block. Remove it, or set provider: existing.")
        if "site" in lanes:
            yield (f"{at('stacks', index, 'lanes')}: lane 'site' is for deployments that "
                   f"already exist (provider: existing). Use 'pr' or 'full' here.")
        return
    existing = existing or {}
    if list(lanes) != ["site"]:
        yield (f"{at('stacks', index, 'lanes')}: an existing deployment runs in the 'site' "
               f"lane only (its own CI lane, with the site's secrets), never in pr or full. "
               f"Set lanes: [site].")
    needed = SITE_ROUTES.get(stack["transport"])
    if needed is None:
        yield (f"{at('stacks', index, 'transport')}: an existing deployment is reached over "
               f"'ssh' (Slurm, HTCondor) or by kubeconfig ('kubernetes'), not "
               f"{stack['transport']!r}.")
        return
    for key in needed:
        if key not in existing:
            yield (f"{at('stacks', index, 'existing')}: transport {stack['transport']!r} "
                   f"needs existing.{key}" + (" (an absolute folder on the site's shared "
                   "filesystem for the runs' working folders)" if key == "job_root" else "")
                   + ".")
    for key in ("versions", "kubernetes_versions"):
        if key in existing:
            try:
                parse_specifier(existing[key])
            except ValueError as exc:
                yield f"{at('stacks', index, 'existing', key)}: {exc}"
    secrets = [("kubeconfig",), ("ssh", "key"), ("ssh", "known_hosts")]
    for path in secrets:
        value: Any = existing
        for part in path:
            value = value.get(part) if isinstance(value, dict) else None
        if isinstance(value, str) and looks_like_secret(value):
            yield (f"{at('stacks', index, 'existing', *path)}: this looks like the secret "
                   f"itself. Secrets never go in the manifest: give the path of the file "
                   f"that holds it, or {{env: NAME}} naming a variable that holds the path.")


def looks_like_secret(text: str) -> bool:
    """Whether a value that should be the path of a secrets file is the secret itself: a key
    (``-----BEGIN``), a kubeconfig in YAML or in JSON (one line, so no newline gives it away),
    anything of several lines or too long for a path. Such a value is refused without being
    quoted: quoting it would print the credentials."""
    stripped = text.strip()
    return ("\n" in text or "-----BEGIN" in text or "apiVersion" in text
            or stripped.startswith(("{", "[")) or len(text) > 4096)
