"""Load, validate and type the manifest: the single source of truth for stacks and windows.

Validation happens in two passes: the shipped JSON Schema (shape, types, unknown keys), then the
references and orderings a schema cannot express (dangling backends and capabilities, duplicate
names, windows). Every problem becomes one line naming the file, the line, the field path, what
was expected and, where a typo is likely, the closest valid name. Loading never raises anything
but :class:`ManifestError`.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any, Literal

import yaml
from packaging.version import Version

from pytest_stacks.errors import ManifestError

LANES = ("pr", "full", "canary")
Lane = Literal["pr", "full", "canary"]
Role = Literal["legacy", "anchor", "supported", "leading-edge"]


@dataclass(frozen=True)
class Window:
    anchor: str
    leading_edge: str


@dataclass(frozen=True)
class Backend:
    name: str
    window: Window
    description: str = ""


@dataclass(frozen=True)
class ImageRef:
    name: str
    tag: str
    digest: str | None = None

    @property
    def reference(self) -> str:
        """``name:tag@digest`` when pinned by digest, else ``name:tag``."""
        ref = f"{self.name}:{self.tag}"
        return f"{ref}@{self.digest}" if self.digest else ref


@dataclass(frozen=True)
class BaseImage:
    name: str
    tag: str
    seed: str
    digest: str | None = None

    @property
    def registry_reference(self) -> str:
        ref = f"{self.name}:{self.tag}"
        return f"{ref}@{self.digest}" if self.digest else ref

    @property
    def seeded_reference(self) -> str:
        """The locally seeded stand-in used where no registry can be reached."""
        return f"pytest-stacks/debian-base:{self.seed}"


@dataclass(frozen=True)
class ComposeSpec:
    directory: Path
    service: str
    build_args: Mapping[str, str] = field(default_factory=dict)
    ports: tuple[str, ...] = ()
    privileged_reason: str | None = None


@dataclass(frozen=True)
class KindSpec:
    kind_version: str
    node_image: ImageRef
    operator_version: str
    worker_image: ImageRef | None = None


@dataclass(frozen=True)
class CanarySpec:
    build_args: Mapping[str, str] = field(default_factory=dict)
    image_tag: str | None = None


@dataclass(frozen=True)
class Timeouts:
    build: float = 1800.0
    up: float = 300.0
    ready: float = 120.0
    job: float = 120.0


@dataclass(frozen=True)
class Stack:
    name: str
    backend: str
    version: str
    provider: str
    transport: str
    capabilities: frozenset[str]
    configuration: str
    lanes: tuple[str, ...]
    role: Role
    description: str = ""
    requires: tuple[str, ...] = ()
    base_image: BaseImage | None = None
    image: ImageRef | None = None
    compose: ComposeSpec | None = None
    kind: KindSpec | None = None
    canary: CanarySpec | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    timeouts: Timeouts = field(default_factory=Timeouts)

    @property
    def parsed_version(self) -> Version:
        return Version(self.version)

    def in_lane(self, lane: str) -> bool:
        if lane == "canary":
            return self.canary is not None
        return lane in self.lanes


@dataclass(frozen=True)
class Manifest:
    path: Path
    capabilities: Mapping[str, str]
    backends: Mapping[str, Backend]
    stacks: tuple[Stack, ...]

    @property
    def root(self) -> Path:
        return self.path.parent

    def names(self) -> list[str]:
        return [s.name for s in self.stacks]

    def get(self, name: str) -> Stack:
        for stack in self.stacks:
            if stack.name == name:
                return stack
        raise KeyError(name)


# ---------------------------------------------------------------- loading


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema shipped in the package (also published for editors)."""
    text = resources.files("pytest_stacks").joinpath("schema/manifest.schema.json").read_text()
    return dict(json.loads(text))


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
    data, lines, problems = _parse_yaml(text, path)
    if problems:
        raise ManifestError(problems)
    if not _known_valid(text):
        problems = list(_schema_problems(data, lines, path))
        if problems:
            raise ManifestError(problems)
        _remember_valid(text)
    problems = list(_reference_problems(data, lines, path))
    if problems:
        raise ManifestError(problems)
    return _build(data, path)


