"""How the fake's ``kubectl`` prints what the API server holds: ``-o json`` / ``yaml`` /
``name`` / ``jsonpath=...`` and the default tables, in kubectl's own shapes.

Kept apart from the command line (:mod:`.kubectl`) so each stays small. What a client parses is
modelled byte for byte where it can be: JSON with kubectl's 4-space indent, sorted keys and Go's
HTML escaping; jsonpath's text (strings raw, maps and lists as compact JSON, several results
joined by a space, missing keys printing nothing as ``--allow-missing-template-keys`` does by
default). YAML is PyYAML's block style with sorted keys: the same document, though its quoting
of scalars may differ from Go's in places. jsonpath knows fields, ``[n]``, ``[*]``, ``..``-less
paths and ``[?(@.f=="v")]`` filters; ``range`` and friends are refused with the reason.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from typing import Any

import yaml

from pytest_stacks.backends.kubernetes.api import Obj, meta, parse_time


class PrintError(Exception):
    """A template or format the fake cannot print; the text is kubectl's ``error: ...``."""


def _go_escape(text: str) -> str:
    # encoding/json escapes these three inside strings (they only occur inside strings).
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def as_json(obj: Any) -> str:
    return _go_escape(json.dumps(obj, indent=4, sort_keys=True, ensure_ascii=False)) + "\n"


def compact_json(obj: Any) -> str:
    return _go_escape(json.dumps(obj, separators=(",", ":"), sort_keys=True,
                                 ensure_ascii=False))


class _GoStyle(yaml.SafeDumper):
    """Quotes a scalar the way Go's YAML does where PyYAML would: with double quotes; a
    multi-line string as a literal block (``|``), as Go's YAML writes it."""

    def choose_scalar_style(self) -> str:
        style = str(super().choose_scalar_style())
        return '"' if style == "'" else style


def _string(dumper: yaml.SafeDumper, value: str) -> yaml.ScalarNode:
    block = "\n" in value and not any(line != line.rstrip() for line in value.splitlines())
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style="|" if block else None)


_GoStyle.add_representer(str, _string)


def as_yaml(obj: Any) -> str:
    return yaml.dump(obj, Dumper=_GoStyle, default_flow_style=False, sort_keys=True,
                     allow_unicode=True, width=1 << 16)


def as_list(items: list[Obj]) -> Obj:
    """What ``kubectl get`` prints for more than one object (or a selector)."""
    return {"apiVersion": "v1", "items": items, "kind": "List",
            "metadata": {"resourceVersion": ""}}


# ------------------------------------------------------------ jsonpath

_TOKEN = re.compile(r"""\.([A-Za-z0-9_\-/]+|\*)   # .field (keys may hold / and -), .*
                      |\[(\*|-?\d+)\]            # [*] or [n]
                      |\[\?\(@((?:\.[A-Za-z0-9_\-/]+)+)\s*(==|!=)\s*(?:"([^"]*)"|'([^']*)'|(-?\d+))\)\]
                      |\[\?\(@((?:\.[A-Za-z0-9_\-/]+)+)\)\]
                      |\[['"]([^'"]+)['"]\]      # ['field.with.dots']
                   """, re.VERBOSE)


def _steps(path: str) -> list[tuple[str, Any]]:
    steps: list[tuple[str, Any]] = []
    at = 0
    if path in ("", "."):
        return steps
    while at < len(path):
        match = _TOKEN.match(path, at)
        if match is None:
            raise PrintError(f"error parsing jsonpath {{{path}}}: the fake's kubectl does not "
                             f"model this expression (from {path[at:]!r}); it knows .field, "
                             f"[n], [*] and [?(@.field==\"value\")]")
        field, index, fpath, op, sval, sval2, nval, epath, quoted = match.groups()
        if field == "*":
            steps.append(("index", "*"))
        elif field is not None or quoted is not None:
            steps.append(("field", field if field is not None else quoted))
        elif index is not None:
            steps.append(("index", index))
        elif fpath is not None:
            value: Any = int(nval) if nval is not None else (sval if sval is not None else sval2)
            steps.append(("filter", (fpath[1:].split("."), op, value)))
        else:
            steps.append(("exists", epath[1:].split(".")))
        at = match.end()
    return steps


def _dig(value: Any, fields: list[str]) -> tuple[bool, Any]:
    for name in fields:
        if not isinstance(value, dict) or name not in value:
            return False, None
        value = value[name]
    return True, value


def _walk(values: list[Any], steps: list[tuple[str, Any]]) -> list[Any]:
    for kind, arg in steps:
        nxt: list[Any] = []
        for value in values:
            if kind == "field":
                if isinstance(value, dict) and arg in value:
                    nxt.append(value[arg])
            elif kind == "index" and isinstance(value, list):
                if arg == "*":
                    nxt.extend(value)
                elif -len(value) <= int(arg) < len(value):
                    nxt.append(value[int(arg)])
            elif kind == "index" and arg == "*" and isinstance(value, dict):
                nxt.extend(value[k] for k in sorted(value))
            elif kind in ("filter", "exists") and isinstance(value, list):
                for item in value:
                    if kind == "exists":
                        if _dig(item, arg)[0]:
                            nxt.append(item)
                        continue
                    fields, op, want = arg
                    found, have = _dig(item, fields)
                    if found and ((have == want) if op == "==" else (have != want)):
                        nxt.append(item)
        values = nxt
    return values


