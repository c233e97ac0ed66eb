"""The pins: every version the manifest fixes, as Renovate must see it.

:func:`manifest_pins` lists every pin the manifest declares, the way Renovate must report it;
:func:`pin_problems` names the pins Renovate could not track or would move the wrong way.

Pin conventions (they are what ``renovate.json`` matches):

- A scalar pin (a Debian package version in ``compose.build_args``, ``kind.kind_version``,
  ``kind.operator_version``, optionally a window edge) has on the line above it::

      # renovate: datasource=<ds> depName=<name> [packageName=<p>] [depType=leading-edge] \
[versioning=<v>] [extractVersion=<re>] [registryUrl=<url>]

  (fields in this order, on one line).
- An image is a ``{name, tag[, digest]}`` mapping under ``image``, ``kind.node_image`` or
  ``kind.worker_image`` (``base_image`` once it has a digest). It needs no comment, except
  ``# renovate: depType=leading-edge`` on a leading-edge stack.
- A stack's ``version:`` is tracked with its first annotated pin (or its image): Renovate moves
  it together with the pin, so the daemon's reported version and the pin never disagree.
- ``depType=leading-edge`` marks the pins of leading-edge stacks, which follow upstream; every
  other pin stays on its release line, because moving an anchor is a human decision.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

import yaml

from pytest_stacks.manifest import Manifest, Stack
from pytest_stacks.manifest.build import COMPONENT_PINS

LEADING_EDGE = "leading-edge"
UNTRACKED = "untracked"
LOCAL_IMAGE_PREFIX = "pytest-stacks/"

_ANNOTATION = re.compile(r"^[ \t]*#[ \t]*renovate:[ \t]*(?P<fields>.*?)[ \t]*$")
_ANNOTATED_VALUE = re.compile(
    r"^[ \t]*(?:ARG[ \t]+|ENV[ \t]+|export[ \t]+)?(?P<key>[A-Za-z0-9_.-]+)[ \t]*[:=][ \t]*[\"']?"
    r"(?:\$\{[A-Za-z0-9_]+:?-)?(?P<value>[^\"'\s{}$,#][^\"'\s{}$,#]*)")
_FIELD_ORDER = ("datasource", "depName", "packageName", "depType", "versioning",
                "extractVersion", "registryUrl")


@dataclass(frozen=True)
class Annotation:
    """A ``# renovate:`` comment and the line it annotates (both 1-based)."""

    line: int
    target_line: int
    fields: Mapping[str, str]
    key: str | None
    value: str | None

    @property
    def datasource(self) -> str | None:
        return self.fields.get("datasource")

    @property
    def dep_name(self) -> str | None:
        return self.fields.get("depName")


def pin_annotations(text: str) -> list[Annotation]:
    """Every ``# renovate:`` comment in ``text`` with the key and value of the next line."""
    lines = text.splitlines()
    found = []
    for index, line in enumerate(lines):
        match = _ANNOTATION.match(line)
        if not match:
            continue
        fields = {}
        for token in match.group("fields").split():
            key, sep, value = token.partition("=")
            if sep:
                fields[key] = value
        nxt = lines[index + 1] if index + 1 < len(lines) else ""
        target = _ANNOTATED_VALUE.match(nxt)
        found.append(Annotation(
            line=index + 1, target_line=index + 2, fields=fields,
            key=target.group("key") if target else None,
            value=target.group("value") if target else None))
    return found


def _field_order_ok(annotation: Annotation) -> bool:
    order = [k for k in annotation.fields if k in _FIELD_ORDER]
    return order == sorted(order, key=_FIELD_ORDER.index) and set(annotation.fields) <= set(
        _FIELD_ORDER)


@dataclass(frozen=True)
class _StackSpan:
    stack: Stack
    first: int  # 1-based line of the stack's "- name:" entry
    last: int  # 1-based last line of the entry
    lines: Mapping[tuple[str, ...], int]  # key path inside the entry -> 1-based line


def _spans(manifest: Manifest, text: str) -> list[_StackSpan]:
    root = yaml.compose(text, Loader=yaml.SafeLoader)
    if not isinstance(root, yaml.MappingNode):  # pragma: no cover - loads() validated it
        return []
    stacks_node = next((v for k, v in root.value if k.value == "stacks"), None)
    if not isinstance(stacks_node, yaml.SequenceNode):  # pragma: no cover
        return []
    spans = []
    for stack, node in zip(manifest.stacks, stacks_node.value, strict=False):
        lines: dict[tuple[str, ...], int] = {}

        def walk(n: yaml.Node, at: tuple[str, ...], into: dict[tuple[str, ...], int]) -> None:
            if isinstance(n, yaml.MappingNode):
                for k, v in n.value:
                    into[(*at, str(k.value))] = k.start_mark.line + 1
                    walk(v, (*at, str(k.value)), into)

        walk(node, (), lines)
        end = node.end_mark.line + (1 if node.end_mark.column else 0)
        spans.append(_StackSpan(stack, node.start_mark.line + 1, max(end, 1), lines))
    return spans