# ---------------------------------------------------------------- schema-validation cache
#
# Validating against the schema costs more than everything else the plugin does at start-up
# (importing jsonschema dominates), and the manifest rarely changes between runs: a text that
# passed once, against this very schema, is remembered by digest. The reference pass always
# runs, since it also looks at the filesystem.


def _cache_key(text: str) -> str:
    import hashlib

    digest = hashlib.sha256(text.encode())
    digest.update(json.dumps(schema(), sort_keys=True).encode())
    return digest.hexdigest()


def _cache_dir() -> Path:
    import os

    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "pytest-stacks" / "valid-manifests"


def _known_valid(text: str) -> bool:
    try:
        return (_cache_dir() / _cache_key(text)).exists()
    except OSError:
        return False


def _remember_valid(text: str) -> None:
    try:
        folder = _cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / _cache_key(text)).touch()
    except OSError:
        pass  # a read-only home only costs the next run a validation


# ---------------------------------------------------------------- YAML with positions

PathKey = tuple[str | int, ...]


def _parse_yaml(text: str, path: Path) -> tuple[Any, dict[PathKey, int], list[str]]:
    """Parse YAML, recording the line of every node and rejecting duplicate keys.

    PyYAML silently keeps the last of two equal keys; for a manifest that would hide a
    duplicated stack or a pasted block, so the node tree is walked once by hand.
    """
    try:
        loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available
        node = yaml.compose(text, Loader=loader)
        data = yaml.load(text, Loader=loader)  # a safe loader (C or pure Python)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return None, {}, [f"{where}: not valid YAML: {problem}. Fix the syntax at that line."]
    if node is None:
        return None, {}, [f"{path}:1: the manifest is empty. Start from the example in README.md."]
    lines: dict[PathKey, int] = {}
    problems: list[str] = []
    _walk(node, (), lines, problems, path)
    return data, lines, problems


def _walk(node: yaml.Node, at: PathKey, lines: dict[PathKey, int], problems: list[str],
          path: Path) -> None:
    lines[at] = node.start_mark.line + 1
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if key in seen:
                problems.append(
                    f"{path}:{line}: {_fmt_path((*at, key))}: duplicate key (first defined on "
                    f"line {seen[key]}). Remove or rename one of them."
                )
            seen[key] = line
            _walk(value_node, (*at, key), lines, problems, path)
            lines[(*at, key)] = line
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*at, index), lines, problems, path)


def _fmt_path(at: Iterable[str | int]) -> str:
    out = ""
    for part in at:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]" if out else repr(part)
    return out or "(top level)"


def _line_of(lines: Mapping[PathKey, int], at: PathKey) -> int:
    while at not in lines and at:
        at = at[:-1]
    return lines.get(at, 1)


def _closest(word: str, choices: Iterable[str]) -> str | None:
    match = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.6)
    return match[0] if match else None


def _did_you_mean(word: str, choices: Iterable[str]) -> str:
    close = _closest(word, choices)
    return f" Did you mean {close!r}?" if close else ""


def _describe_path(data: Any, at: PathKey) -> str:
    """Field path with the stack's name beside its index, so a message reads by name."""
    text = _fmt_path(at)
    if len(at) >= 2 and at[0] == "stacks" and isinstance(at[1], int):
        try:
            name = data["stacks"][at[1]].get("name")
        except (AttributeError, IndexError, KeyError, TypeError):
            name = None
        if isinstance(name, str):
            text = text.replace(f"stacks[{at[1]}]", f"stacks[{at[1]}] ({name})", 1)
    return text


# ---------------------------------------------------------------- schema pass


def _schema_problems(data: Any, lines: Mapping[PathKey, int], path: Path) -> Iterable[str]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(data),
                    key=lambda e: _line_of(lines, tuple(e.absolute_path)))
    seen: set[str] = set()
    for error in errors:
        for problem in _explain(error, data, lines, path):
            if problem not in seen:  # e.g. one "missing keys" report per missing key
                seen.add(problem)
                yield problem


