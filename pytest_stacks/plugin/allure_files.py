"""The files an Allure results directory gets once per run besides the results: the
environment widget (what ran where, versions observed or claimed) merged into the project's
own ``environment.properties``, and the categories that tell infrastructure errors from
product failures merged into its ``categories.json``. Each lands whole or raises
EvidenceError naming the path (:func:`pytest_stacks.evidence.write_whole`)."""

from __future__ import annotations

import json
import platform
import re
from collections.abc import Iterable, Mapping
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.errors import INFRA_PREFIX
from pytest_stacks.evidence import write_whole
from pytest_stacks.plugin.state import State
from pytest_stacks.verdicts.table import claimed

# reporting.py starts an infrastructure error's longrepr with this; INFRA_REGEX matches it,
# and tests/plugin/test_allure.py checks both against a real infrastructure error.
INFRA_CATEGORY = "Infrastructure errors (not product failures)"
PRODUCT_CATEGORY = "Product failures"
TEST_ERRORS_CATEGORY = "Test errors (broken tests, not infrastructure)"
# Allure 2 full-matches with DOTALL, Allure 3 searches (with or without the s flag): these
# two patterns mean the same under all three.
INFRA_REGEX = INFRA_PREFIX.replace("(", r"\(").replace(")", r"\)") + ".*"
NOT_INFRA_REGEX = rf"^(?!{INFRA_PREFIX.split(' (')[0]}).*"

# First: it must win where Allure assigns only the first matching category (Allure 3).
LEADING_CATEGORIES: tuple[dict[str, Any], ...] = (
    {"name": INFRA_CATEGORY,
     "description": "A stack could not come up, reported another version than its pin, failed "
                    "its probe job or died under the test. Not a verdict on the code under test.",
     "messageRegex": INFRA_REGEX,
     "matchedStatuses": ["broken", "failed"]},
)
# Last: catch-alls, after any categories of the project's own, which would never match in
# Allure 3 if these came first.
TRAILING_CATEGORIES: tuple[dict[str, Any], ...] = (
    {"name": PRODUCT_CATEGORY,
     "description": "An assertion about the code under test failed on a stack that was healthy.",
     "messageRegex": NOT_INFRA_REGEX,
     "matchedStatuses": ["failed"]},
    {"name": TEST_ERRORS_CATEGORY,
     "description": "The test itself raised an unexpected exception (a bug in the test or its "
                    "client), on a stack that was healthy.",
     "messageRegex": NOT_INFRA_REGEX,
     "matchedStatuses": ["broken"]},
)
OUR_CATEGORY_NAMES = frozenset(c["name"] for c in LEADING_CATEGORIES + TRAILING_CATEGORIES)


# -------------------------------------------------------------------- session files


def environment(current: State, observed: Mapping[str, Mapping[str, str]]) -> dict[str, str]:
    """What ran where: per stack the pin and what the daemon (and client) reported.

    Stacks no test used are left out: the default fake selection of a run that never asked
    for a stack would otherwise fill the widget with stacks that were never started.
    """
    env: dict[str, str] = {}
    for stack in current.selected:
        record = current.records.get(stack.name)
        seen = observed.get(stack.name, {})
        if record is None and not seen and stack.name not in current.infra \
                and not current.seen[stack.name]:
            continue
        key = f"stack.{stack.name}"
        env[f"{key}.backend"] = stack.backend
        env[f"{key}.provider"] = stack.provider
        env[f"{key}.pinned_version"] = stack.version
        daemon = (record.observed_version if record else "") or seen.get("observed_version", "")
        client = (record.client_version if record else "") or seen.get("client_version", "")
        if stack.is_fake:  # a double echoes its pin: what it claims, never observed
            daemon = (claimed(record.observed_version) if record and record.observed_version
                      else seen.get("claimed_version", ""))
            if daemon:
                env[f"{key}.claimed_version"] = daemon
        else:
            if daemon:
                env[f"{key}.observed_version"] = daemon
            if client:
                env[f"{key}.client_version"] = client
        if stack.name in current.infra:
            env[f"{key}.infrastructure_error"] = current.infra[stack.name]
    if current.pool is not None:
        env["pytest-stacks.lane"] = current.pool.ctx.lane
    env["pytest-stacks.version"] = _version("pytest-stacks")
    env["pytest.version"] = pytest.__version__
    env["python.version"] = platform.python_version()
    return env


def _version(distribution: str) -> str:
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return "unknown"


_PROPERTY_KEY = re.compile(r"^\s*((?:\\.|[^=:\s\\])+)")


def write_environment(path: Path, values: Mapping[str, str]) -> None:
    """Merge into an existing environment.properties: other keys (the project's own, or other
    runs' into the same directory) are kept verbatim; ours are replaced."""
    kept: list[str] = []
    if path.is_file():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            match = _PROPERTY_KEY.match(line)
            stripped = line.strip()
            key = _unescape(match.group(1)) if match and not stripped.startswith(("#", "!")) \
                else None
            if key not in values:
                kept.append(line)
    ours = [f"{_escape(k, key=True)}={_escape(v)}" for k, v in values.items()]
    write_whole(path, "\n".join(kept + ours) + "\n", what="Allure environment file")


def _escape(text: str, *, key: bool = False) -> str:
    """Java properties escaping, as Allure's readers parse it; separators only in keys."""
    out = []
    for i, ch in enumerate(text):
        if ch in "\\\n\r\t":
            out.append({"\\": "\\\\", "\n": "\\n", "\r": "\\r", "\t": "\\t"}[ch])
        elif (key and ch in "=:#! ") or (i == 0 and ch == " "):
            out.append("\\" + ch)
        else:
            out.append(ch)
    return "".join(out)


def _unescape(text: str) -> str:
    return re.sub(r"\\(.)", lambda m: m.group(1), text)


def categories(existing: Iterable[Any] = ()) -> list[Any]:
    """Ours merged with a project's categories by name: ours replace same-named entries, the
    infrastructure category first, the catch-alls last, the project's in between."""
    theirs = [c for c in existing
              if not (isinstance(c, dict) and c.get("name") in OUR_CATEGORY_NAMES)]
    return [*LEADING_CATEGORIES, *theirs, *TRAILING_CATEGORIES]


def write_categories(path: Path) -> str | None:
    """Write or merge categories.json; a file we cannot read is left alone (returns why)."""
    existing: list[Any] = []
    if path.is_file():
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (ValueError, OSError) as exc:
            return f"{path} is not valid JSON ({exc}); left as it is, without our categories"
        if not isinstance(loaded, list):
            return f"{path} is not a JSON list; left as it is, without our categories"
        existing = loaded
    write_whole(path, json.dumps(categories(existing), indent=2) + "\n",
                what="Allure categories file")
    return None