def scalar_text(value: Any) -> str:
    """One jsonpath result as kubectl prints it."""
    if isinstance(value, str):
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "<nil>"
    if isinstance(value, int | float):
        return str(value)
    return compact_json(value)


def find(expression: str, obj: Any) -> list[Any]:
    """The values one expression selects (kubectl's relaxed form: ``{.a.b}``, ``.a.b`` or
    ``a.b``), for ``wait --for=jsonpath=...``."""
    expr = expression.strip()
    if expr.startswith("{") and expr.endswith("}"):
        expr = expr[1:-1].strip()
    expr = expr.removeprefix("$")
    if expr and not expr.startswith((".", "[")):
        expr = "." + expr
    return _walk([obj], _steps(expr))


def jsonpath(template: str, obj: Any) -> str:
    """``-o jsonpath=TEMPLATE`` of ``obj``: the literal text between ``{...}`` kept, each
    expression's results printed as kubectl does; no newline is added (as kubectl)."""
    out, at = [], 0
    for match in re.finditer(r"\{([^{}]*)\}", template):
        out.append(template[at:match.start()])
        expr = match.group(1).strip()
        if expr.split(" ", 1)[0] in ("range", "end", "if", "else"):
            raise PrintError(f"error parsing jsonpath {template}: the fake's kubectl does not "
                             f"model {{{expr.split(' ', 1)[0]}}}: use -o json and read the "
                             f"fields in the client")
        if len(expr) >= 2 and expr[0] == expr[-1] and expr[0] in "\"'":
            out.append(expr[1:-1].replace("\\n", "\n").replace("\\t", "\t"))
            at = match.end()
            continue
        if expr.startswith("$"):
            expr = expr[1:]
        if not expr.startswith(".") and not expr.startswith("[") and expr:
            raise PrintError(f"error parsing jsonpath {template}: unrecognized identifier "
                             f"{expr}")
        found = _walk([obj], _steps(expr))
        out.append(" ".join(scalar_text(v) for v in found))
        at = match.end()
    rest = template[at:]
    if "{" in rest:
        raise PrintError(f"error parsing jsonpath {template}, unclosed action")
    out.append(rest)
    return "".join(out)


# ------------------------------------------------------------ tables

def age(stamp: str | None, now: datetime | None = None) -> str:
    """kubectl's short age (``duration.HumanDuration``): 45s, 3m12s, 25m, 5h10m, 30h, 4d."""
    when = parse_time(stamp)
    if when is None:
        return "<unknown>"
    seconds = max(0, int(((now or datetime.now(UTC)) - when).total_seconds()))
    minutes, hours = seconds // 60, seconds // 3600
    if seconds < 120:
        return f"{seconds}s"
    if minutes < 10:
        return f"{minutes}m{seconds % 60}s" if seconds % 60 else f"{minutes}m"
    if minutes < 180:
        return f"{minutes}m"
    if hours < 8:
        return f"{hours}h{minutes % 60}m" if minutes % 60 else f"{hours}h"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"
    return f"{hours // 24}d"


def _pod_row(pod: Obj) -> list[str]:
    status = pod.get("status") or {}
    statuses = status.get("containerStatuses") or []
    total = len((pod.get("spec") or {}).get("containers") or [])
    ready = sum(1 for c in statuses if c.get("ready"))
    restarts = sum(int(c.get("restartCount", 0)) for c in statuses)
    shown = status.get("reason") or status.get("phase") or "Unknown"
    for cstat in statuses:  # as kubectl's printPod: a container's state says more
        state = cstat.get("state") or {}
        waiting, ended = state.get("waiting") or {}, state.get("terminated") or {}
        if waiting.get("reason"):
            shown = waiting["reason"]
        elif ended:
            shown = ended.get("reason") or f"ExitCode:{ended.get('exitCode', 0)}"
    if meta(pod).get("deletionTimestamp"):
        shown = "Terminating"
    return [f"{ready}/{total}", shown, str(restarts)]


def table(kind: str, objs: list[Obj], *, all_namespaces: bool, no_headers: bool) -> str:
    """The default ``kubectl get`` table: NAME, the kind's own columns, AGE."""
    columns = ["NAME"] + (["READY", "STATUS", "RESTARTS"] if kind == "Pod" else []) + ["AGE"]
    rows = []
    for obj in objs:
        m = meta(obj)
        extra = _pod_row(obj) if kind == "Pod" else []
        row = [str(m.get("name", "")), *extra, age(m.get("creationTimestamp"))]
        rows.append(([str(m.get("namespace", ""))] if all_namespaces else []) + row)
    if all_namespaces:
        columns = ["NAMESPACE", *columns]
    lines = rows if no_headers else [columns, *rows]
    widths = [max(len(line[i]) for line in lines) for i in range(len(columns))]
    return "".join("   ".join(cell.ljust(w) for cell, w in zip(line, widths, strict=True))
                   .rstrip() + "\n" for line in lines)
