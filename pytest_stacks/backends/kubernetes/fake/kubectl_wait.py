"""``kubectl wait`` of the fake's kubectl, as v1.36.3's ``pkg/cmd/wait`` decides: ``--for=
condition=NAME[=VALUE]`` (the condition's type and status compared case-insensitively, value
``true`` by default: the MPI Operator's ``Succeeded``/``Failed``), ``--for=delete`` (gone, or
replaced by a new uid), ``--for=create``, ``--for=jsonpath=EXPR[=VALUE]``; ``--timeout``
(default 30s; 0 checks once). It polls the API server where kubectl watches: the answer and its
words are the same (``mpijob.kubeflow.org/pi condition met``; ``error: timed out waiting for
the condition on mpijobs/pi``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from pytest_stacks.backends.kubernetes.api import RESOURCES, KubeApi, Obj, meta
from pytest_stacks.backends.kubernetes.fake import kubectl_print as show
from pytest_stacks.backends.kubernetes.fake.kubectl_args import (
    Failed,
    Parsed,
    plural,
    seconds,
    singular,
)

Check = Callable[[Obj | None], bool]
_JSONPATH_FORMAT = ("error: jsonpath wait format must be --for=jsonpath='{.status.readyReplicas}'"
                    "=3 or --for=jsonpath='{.status.readyReplicas}'")


def _condition(name: str, value: str) -> Check:
    def met(obj: Obj | None) -> bool:
        for cond in ((obj or {}).get("status") or {}).get("conditions") or []:
            if str(cond.get("type", "")).lower() == name.lower():
                return str(cond.get("status", "")).lower() == value.lower()
        return False
    return met


def _split(text: str) -> list[str]:
    """kubectl's split of ``EXPR=VALUE`` on a single ``=`` (``==`` stays in the filter)."""
    parts, word, at = [], "", 0
    while at < len(text):
        if text.startswith("==", at):
            word, at = word + "==", at + 2
        elif text[at] == "=":
            parts.append(word)
            word, at = "", at + 1
        else:
            word, at = word + text[at], at + 1
    return [*parts, word]


def _jsonpath(text: str) -> Check:
    parts = _split(text)
    if not parts[0] or len(parts) > 2:
        raise Failed(_JSONPATH_FORMAT)
    expr, eq = parts[0], len(parts) == 2
    value = parts[1].strip("'\"") if eq else ""
    if eq and not value:
        raise Failed("error: jsonpath wait has to have a value after equal sign, like "
                     "--for=jsonpath='{.status.readyReplicas}'=3")
    show.find(expr, {})  # a template the fake cannot read is refused before waiting

    def met(obj: Obj | None) -> bool:
        found = show.find(expr, obj or {})
        if len(found) != 1:
            return False
        return True if not eq else (show.scalar_text(found[0]) == value)
    return met


def checks(conditions: list[str]) -> list[tuple[str, Check]]:
    """Each ``--for``: (its kind, the check of a fetched object, None when absent)."""
    made: list[tuple[str, Check]] = []
    for cond in conditions:
        low = cond.lower()
        if low == "delete":
            made.append(("delete", lambda obj: obj is None))
        elif low == "create":
            made.append(("create", lambda obj: obj is not None))
        elif cond.startswith("condition="):
            name, _, value = cond.removeprefix("condition=").partition("=")
            made.append(("condition", _condition(name, value or "true")))
        elif cond.startswith("jsonpath="):
            made.append(("jsonpath", _jsonpath(cond.removeprefix("jsonpath="))))
        else:
            raise Failed(f'error: unrecognized condition: "{cond}"')
    if not made:
        raise Failed("error: unrecognized condition: \"[]\"")
    return made


def _met(api: KubeApi, kind: str, namespace: str | None, name: str, what: str,
         check: Check, uid: Any) -> bool:
    now = api.get(kind, namespace, name)
    gone = now is None or (what == "delete" and meta(now).get("uid") != uid)
    if gone and what not in ("delete", "create"):  # it went away while waited for
        raise Failed(f'Error from server (NotFound): {plural(kind)} "{name}" not found')
    return check(None if gone and what == "delete" else now)


def wait(api: KubeApi, pairs: list[tuple[str, str | None, str]], parsed: Parsed,
         out: list[str], *, wait_for: Callable[[Callable[[], bool], float], bool],
         timeout: float = 30.0) -> tuple[int, str]:
    """``kubectl wait``: (exit code, stderr); each object that met it appended to ``out``.
    Without ``--timeout``, kubectl's 30s (or the caller's ``timeout``, when shorter)."""
    wanted = checks(parsed.options.get("for", []))
    given = parsed.last("timeout")
    limit = seconds(given, "timeout") if given else min(30.0, timeout)
    limit = 7 * 24 * 3600.0 if limit < 0 else limit  # kubectl: negative is a week
    for kind, namespace, name in pairs:
        first = api.get(kind, namespace, name)
        uid = meta(first).get("uid") if first is not None else None
        for what, check in wanted:
            if first is None and what == "delete":
                continue  # kubectl ignores NotFound when waiting for a deletion
            if first is None and what != "create":
                raise Failed(f'Error from server (NotFound): {plural(kind)} "{name}" not found')
            met = functools.partial(_met, api, kind, namespace, name, what, check, uid)
            if limit == 0:
                if not met():
                    raise Failed(f"error: condition not met for {plural(kind)}/{name}")
            elif not wait_for(met, limit):
                raise Failed(f"error: timed out waiting for the condition on "
                             f"{RESOURCES[kind].plural}/{name}")
            out.append(f"{singular(kind)}/{name}\n" if parsed.last("output") == "name"
                       else f"{singular(kind)}/{name} condition met\n")
    return 0, ""
