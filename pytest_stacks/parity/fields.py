"""A normalised exchange read as named fields, so a difference says *which* field differs.

JSON (parsed by the normaliser) by its paths; text line by line, where a line of ``Key=value``
words (``scontrol``) by its keys and a ``|``-separated line (``sacct -P``) by its columns.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

_PAIR = re.compile(r"(?:^|\s)([A-Za-z][\w:/.]*)=(\S*)")


def label(exchange: Mapping[str, Any]) -> str:
    """How an exchange is named in a diff: the command line for a command, else the call."""
    request = exchange.get("request", {})
    args = request.get("args", [])
    if exchange.get("call") == "run" and args and isinstance(args[0], list):
        user = request.get("user")
        return "run: " + " ".join(str(a) for a in args[0]) + (f" (as {user})" if user else "")
    shown = json.dumps(request, sort_keys=True, separators=(",", ":"))
    return f"{exchange.get('call')}: {shown[:160]}"


def fields(exchange: Mapping[str, Any]) -> dict[str, str]:
    """``{path: value}`` for everything the daemon (or the fake) answered."""
    out: dict[str, str] = {}
    if "error" in exchange:
        out["error"] = str(exchange["error"])
    else:
        _walk(exchange.get("response"), "response", out)
    return out


def _walk(value: Any, path: str, out: dict[str, str]) -> None:
    if isinstance(value, Mapping):
        if not value:
            out[path] = "{}"
        for key, item in value.items():
            _walk(item, f"{path}.{key}", out)
    elif isinstance(value, list):
        if not value:
            out[path] = "[]"
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", out)
    elif isinstance(value, str) and "\n" in value.rstrip("\n"):
        _text(value.rstrip("\n").split("\n"), path, out)
    elif isinstance(value, str):
        _line(value.rstrip("\n"), path, out)
    else:
        out[path] = json.dumps(value)


def _text(lines: list[str], path: str, out: dict[str, str]) -> None:
    """Lines of ``Key=value`` words are records (each starts where its first key comes again:
    ``scontrol show job`` prints one job over several lines, ``-o`` one per line)."""
    first = _PAIR.search(lines[0])
    if first is None or not _pairs("\n".join(lines)):
        for index, line in enumerate(lines):
            _line(line, f"{path}.line[{index}]", out)
        return
    records: list[list[str]] = []
    for line in lines:
        if not records or line.lstrip().startswith(first.group(1) + "="):
            records.append([])
        records[-1].append(line)
    for index, record in enumerate(records):
        where = path if len(records) == 1 else f"{path}.record[{index}]"
        for key, value in _PAIR.findall(" ".join(record)):
            out[f"{where}.{key}"] = value


def _pairs(text: str) -> list[tuple[str, str]]:
    """The ``Key=value`` words of ``text``, if it is made of them (two or more, or only one)."""
    pairs = _PAIR.findall(text)
    return pairs if len(pairs) >= 2 or (pairs and text.strip() == "=".join(pairs[0])) else []


def _line(line: str, path: str, out: dict[str, str]) -> None:
    pairs = _pairs(line)
    if pairs:
        for key, value in pairs:
            out[f"{path}.{key}"] = value
    elif "|" in line:
        for index, column in enumerate(line.split("|")):
            out[f"{path}[{index}]"] = column
    else:
        out[path] = line
