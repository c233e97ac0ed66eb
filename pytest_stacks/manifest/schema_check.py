"""The schema pass: shape, types and unknown keys, against the JSON Schema we ship.

Each jsonschema error becomes one line with file, line, field path, what was expected and, for
a likely typo, the closest valid name. A text that passed once against this very schema is
remembered by digest, because importing and running jsonschema costs more than everything else
the plugin does at start-up and the manifest rarely changes between runs.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterable
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from pytest_stacks.manifest.positions import PathKey, Positions
from pytest_stacks.suggest import did_you_mean


@cache
def schema() -> dict[str, Any]:
    """The JSON Schema shipped in the package (also published for editors)."""
    text = resources.files("pytest_stacks").joinpath("schema/manifest.schema.json").read_text()
    return dict(json.loads(text))



def _cache_key(text: str) -> str:
    digest = hashlib.sha256(text.encode())
    digest.update(json.dumps(schema(), sort_keys=True).encode())
    return digest.hexdigest()


def _cache_dir() -> Path:
    root = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(root) / "pytest-stacks" / "valid-manifests"


def known_valid(text: str) -> bool:
    try:
        return (_cache_dir() / _cache_key(text)).exists()
    except OSError:
        return False


def remember_valid(text: str) -> None:
    try:
        folder = _cache_dir()
        folder.mkdir(parents=True, exist_ok=True)
        (folder / _cache_key(text)).touch()
    except OSError:
        pass  # a read-only home only costs the next run a validation



def schema_problems(data: Any, positions: Positions) -> Iterable[str]:
    import jsonschema

    validator = jsonschema.Draft202012Validator(schema())
    errors = sorted(validator.iter_errors(data),
                    key=lambda e: positions.sort_key(tuple(e.absolute_path)))
    seen: set[str] = set()
    for error in errors:
        for problem in _explain(error, data, positions):
            if problem not in seen:  # e.g. one "missing keys" report per missing key
                seen.add(problem)
                yield problem


def _explain(error: Any, data: Any, positions: Positions) -> Iterable[str]:
    at: PathKey = tuple(error.absolute_path)
    if error.validator == "additionalProperties" and isinstance(error.instance, dict):
        schema_node: Any = error.schema
        allowed = list(schema_node.get("properties", {}))
        extra = [k for k in error.instance if k not in allowed]
        for key in extra:
            where = positions.where((*at, key))
            yield (f"{where}: {positions.describe(data, (*at, key))}: unknown key. Expected "
                   f"one of: {', '.join(allowed)}.{did_you_mean(key, allowed)}")
        return
    if error.validator in {"anyOf", "oneOf", "allOf"} and error.context:
        import jsonschema

        best = jsonschema.exceptions.best_match(error.context)
        yield from _explain(best, data, positions)
        return
    where = positions.where(at)
    field_name = positions.describe(data, at)
    expected = _expected(error)
    yield f"{where}: {field_name}: {expected}"


def _expected(error: Any) -> str:
    kind = error.validator
    value: Any = error.validator_value
    raw: Any = error.instance
    got = _Shown(raw)
    if kind == "required":
        missing = [k for k in value if isinstance(raw, dict) and k not in raw]
        return f"missing required key(s): {', '.join(missing)}. Add them."
    if kind == "enum":
        hint = did_you_mean(str(raw)[:200], [str(v) for v in value])
        return f"{got!r} is not allowed. Expected one of: {', '.join(map(str, value))}.{hint}"
    if kind == "const":
        return f"{got!r} is not supported. Expected {value!r}."
    if kind == "type":
        return f"expected a {_type_name(value)}, got {_type_name(type(raw).__name__)} {got!r}."
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


class _Shown:
    """A refused value as a message shows it: its repr, cut short when long (a name of
    20,000 characters is named by its start and its length, never printed whole)."""

    def __init__(self, value: Any) -> None:
        self.value = value

    def __repr__(self) -> str:
        text = repr(self.value)
        return text if len(text) <= 80 else f"{text[:80]}... ({len(text)} characters)"

    def __str__(self) -> str:
        text = str(self.value)
        return text if len(text) <= 80 else f"{text[:80]}... ({len(text)} characters)"


def _type_name(value: Any) -> str:
    names = {"object": "mapping", "dict": "mapping", "array": "list", "list": "list",
             "string": "string", "str": "string", "number": "number", "int": "integer",
             "float": "number", "integer": "integer", "NoneType": "empty value",
             "boolean": "true/false", "bool": "true/false"}
    if isinstance(value, list):
        return " or ".join(names.get(str(v), str(v)) for v in value)
    return names.get(str(value), str(value))

