"""YAML with the line of every node: what lets each problem name its file and line.

PyYAML silently keeps the last of two equal keys; for a manifest that would hide a duplicated
stack or a pasted block, so the node tree is walked once by hand and duplicates are problems.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import yaml

PathKey = tuple[str | int, ...]


def parse_yaml(text: str, path: Path) -> tuple[Any, dict[PathKey, int], list[str]]:
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
                    f"{path}:{line}: {fmt_path((*at, key))}: duplicate key (first defined on "
                    f"line {seen[key]}). Remove or rename one of them."
                )
            seen[key] = line
            _walk(value_node, (*at, key), lines, problems, path)
            lines[(*at, key)] = line
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*at, index), lines, problems, path)


def fmt_path(at: Iterable[str | int]) -> str:
    out = ""
    for part in at:
        if isinstance(part, int):
            out += f"[{part}]"
        elif re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
            out += f".{part}" if out else part
        else:
            out += f"[{part!r}]" if out else repr(part)
    return out or "(top level)"


def line_of(lines: Mapping[PathKey, int], at: PathKey) -> int:
    while at not in lines and at:
        at = at[:-1]
    return lines.get(at, 1)


class Positions:
    """Where each node of one parsed file stands: ``file:line`` for a field path."""

    def __init__(self, path: Path, lines: Mapping[PathKey, int]) -> None:
        self.path, self.lines = path, lines

    def where(self, at: PathKey) -> str:
        return f"{self.path}:{line_of(self.lines, at)}"

    def sort_key(self, at: PathKey) -> tuple[str, int]:
        return str(self.path), line_of(self.lines, at)

    def describe(self, data: Any, at: PathKey) -> str:
        """The field path as a person reads it: with the stack's name beside its index."""
        return describe_path(data, at)


class MergedPositions(Positions):
    """Positions in a manifest merged from several files (a project manifest extending the
    catalogue): each merged stack points back into the file, and the entry, it came from."""

    def __init__(self, top: Positions, stacks: Sequence[tuple[Positions, int]]) -> None:
        super().__init__(top.path, top.lines)
        self._top = top
        self._stacks = list(stacks)

    def _source(self, at: PathKey) -> tuple[Positions, PathKey]:
        if len(at) >= 2 and at[0] == "stacks" and isinstance(at[1], int) \
                and at[1] < len(self._stacks):
            source, index = self._stacks[at[1]]
            return source, ("stacks", index, *at[2:])
        return self._top, at

    def where(self, at: PathKey) -> str:
        source, local = self._source(at)
        return source.where(local)

    def sort_key(self, at: PathKey) -> tuple[str, int]:
        source, local = self._source(at)
        return source.sort_key(local)

    def describe(self, data: Any, at: PathKey) -> str:
        """Numbered as in the file the stack came from, not as in the merged list."""
        text = describe_path(data, at)
        _, local = self._source(at)
        if local[:1] == ("stacks",) and at[1:2] != local[1:2]:
            text = text.replace(f"stacks[{at[1]}]", f"stacks[{local[1]}]", 1)
        return text


def describe_path(data: Any, at: PathKey) -> str:
    """Field path with the stack's name beside its index, so a message reads by name."""
    text = fmt_path(at)
    if len(at) >= 2 and at[0] == "stacks" and isinstance(at[1], int):
        try:
            name = data["stacks"][at[1]].get("name")
        except (AttributeError, IndexError, KeyError, TypeError):
            name = None
        if isinstance(name, str):
            text = text.replace(f"stacks[{at[1]}]", f"stacks[{at[1]}] ({name})", 1)
    return text

