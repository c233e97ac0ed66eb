"""CI lanes, the support window and the pins: pure functions over the typed manifest.

- :func:`lane_rows` turns a lane (``pr``, ``full``, ``canary``) into GitHub Actions matrix rows,
  one per stack (a stack is one version in one configuration), with everything a job needs.
  Fake stacks never become rows: they run in ``ci.yml``'s fake lane.
- :func:`window_markdown` renders the support window per backend (the README embeds it).
- :func:`manifest_pins` lists every pin the manifest declares, the way Renovate must report it;
  :func:`pin_problems` names the pins Renovate could not track or would move the wrong way.
- :func:`register_cli` adds ``matrix`` and ``window`` to the ``pytest-stacks`` command line.

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

import argparse
import hashlib
import json
import math
import os
import re
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import yaml
from packaging.version import InvalidVersion, Version

from pytest_stacks.errors import ManifestError, StacksError
from pytest_stacks.manifest import LANES, Manifest, Stack
from pytest_stacks.manifest import load as load_manifest

RUNS_ON = "ubuntu-latest"
MAX_JOBS = 256  # GitHub Actions' limit of jobs per matrix
TEST_BUDGET_MINUTES = 20  # on top of the stack's own build/up/ready timeouts
MAX_TIMEOUT_MINUTES = 360  # GitHub-hosted runners' job limit
EMPTY_LANE_EXIT = 3
LEADING_EDGE = "leading-edge"
UNTRACKED = "untracked"
LOCAL_IMAGE_PREFIX = "pytest-stacks/"


class LaneError(StacksError):
    """A lane cannot be turned into a matrix (e.g. the pr lane misses an anchor)."""


class EmptyLaneError(LaneError):
    """The lane has no stacks: reported, never emitted as an (invalid) empty matrix."""


# ---------------------------------------------------------------- lanes -> rows


def lane_stacks(manifest: Manifest, lane: str) -> list[Stack]:
    """The non-fake stacks of ``lane``, in manifest order."""
    if lane not in LANES:
        raise LaneError(f"unknown lane {lane!r}: expected one of {', '.join(LANES)}")
    return [s for s in manifest.stacks if s.provider != "fake" and s.in_lane(lane)]


def in_series(version: str, edge: str) -> bool:
    """True when ``version`` lies in the release series ``edge`` (``22.05.8`` in ``22.05``)."""
    try:
        series = Version(edge).release
        return Version(version).release[: len(series)] == series
    except InvalidVersion:  # pragma: no cover - the schema only admits dotted numbers
        return False


def pr_lane_problems(manifest: Manifest) -> list[str]:
    """Per backend with real stacks, the pr lane must hold its leading edge and its anchor."""
    problems = []
    in_pr = {s.name for s in lane_stacks(manifest, "pr")}
    for backend in manifest.backends.values():
        real = [s for s in manifest.stacks if s.backend == backend.name and s.provider != "fake"]
        if not real:
            continue
        for what, edge in (("leading edge", backend.window.leading_edge),
                           ("anchor", backend.window.anchor)):
            at_edge = [s.name for s in real if in_series(s.version, edge)]
            if not at_edge:
                problems.append(
                    f"backend {backend.name!r} has no stack at its {what} {edge} (window "
                    f"{backend.window.anchor}..{backend.window.leading_edge}): add one, or move "
                    f"backends.{backend.name}.window.")
            elif not in_pr.intersection(at_edge):
                problems.append(
                    f"the pr lane misses the {what} {edge} of backend {backend.name!r}: add 'pr' "
                    f"to the lanes of one of: {', '.join(at_edge)}.")
    return problems


def build_inputs(stack: Stack, lane: str = "pr") -> dict[str, str]:
    """What goes into bringing the stack up: pins, with the canary's floats in that lane."""
    inputs: dict[str, str] = {"version": stack.version}
    canary = lane == "canary" and stack.canary is not None
    if stack.base_image is not None:
        inputs["base_image"] = stack.base_image.registry_reference
    if stack.compose is not None:
        args = dict(stack.compose.build_args)
        if canary and stack.canary is not None:
            args.update(stack.canary.build_args)
        inputs.update({f"build_arg.{k}": v for k, v in sorted(args.items())})
    if stack.image is not None:
        tag = stack.canary.image_tag if canary and stack.canary and stack.canary.image_tag else None
        inputs["image"] = (f"{stack.image.name}:{tag}" if tag else stack.image.reference)
    if stack.kind is not None:
        inputs["kind_version"] = stack.kind.kind_version
        inputs["node_image"] = stack.kind.node_image.reference
        inputs["operator_version"] = stack.kind.operator_version
        if stack.kind.worker_image is not None:
            inputs["worker_image"] = stack.kind.worker_image.reference
    return inputs


