"""Where a recording came from: the stack's provider, the run, the pytest-stacks that made it,
and a digest of the scenario it ran.

A recording is what a fake is held to, so it has to say it is a real daemon's: a fake's own
answers relabelled would prove nothing. The daemon's and the client's versions are in the
recording already (``versions``); this adds what made it. The run id may be missing: the
recordings made before provenance was kept have none (docs/getting-started.md says so).

The digest is over the code that decides which exchanges are recorded (the scenario's steps
and jobs, and how the tap records a call, a polling round, a retry), read as syntax: a comment,
a docstring or a line's layout does not change it, any change to what runs does, and a
recording made by another scenario is then refused as stale.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_stacks import __version__

#: The modules (beside this one) whose code decides what a recording holds.
SCENARIO_SOURCES = ("scenario.py", "tap.py")


@dataclasses.dataclass(frozen=True)
class Provenance:
    #: The provider the stack was had by (compose, kind, existing; ``fake`` for a fake's run).
    provider: str
    #: :func:`scenario_digest` of the code that made the recording.
    scenario: str
    #: The pytest-stacks version that made it.
    pytest_stacks: str
    #: The pytest-stacks run it was made in (None: recorded before provenance was kept).
    run_id: str | None = None

    @classmethod
    def now(cls, provider: str, run_id: str | None, scenario: str | None = None) -> Provenance:
        """What makes a recording now; ``scenario``: the digest of what ran, when it is not
        the driver scenario (a corpus of command lines names its own)."""
        return cls(provider, scenario or scenario_digest(), __version__, run_id)

    @classmethod
    def read(cls, data: Any) -> Provenance:
        """As a recording holds it; what is missing reads as "" (refused where it matters,
        :mod:`.admission`), a missing run id as None."""
        data = data if isinstance(data, Mapping) else {}
        run_id = data.get("run_id")
        return cls(str(data.get("provider") or ""), str(data.get("scenario") or ""),
                   str(data.get("pytest_stacks") or ""),
                   None if run_id is None else str(run_id))


def scenario_digest() -> str:
    """The digest of :data:`SCENARIO_SOURCES` as this installation has them."""
    here = Path(__file__).parent
    return source_digest({name: (here / name).read_text(encoding="utf-8")
                          for name in SCENARIO_SOURCES})


def source_digest(sources: Mapping[str, str]) -> str:
    """``sha256:<16 hex>`` of the sources' syntax trees (without docstrings), by name."""
    shapes = {name: _shape(_without_docstrings(ast.parse(text)))
              for name, text in sorted(sources.items())}
    text = json.dumps(shapes, sort_keys=True, separators=(",", ":"))
    return "sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def _without_docstrings(tree: ast.Module) -> ast.Module:
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if (body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant)
                    and isinstance(body[0].value.value, str)):
                node.body = body[1:] or [ast.Pass()]
    return tree


def _shape(node: Any) -> Any:
    """A node as plain data, the same on every Python this supports: fields that are empty
    (None, []) are left out, as fields a newer Python adds are empty where not used
    (``type_params`` in 3.12), and positions are not fields."""
    if isinstance(node, ast.AST):
        return [type(node).__name__, {name: _shape(value)
                                      for name, value in ast.iter_fields(node)
                                      if value is not None and value != []}]
    if isinstance(node, list):
        return [_shape(item) for item in node]
    return repr(node)