@dataclass(frozen=True)
class _Pin:
    stack: str
    where: str
    line: int
    dep_name: str | None
    datasource: str | None
    value: str
    annotation: Annotation | None

    def as_tuple(self) -> tuple[str, str, str]:
        if self.dep_name and self.datasource:
            return (self.dep_name, self.datasource, self.value)
        return (f"UNTRACKED {self.stack}: {self.where} (line {self.line})", UNTRACKED, self.value)


def _stack_pins(span: _StackSpan, by_target: Mapping[int, Annotation],
                all_annotations: Sequence[Annotation]) -> list[_Pin]:
    stack = span.stack
    pins: list[_Pin] = []

    def annotated(path: tuple[str, ...], value: str) -> _Pin:
        line = span.lines.get(path, span.first)
        note = by_target.get(line)
        return _Pin(stack.name, ".".join(path), line, note.dep_name if note else None,
                    note.datasource if note else None, value, note)

    def image(path: tuple[str, ...], name: str, tag: str) -> _Pin:
        line = span.lines.get(path, span.first)
        return _Pin(stack.name, ".".join(path), line, name, "docker", tag, by_target.get(line))

    if stack.compose is not None:
        for key, value in stack.compose.build_args.items():
            if key.endswith("VERSION") and value:
                pins.append(annotated(("compose", "build_args", key), value))
    if stack.kind is not None:
        pins.append(annotated(("kind", "kind_version"), stack.kind.kind_version))
        pins.append(annotated(("kind", "operator_version"), stack.kind.operator_version))
        node = stack.kind.node_image
        if node is not None:
            pins.append(image(("kind", "node_image"), node.name, node.tag))
        if stack.kind.node_build is not None:
            node_base = stack.kind.node_build.base_image
            if node_base.digest:
                pins.append(image(("kind", "node_build", "base_image"), node_base.name,
                                  node_base.tag))
            for key, value in stack.kind.node_build.build_args.items():
                if key.endswith("VERSION") and value:
                    pins.append(annotated(("kind", "node_build", "build_args", key), value))
        worker = stack.kind.worker_image
        if worker is not None and not worker.name.startswith(LOCAL_IMAGE_PREFIX):
            pins.append(image(("kind", "worker_image"), worker.name, worker.tag))
        operator = stack.kind.operator_image
        if operator is not None:
            pins.append(image(("kind", "operator_image"), operator.name, operator.tag))
    if stack.image is not None and not stack.image.name.startswith(LOCAL_IMAGE_PREFIX):
        pins.append(image(("image",), stack.image.name, stack.image.tag))
    if stack.base_image is not None and stack.base_image.digest:
        base = stack.base_image
        pins.append(image(("base_image",), base.name, base.tag))

    pins.append(_version_pin(span, by_target, all_annotations))
    return pins


def _version_pin(span: _StackSpan, by_target: Mapping[int, Annotation],
                 all_annotations: Sequence[Annotation]) -> _Pin:
    """The stack's version moves with its first annotated pin (or with its image)."""
    stack = span.stack
    version_line = span.lines.get(("version",), span.first)
    direct = by_target.get(version_line)
    if direct is not None:
        return _Pin(stack.name, "version", version_line, direct.dep_name, direct.datasource,
                    stack.version, direct)
    follow = next((a for a in all_annotations
                   if version_line < a.line <= span.last and a.datasource), None)
    if follow is not None:
        return _Pin(stack.name, "version", version_line, follow.dep_name, follow.datasource,
                    stack.version, follow)
    if stack.image is not None and not stack.image.name.startswith(LOCAL_IMAGE_PREFIX):
        return _Pin(stack.name, "version", version_line, stack.image.name, "docker",
                    stack.version, by_target.get(span.lines.get(("image",), 0)))
    return _Pin(stack.name, "version", version_line, None, None, stack.version, None)


def _collect(manifest: Manifest, text: str | None = None
             ) -> tuple[list[Annotation], list[_StackSpan], list[_Pin]]:
    text = manifest.path.read_text(encoding="utf-8") if text is None else text
    notes = pin_annotations(text)
    by_target = {a.target_line: a for a in notes}
    spans = [s for s in _spans(manifest, text) if not s.stack.is_fake]
    pins = [p for span in spans for p in _stack_pins(span, by_target, notes)]
    return notes, spans, pins