def _timeout_minutes(stack: Stack) -> int:
    t = stack.timeouts
    minutes = math.ceil((t.build + t.up + t.ready) / 60) + TEST_BUDGET_MINUTES
    return max(10, min(MAX_TIMEOUT_MINUTES, minutes))


def _artifact_name(lane: str, stack: Stack) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", stack.name).strip("-")
    return f"stack-logs-{lane}-{safe}"


def row(stack: Stack, lane: str) -> dict[str, Any]:
    """One matrix row: a job's whole description."""
    inputs = build_inputs(stack, lane)
    pytest_args = f"--stack={stack.name}"
    if lane == "canary":
        pytest_args += " --stack-lane=canary"
    fingerprint = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:12]
    return {
        "stack": stack.name,
        "backend": stack.backend,
        "version": stack.version,
        "role": stack.role,
        "provider": stack.provider,
        "transport": stack.transport,
        "configuration": stack.configuration,
        "lane": lane,
        "runner_needs": list(stack.requires),
        "runs_on": RUNS_ON,
        "pytest_args": pytest_args,
        "artifact": _artifact_name(lane, stack),
        "timeout_minutes": _timeout_minutes(stack),
        "inputs": inputs,
        "fingerprint": fingerprint,
    }


def lane_rows(manifest: Manifest, lane: str) -> list[dict[str, Any]]:
    """The matrix rows of ``lane``.

    pr: the stacks marked ``pr`` (checked to hold each backend's leading edge and anchor);
    full: the stacks marked ``full``; canary: every stack with a ``canary:`` block.
    Raises :class:`LaneError` for an invalid pr lane or more rows than GitHub allows.
    """
    stacks = lane_stacks(manifest, lane)
    if lane == "pr":
        problems = pr_lane_problems(manifest)
        if problems:
            raise LaneError("invalid pr lane: " + " ".join(problems))
    rows = [row(s, lane) for s in stacks]
    if len(rows) > MAX_JOBS:
        raise LaneError(f"the {lane} lane has {len(rows)} stacks; a GitHub Actions matrix holds "
                        f"at most {MAX_JOBS} jobs. Split the lane.")
    artifacts = [r["artifact"] for r in rows]
    if len(set(artifacts)) != len(artifacts):  # pragma: no cover - names are unique
        raise LaneError(f"artifact names collide in the {lane} lane: {artifacts}")
    return rows


def matrix(manifest: Manifest, lane: str) -> dict[str, list[dict[str, Any]]]:
    """``{"include": rows}``; raises :class:`EmptyLaneError` for an empty lane."""
    rows = lane_rows(manifest, lane)
    if not rows:
        why = {"canary": "no stack declares a 'canary:' block",
               "pr": "no real stack lists 'pr' in its lanes",
               "full": "no real stack lists 'full' in its lanes"}[lane]
        raise EmptyLaneError(f"the {lane} lane is empty ({why}); there is nothing to run")
    return {"include": rows}


# ---------------------------------------------------------------- the support window


def _sort_key(version: str) -> tuple[int, Any]:
    try:
        return (0, Version(version))
    except InvalidVersion:  # pragma: no cover - the schema only admits dotted numbers
        return (1, version)


