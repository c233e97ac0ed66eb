"""What a results document's schema cannot say, checked when it is read: the verdict rules
re-derived from its tests (a writer and a reader that disagreed would make the table lie), the
run's own story (:mod:`.run_checks`), one entry per name, and the infra retries telling one
story with the tests they name."""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any

from pytest_stacks.verdicts import run_checks
from pytest_stacks.verdicts.model import capability_status, stack_verdict
from pytest_stacks.verdicts.run_checks import INCONSISTENT

BUCKETS = (("passed", "passed"), ("failed", "failed"), ("skipped", "skipped"), ("infra", "infra"))
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


def json_path(at: Iterable[str | int], doc: Any = None) -> str:
    """``$.stacks[0].capabilities["outputs.repeatable"]``, plus ``(stack NAME)`` when ``doc``
    says which stack ``stacks[i]`` is: an index alone sends people counting."""
    parts = list(at)
    text = "$" + "".join(f"[{p}]" if isinstance(p, int)
                         else f".{p}" if _IDENT.fullmatch(p) else f"[{json.dumps(p)}]"
                         for p in parts)
    if len(parts) >= 2 and parts[0] == "stacks" and isinstance(parts[1], int) \
            and isinstance(doc, dict) and isinstance(doc.get("stacks"), list) \
            and parts[1] < len(doc["stacks"]) and isinstance(doc["stacks"][parts[1]], dict):
        name = doc["stacks"][parts[1]].get("name")
        if isinstance(name, str):
            text += f" (stack {name})"
    return text


def problems(doc: dict[str, Any]) -> Iterable[str]:
    """What the schema cannot say: the rules re-derived, the run's own story (timestamps,
    scope, collected ids; :mod:`.run_checks`), one entry per name."""
    yield from run_checks.run_problems(doc)
    names: set[str] = set()
    for i, stack in enumerate(doc["stacks"]):
        if stack["name"] in names:
            yield f"{json_path(['stacks', i, 'name'], doc)}: the stack is listed twice."
        names.add(stack["name"])
        if stack["fake"] != (stack["provider"] == "fake"):
            yield (f"{json_path(['stacks', i, 'fake'], doc)}: {json.dumps(stack['fake'])} "
                   f"contradicts provider {stack['provider']!r}.")
        yield from _stack_problems(stack, lambda *at, i=i: json_path(["stacks", i, *at], doc))


def _stack_problems(stack: dict[str, Any], at: Any) -> Iterable[str]:
    tests, caps = stack["tests"], stack["capabilities"]
    nodeids = [t["nodeid"] for t in tests]
    for j, nodeid in enumerate(nodeids):
        if nodeid in nodeids[:j]:
            yield f"{at('tests', j, 'nodeid')}: {nodeid!r} is listed twice."
        for name in tests[j]["requires"]:
            if name not in caps:
                yield (f"{at('tests', j, 'requires')}: {name!r} has no entry in this stack's "
                       f"capabilities; every required capability needs one.")
    for name, cap in caps.items():
        for bucket, outcome in BUCKETS:
            listed = set(cap[bucket])
            derived = {t["nodeid"] for t in tests if name in t["requires"]
                       and t["outcome"] == outcome}
            if listed != derived:
                yield (f"{at('capabilities', name, bucket)}: must list exactly the tests that "
                       f"require {name!r} and {outcome}; unlisted: "
                       f"{sorted(derived - listed)[:3]}, listed but not such a test: "
                       f"{sorted(listed - derived)[:3]}.")
        if not cap["offered"] and (cap["passed"] or cap["failed"]):
            yield (f"{at('capabilities', name, 'offered')}: false, yet tests requiring {name!r} "
                   f"ran; they must be skipped on a stack that does not offer it.")
        status = capability_status(cap["offered"], len(cap["passed"]), len(cap["failed"]),
                                   len(cap["infra"]))
        if cap["status"] != status:
            yield (f"{at('capabilities', name, 'status')}: {cap['status']!r}, but "
                   f"capability_status() gives {status!r} for it. {INCONSISTENT}")
    yield from _retry_problems(stack, at)
    verdict = stack_verdict([t["outcome"] for t in tests],
                            [c["status"] for c in caps.values()], stack["infra"])
    if stack["verdict"] != verdict:
        yield (f"{at('verdict')}: {stack['verdict']!r}, but stack_verdict() gives {verdict!r} "
               f"for its tests and capabilities. {INCONSISTENT}")


def _retry_problems(stack: dict[str, Any], at: Any) -> Iterable[str]:
    """A test's retries and the stack's must tell one story: a test run again is named by
    as many of the stack's retries as it counts, and a retry names only the stack's tests."""
    retries = stack["infra_retries"]
    attempts = [r["attempt"] for r in retries]
    if attempts != sorted(set(attempts)):
        yield (f"{at('infra_retries')}: attempts {attempts} are not in order, once each. "
               f"{INCONSISTENT}")
    nodeids = {t["nodeid"] for t in stack["tests"]}
    for k, retry in enumerate(retries):
        for nodeid in retry["tests"]:
            if nodeid not in nodeids:
                yield (f"{at('infra_retries', k, 'tests')}: {nodeid!r} is not among the "
                       f"stack's tests. {INCONSISTENT}")
    for j, test in enumerate(stack["tests"]):
        named = sum(test["nodeid"] in r["tests"] for r in retries)
        if test["infra_retries"] != named:
            yield (f"{at('tests', j, 'infra_retries')}: {test['infra_retries']}, but "
                   f"{named} of the stack's infra_retries name the test. {INCONSISTENT}")