def manifest_pins(manifest: Manifest, text: str | None = None) -> set[tuple[str, str, str]]:
    """Every pin the manifest declares, as ``(depName, datasource, currentValue)``.

    That is what ``renovate --platform=local --dry-run=extract`` must report for the manifest.
    A pin without the annotation Renovate needs appears with datasource ``"untracked"`` and a
    depName saying where it is, so a comparison with Renovate's report fails on it by name.
    """
    notes, _, pins = _collect(manifest, text)
    found = {p.as_tuple() for p in pins}
    for note in notes:  # annotated elsewhere too (window edges, ...)
        if note.datasource and note.dep_name and note.value:
            found.add((note.dep_name, note.datasource, note.value))
    return found


def pins_by_stack(manifest: Manifest, text: str | None = None
                  ) -> dict[str, set[tuple[str, str, str]]]:
    """The pins of each real stack (as in :func:`manifest_pins`), by stack name."""
    _, spans, pins = _collect(manifest, text)
    found: dict[str, set[tuple[str, str, str]]] = {span.stack.name: set() for span in spans}
    for pin in pins:
        found[pin.stack].add(pin.as_tuple())
    return found


def _governing(stack: Stack, where: str) -> tuple[str, str, str]:
    """Which window moves a pin: a component's pin (K8S_VERSION, a kind node image) follows
    the stack's place in that component's window, every other pin the backend's. Returns
    (the axis in words, the stack's role on it, the manifest field of that window)."""
    for component, arg in COMPONENT_PINS.items():
        if component in stack.component_roles and (where.endswith("." + arg)
                                                   or where == "kind.node_image"):
            return (f"{stack.backend} {component}", stack.component_roles[component],
                    f"backends.{stack.backend}.components.{component}")
    return stack.backend, stack.role, f"backends.{stack.backend}.window"


def pin_problems(manifest: Manifest, text: str | None = None) -> list[str]:
    """Pins Renovate cannot track, or would move the wrong way; one line each."""
    notes, spans, pins = _collect(manifest, text)
    where = manifest.path.name
    found: set[tuple[int, str]] = set()

    def problem(line: int, message: str) -> None:
        found.add((line, f"{where}:{line}: {message}"))

    for note in notes:
        if not _field_order_ok(note):
            problem(
                note.line, f"'# renovate:' fields must be among and in the order "
                f"{' '.join(_FIELD_ORDER)} (renovate.json matches them in that order).")
    for pin in pins:
        if not (pin.dep_name and pin.datasource):
            problem(
                pin.line, f"stacks[{pin.stack}].{pin.where} = {pin.value!r} is not "
                f"tracked by Renovate: add '# renovate: datasource=... depName=...' on the line "
                f"above it.")
    for span in spans:
        stack = span.stack
        for pin in (p for p in pins if p.stack == stack.name and p.where != "version"):
            dep_type = pin.annotation.fields.get("depType") if pin.annotation else None
            axis, role, window = _governing(stack, pin.where)
            if role == LEADING_EDGE and dep_type != LEADING_EDGE:
                problem(
                    pin.line, f"stacks[{stack.name}].{pin.where}: the stack is the "
                    f"{axis} leading edge, so its pin must follow upstream: add "
                    f"'depType=leading-edge' to its '# renovate:' comment (for an image: a "
                    f"'# renovate: depType=leading-edge' line above it).")
            if role != LEADING_EDGE and dep_type == LEADING_EDGE:
                problem(
                    pin.line, f"stacks[{stack.name}].{pin.where}: marked "
                    f"depType=leading-edge, but the stack's role is {role} ({axis}): remove "
                    f"the marker (or move {window}).")
        suite = stack.compose.build_args.get("DEBIAN_SUITE") if stack.compose else None
        for pin in pins:
            deb = pin.annotation
            if pin.stack != stack.name or deb is None or deb.datasource != "deb" or not suite:
                continue
            url = deb.fields.get("registryUrl", "")
            url_suite = parse_qs(urlsplit(url).query).get("suite", [""])[0]
            if url_suite != suite:
                problem(
                    deb.line, f"stacks[{stack.name}]: the Debian pin is looked up in "
                    f"suite {url_suite or '(none)'!r} but the stack installs from DEBIAN_SUITE "
                    f"{suite!r}: fix the registryUrl's suite=.")
    return [message for _, message in sorted(found)]