def window_markdown(manifest: Manifest) -> str:
    """The support window per backend as one Markdown table (oldest first per backend)."""
    lines = ["| Backend | Window (anchor .. leading edge) | Version | Role | Stacks | Lanes |",
             "|---|---|---|---|---|---|"]
    for backend in manifest.backends.values():
        window = f"{backend.window.anchor} .. {backend.window.leading_edge}"
        real = [s for s in manifest.stacks if s.backend == backend.name and s.provider != "fake"]
        by_version: dict[str, list[Stack]] = {}
        for stack in real:
            by_version.setdefault(stack.version, []).append(stack)
        entries: list[tuple[tuple[int, Any], str, str, str, str]] = []
        for version, stacks in by_version.items():
            names = ", ".join(f"`{s.name}`" for s in stacks)
            lanes = ", ".join(lane for lane in LANES if any(s.in_lane(lane) for s in stacks))
            entries.append((_sort_key(version), version, stacks[0].role, names, lanes or "-"))
        for role, edge in (("anchor", backend.window.anchor),
                           ("leading-edge", backend.window.leading_edge)):
            if not any(in_series(s.version, edge) for s in real):
                entries.append((_sort_key(edge), edge, role, "(no stack)", "-"))
        for _, version, role, names, lanes in sorted(entries, key=lambda e: e[0]):
            lines.append(f"| {backend.name} | {window} | {version} | {role} | {names} | {lanes} |")
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------- pins

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
        pins.append(image(("kind", "node_image"), node.name, node.tag))
        worker = stack.kind.worker_image
        if worker is not None and not worker.name.startswith(LOCAL_IMAGE_PREFIX):
            pins.append(image(("kind", "worker_image"), worker.name, worker.tag))
    if stack.image is not None and not stack.image.name.startswith(LOCAL_IMAGE_PREFIX):
        pins.append(image(("image",), stack.image.name, stack.image.tag))
    if stack.base_image is not None and stack.base_image.digest:
        base = stack.base_image
        pins.append(image(("base_image",), base.name, base.tag))

    # The stack's version moves with its first annotated pin (or with its image).
    version_line = span.lines.get(("version",), span.first)
    direct = by_target.get(version_line)
    if direct is not None:
        pins.append(_Pin(stack.name, "version", version_line, direct.dep_name, direct.datasource,
                         stack.version, direct))
    else:
        follow = next((a for a in all_annotations
                       if version_line < a.line <= span.last and a.datasource), None)
        if follow is not None:
            pins.append(_Pin(stack.name, "version", version_line, follow.dep_name,
                             follow.datasource, stack.version, follow))
        elif stack.image is not None and not stack.image.name.startswith(LOCAL_IMAGE_PREFIX):
            pins.append(_Pin(stack.name, "version", version_line, stack.image.name, "docker",
                             stack.version, by_target.get(span.lines.get(("image",), 0))))
        else:
            pins.append(_Pin(stack.name, "version", version_line, None, None, stack.version,
                             None))
    return pins


def _collect(manifest: Manifest, text: str | None = None
             ) -> tuple[list[Annotation], list[_StackSpan], list[_Pin]]:
    text = manifest.path.read_text(encoding="utf-8") if text is None else text
    notes = pin_annotations(text)
    by_target = {a.target_line: a for a in notes}
    spans = [s for s in _spans(manifest, text) if s.stack.provider != "fake"]
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
        leading = stack.role == LEADING_EDGE
        for pin in (p for p in pins if p.stack == stack.name and p.where != "version"):
            dep_type = pin.annotation.fields.get("depType") if pin.annotation else None
            if leading and dep_type != LEADING_EDGE:
                problem(
                    pin.line, f"stacks[{stack.name}].{pin.where}: the stack is the "
                    f"{stack.backend} leading edge, so its pin must follow upstream: add "
                    f"'depType=leading-edge' to its '# renovate:' comment (for an image: a "
                    f"'# renovate: depType=leading-edge' line above it).")
            if not leading and dep_type == LEADING_EDGE:
                problem(
                    pin.line, f"stacks[{stack.name}].{pin.where}: marked "
                    f"depType=leading-edge, but the stack's role is {stack.role}: remove the "
                    f"marker (or move backends.{stack.backend}.window).")
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