def _explain(error: Any, data: Any, lines: Mapping[PathKey, int],
             path: Path) -> Iterable[str]:
    at: PathKey = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        schema_node: Any = error.schema
        allowed = list(schema_node.get("properties", {}))
        extra = [k for k in error.instance if k not in allowed]
        for key in extra:
            where = f"{path}:{_line_of(lines, (*at, key))}"
            yield (f"{where}: {_describe_path(data, (*at, key))}: unknown key. Expected one of: "
                   f"{', '.join(allowed)}.{_did_you_mean(key, allowed)}")
        return
    if error.validator in {"anyOf", "oneOf", "allOf"} and error.context:
        import jsonschema

        best = jsonschema.exceptions.best_match(error.context)
        yield from _explain(best, data, lines, path)
        return
    where = f"{path}:{_line_of(lines, at)}"
    field_name = _describe_path(data, at)
    expected = _expected(error)
    yield f"{where}: {field_name}: {expected}"


def _expected(error: Any) -> str:
    kind = error.validator
    value: Any = error.validator_value
    got: Any = error.instance
    if kind == "required":
        missing = [k for k in value if isinstance(got, dict) and k not in got]
        return f"missing required key(s): {', '.join(missing)}. Add them."
    if kind == "enum":
        hint = _did_you_mean(str(got), [str(v) for v in value])
        return f"{got!r} is not allowed. Expected one of: {', '.join(map(str, value))}.{hint}"
    if kind == "const":
        return f"{got!r} is not supported. Expected {value!r}."
    if kind == "type":
        return f"expected a {_type_name(value)}, got {_type_name(type(got).__name__)} {got!r}."
    if kind == "pattern":
        what = {
            r"^[0-9]+(\.[0-9]+)*$": "a dotted version such as '24.11.5' (quote it in YAML)",
            r"^sha256:[0-9a-f]{64}$": "a digest such as 'sha256:<64 hex digits>'",
            r"^[a-z0-9][a-z0-9.-]*$": "a lowercase name of letters, digits, '.' and '-'",
            r"^[A-Z][A-Z0-9_]*$": "an UPPER_CASE environment variable name",
            r"^[a-z][a-z0-9_]*(\.[a-z][a-z0-9_]*)*$":
                "a capability name such as 'outputs.repeatable' (lowercase, dot-separated)",
        }.get(str(value), f"a value matching {value}")
        return f"{got!r} is not valid: expected {what}."
    if kind == "propertyNames":
        return f"invalid name: {error.message}."
    if kind == "uniqueItems":
        return "contains duplicates. List each value once."
    if kind in {"minItems", "minProperties"}:
        return "must not be empty."
    if kind == "minLength":
        return "must not be empty."
    if kind in {"exclusiveMinimum", "minimum"}:
        return f"{got!r} is too small: must be greater than {value}."
    return f"{error.message}."


def _type_name(value: Any) -> str:
    names = {"object": "mapping", "dict": "mapping", "array": "list", "list": "list",
             "string": "string", "str": "string", "number": "number", "int": "integer",
             "float": "number", "integer": "integer", "NoneType": "empty value",
             "boolean": "true/false", "bool": "true/false"}
    if isinstance(value, list):
        return " or ".join(names.get(str(v), str(v)) for v in value)
    return names.get(str(value), str(value))


# ---------------------------------------------------------------- reference pass


