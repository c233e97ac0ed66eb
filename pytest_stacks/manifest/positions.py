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


MAX_DEPTH = 32
MAX_ALIASES = 256
MAX_NODES = 100_000
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when available
_OPEN = (yaml.FlowSequenceStartToken, yaml.FlowMappingStartToken, yaml.BlockMappingStartToken,
         yaml.BlockSequenceStartToken)
_CLOSE = (yaml.FlowSequenceEndToken, yaml.FlowMappingEndToken, yaml.BlockEndToken)


class _TooBig(Exception):
    """The document expands beyond MAX_NODES (aliases that multiply, or refer to themselves)."""


def parse_yaml(text: str, path: Path) -> tuple[Any, dict[PathKey, int], list[str]]:
    """Parse YAML, recording the line of every node and rejecting duplicate keys.

    Hostile or broken input is refused before it can hang or crash the run: nesting deeper
    than MAX_DEPTH (libyaml's composer recurses in C and crashes on deep nesting, so tokens
    are counted first, by an iterative scan), more than MAX_ALIASES aliases, an alias that
    refers to itself, or aliases that expand beyond MAX_NODES nodes ("billion laughs").
    """
    try:
        problem = _shape_problem(text, path)
        if problem:
            return None, {}, [problem]
        node = yaml.compose(text, Loader=_LOADER)
        if node is None:
            return None, {}, [f"{path}:1: the manifest is empty. Start from the example in "
                              f"README.md."]
        lines: dict[PathKey, int] = {}
        problems: list[str] = []
        _walk(node, (), lines, problems, path, _Budget())
        if problems:
            return None, lines, problems
        data = yaml.load(text, Loader=_LOADER)  # a safe loader (C or pure Python)
    except _TooBig as exc:
        return None, {}, [f"{path}: {exc}"]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        reason = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        if "nesting depth" in reason:  # libyaml's own limit, met before ours on flow nesting
            return None, {}, [f"{where}: nested more than {MAX_DEPTH} levels deep; a manifest "
                              f"needs about 6. Is this the right file?"]
        return None, {}, [f"{where}: not valid YAML: {reason}. Fix the syntax at that line."]
    return data, lines, problems


def _shape_problem(text: str, path: Path) -> str | None:
    depth = aliases = 0
    for token in yaml.scan(text, Loader=_LOADER):
        if isinstance(token, _OPEN):
            depth += 1
            if depth > MAX_DEPTH:
                return (f"{path}:{token.start_mark.line + 1}: nested more than {MAX_DEPTH} "
                        f"levels deep; a manifest needs about 6. Is this the right file?")
        elif isinstance(token, _CLOSE):
            depth -= 1
        elif isinstance(token, yaml.AliasToken):
            aliases += 1
            if aliases > MAX_ALIASES:
                return (f"{path}:{token.start_mark.line + 1}: more than {MAX_ALIASES} YAML "
                        f"aliases (*name); write the values out, or use fewer anchors.")
    return None


_STR_TAG = "tag:yaml.org,2002:str"


def _snippet(node: yaml.Node) -> str:
    text = str(node.value) if isinstance(node, yaml.ScalarNode) else ""
    return repr(text[:40]) if text else "the key"


class _Budget:
    def __init__(self) -> None:
        self.nodes = 0


def _walk(node: yaml.Node, at: PathKey, lines: dict[PathKey, int], problems: list[str],
          path: Path, budget: _Budget, inside: frozenset[int] = frozenset()) -> None:
    if id(node) in inside:
        raise _TooBig(f"line {node.start_mark.line + 1}: a YAML alias refers to a node that "
                      f"contains it (a loop); write the value out instead.")
    budget.nodes += 1
    if budget.nodes > MAX_NODES:
        raise _TooBig(f"expands to more than {MAX_NODES:,} values through YAML aliases (an "
                      f"alias 'bomb'?); a manifest has a few hundred. Write the values out.")
    lines.setdefault(at, node.start_mark.line + 1)
    inside = inside | {id(node)}
    if isinstance(node, yaml.MappingNode):
        seen: dict[str, int] = {}
        for key_node, value_node in node.value:
            key = str(key_node.value)
            line = key_node.start_mark.line + 1
            if not isinstance(key_node, yaml.ScalarNode) or key_node.tag != _STR_TAG:
                kind = (key_node.tag.rsplit(":", 1)[-1]
                        if isinstance(key_node, yaml.ScalarNode) else "a collection")
                problems.append(
                    f"{path}:{line}: {fmt_path(at)}: a key that is not a string (YAML reads "
                    f"{_snippet(key_node)} as {kind}). "
                    f"Write the key as a quoted string.")
                continue
            if key in seen:
                problems.append(
                    f"{path}:{line}: {fmt_path((*at, key))}: duplicate key (first defined on "
                    f"line {seen[key]}). Remove or rename one of them."
                )
            seen[key] = line
            _walk(value_node, (*at, key), lines, problems, path, budget, inside)
            lines[(*at, key)] = line
    elif isinstance(node, yaml.SequenceNode):
        for index, item in enumerate(node.value):
            _walk(item, (*at, index), lines, problems, path, budget, inside)


def fmt_path(at: Iterable[str | int]) -> str:
    out = ""
    for part in at:
        if isinstance(part, int):
            out += f"[{part}]"
        elif isinstance(part, str) and re.fullmatch(r"[A-Za-z_][A-Za-z0-9_-]*", part):
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
        if isinstance(name, str):  # a name of 20,000 characters is shown cut short
            shown = name if len(name) <= 40 else f"{name[:40]}..."
            text = text.replace(f"stacks[{at[1]}]", f"stacks[{at[1]}] ({shown})", 1)
    return text