# ---------------------------------------------------------------- command line


def _error(command: str, message: str) -> int:
    print(f"pytest-stacks {command}: {message}", file=sys.stderr)
    return 2


def _load(command: str, path: str) -> Manifest | int:
    try:
        return load_manifest(Path(path))
    except ManifestError as exc:
        return _error(command, "invalid manifest: " + " | ".join(exc.problems))


def _manifest_arg(args: argparse.Namespace) -> str:
    # SUPPRESS above: a sub-command default must not override `pytest-stacks --manifest X`.
    return str(getattr(args, "manifest", None) or "manifest.yaml")


def _write_github_output(values: Mapping[str, str]) -> str | None:
    target = os.environ.get("GITHUB_OUTPUT")
    if not target:
        return None
    with open(target, "a", encoding="utf-8") as out:
        for key, value in values.items():
            if "\n" in value:  # pragma: no cover - every value here is one line
                raise ValueError(f"{key}: multi-line output value")
            out.write(f"{key}={value}\n")
    return target


def cmd_matrix(args: argparse.Namespace) -> int:
    manifest = _load("matrix", _manifest_arg(args))
    if isinstance(manifest, int):
        return manifest
    if args.format == "github" and not os.environ.get("GITHUB_OUTPUT"):
        return _error("matrix", "--format github appends to $GITHUB_OUTPUT, which is not set "
                                "(use --format json outside GitHub Actions)")
    try:
        result = matrix(manifest, args.lane)
    except EmptyLaneError as exc:
        print(f"pytest-stacks matrix: {exc}", file=sys.stderr)
        if args.format == "github":
            _write_github_output({"has_rows": "false", "count": "0"})
        return EMPTY_LANE_EXIT
    except LaneError as exc:
        return _error("matrix", str(exc))
    encoded = json.dumps(result, separators=(",", ":"), sort_keys=False)
    if args.format == "json":
        print(encoded)
        return 0
    rows = result["include"]
    _write_github_output({"matrix": encoded, "has_rows": "true", "count": str(len(rows))})
    print(f"{args.lane} lane: {len(rows)} job(s): " + ", ".join(r["stack"] for r in rows))
    return 0


def cmd_window(args: argparse.Namespace) -> int:
    manifest = _load("window", _manifest_arg(args))
    if isinstance(manifest, int):
        return manifest
    sys.stdout.write(window_markdown(manifest))
    return 0


def register_cli(subparsers: Any) -> None:
    """Add ``matrix`` and ``window`` to an ``argparse`` sub-parser collection."""
    m = subparsers.add_parser(
        "matrix", help="print a lane's GitHub Actions matrix",
        description="Print the GitHub Actions matrix {\"include\": [...]} of a lane: pr (leading "
                    "edge plus one anchor per backend), full (the whole window), canary (every "
                    "stack with a floating reference). Exit 3 when the lane is empty.")
    m.add_argument("--lane", required=True, choices=LANES)
    m.add_argument("--format", choices=("json", "github"), default="json",
                   help="json: print it; github: append matrix=, has_rows=, count= to "
                        "$GITHUB_OUTPUT")
    m.add_argument("--manifest", default=argparse.SUPPRESS, metavar="PATH",
                   help="manifest to read (default: manifest.yaml)")
    m.set_defaults(func=cmd_matrix)
    w = subparsers.add_parser(
        "window", help="print the support window per backend as a Markdown table")
    w.add_argument("--manifest", default=argparse.SUPPRESS, metavar="PATH",
                   help="manifest to read (default: manifest.yaml)")
    w.set_defaults(func=cmd_window)


def main(argv: Iterable[str] | None = None) -> int:
    """Stand-alone entry (``python -m pytest_stacks.matrix``) for use before cli.py wires it."""
    parser = argparse.ArgumentParser(prog="pytest-stacks")
    register_cli(parser.add_subparsers(dest="command", required=True))
    args = parser.parse_args(list(argv) if argv is not None else None)
    func: Callable[[argparse.Namespace], int] = args.func
    return func(args)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