def _reference_problems(data: dict[str, Any], lines: Mapping[PathKey, int],
                        path: Path) -> Iterable[str]:
    def at(*parts: str | int) -> str:
        return f"{path}:{_line_of(lines, tuple(parts))}: {_describe_path(data, tuple(parts))}"

    capabilities = list(data["capabilities"])
    backends: dict[str, Any] = data["backends"]
    for name, backend in backends.items():
        window = backend["window"]
        if Version(window["anchor"]) > Version(window["leading_edge"]):
            yield (f"{at('backends', name, 'window', 'anchor')}: anchor {window['anchor']!r} is "
                   f"newer than leading_edge {window['leading_edge']!r}. The anchor is the oldest "
                   f"supported version: swap them or fix the newer one.")

    seen: dict[str, int] = {}
    for index, stack in enumerate(data["stacks"]):
        name = stack["name"]
        if name in seen:
            yield (f"{at('stacks', index, 'name')}: duplicate stack name {name!r} (also "
                   f"stacks[{seen[name]}]). Stack names must be unique.")
        seen.setdefault(name, index)
        backend = stack["backend"]
        if backend not in backends:
            yield (f"{at('stacks', index, 'backend')}: backend {backend!r} is not declared under "
                   f"'backends' (so it has no support window). Declare it with a window, or use "
                   f"one of: {', '.join(backends)}.{_did_you_mean(backend, backends)}")
        for c_index, capability in enumerate(stack["capabilities"]):
            if capability not in capabilities:
                yield (f"{at('stacks', index, 'capabilities', c_index)}: unknown capability "
                       f"{capability!r}. Declare it under 'capabilities' or use one of: "
                       f"{', '.join(capabilities)}.{_did_you_mean(capability, capabilities)}")
        if backend in backends and stack["provider"] != "fake":
            window = backends[backend]["window"]
            if _series_after(stack["version"], window["leading_edge"]):
                yield (f"{at('stacks', index, 'version')}: {stack['version']!r} is newer than the "
                       f"{backend} window's leading_edge {window['leading_edge']!r}. Move the "
                       f"leading edge in backends.{backend}.window.")
        compose = stack.get("compose")
        if compose is not None:
            directory = path.parent / compose["directory"]
            if not (directory / "compose.yaml").is_file():
                yield (f"{at('stacks', index, 'compose', 'directory')}: {str(directory)!r} has no "
                       f"compose.yaml. Point 'directory' at the stack's folder under stacks/.")
        if stack["provider"] == "compose" and "docker" not in stack.get("requires", ["docker"]):
            yield (f"{at('stacks', index, 'requires')}: a compose stack requires 'docker'. "
                   f"Add it to the list.")


def _series_after(version: str, leading_edge: str) -> bool:
    """True when ``version`` lies beyond the leading edge's release series."""
    edge = Version(leading_edge).release
    mine = Version(version).release[: len(edge)]
    return mine > edge


def _role(version: str, window: Window) -> Role:
    mine = Version(version).release
    anchor = Version(window.anchor).release
    edge = Version(window.leading_edge).release
    if mine[: len(edge)] == edge:
        return "leading-edge"
    if mine[: len(anchor)] == anchor:
        return "anchor"
    if mine[: len(anchor)] < anchor:
        return "legacy"
    return "supported"


# ---------------------------------------------------------------- typed model


def _build(data: dict[str, Any], path: Path) -> Manifest:
    backends = {
        name: Backend(name=name, window=Window(**raw["window"]),
                      description=raw.get("description", ""))
        for name, raw in data["backends"].items()
    }
    stacks = []
    for raw in data["stacks"]:
        window = backends[raw["backend"]].window
        compose = raw.get("compose")
        kind = raw.get("kind")
        canary = raw.get("canary")
        base = raw.get("base_image")
        image = raw.get("image")
        stacks.append(Stack(
            name=raw["name"],
            backend=raw["backend"],
            version=raw["version"],
            provider=raw["provider"],
            transport=raw["transport"],
            capabilities=frozenset(raw["capabilities"]),
            configuration=raw["configuration"],
            lanes=tuple(raw["lanes"]),
            role=_role(raw["version"], window),
            description=raw.get("description", ""),
            requires=tuple(raw.get("requires", ["docker"] if raw["provider"] != "fake" else [])),
            base_image=BaseImage(**base) if base else None,
            image=ImageRef(**image) if image else None,
            compose=ComposeSpec(
                directory=(path.parent / compose["directory"]).resolve(),
                service=compose["service"],
                build_args=dict(compose.get("build_args", {})),
                ports=tuple(compose.get("ports", ())),
                privileged_reason=compose.get("privileged_reason"),
            ) if compose else None,
            kind=KindSpec(
                kind_version=kind["kind_version"],
                node_image=ImageRef(**kind["node_image"]),
                operator_version=kind["operator_version"],
                worker_image=ImageRef(**kind["worker_image"]) if "worker_image" in kind else None,
            ) if kind else None,
            canary=CanarySpec(
                build_args=dict(canary.get("build_args", {})),
                image_tag=canary.get("image", {}).get("tag"),
            ) if canary else None,
            options=dict(raw.get("options", {})),
            timeouts=Timeouts(**raw.get("timeouts", {})),
        ))
    return Manifest(path=path.resolve(), capabilities=dict(data["capabilities"]),
                    backends=backends, stacks=tuple(stacks))
