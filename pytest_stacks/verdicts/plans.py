"""What a lane's results must cover: the lane's rows as the manifest plans them on this
checkout, or a matrix file the jobs ran from, checked against that same plan.

A matrix file is only JSON: rows removed by hand (or a plan made on another commit, or with
``--runnable-here`` on one machine) would otherwise be trusted as the lane, and a lane with its
failing rows trimmed would be green. So a matrix file must be the plan the manifest makes here:
each row carries the digest of all rows (``plan``, :mod:`pytest_stacks.ci.binding`), which is
recomputed from the file's rows and then from the manifest, and any difference is refused by
name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_stacks import ci
from pytest_stacks.ci import binding
from pytest_stacks.ci.lanes import RUNNABLE_ON
from pytest_stacks.manifest import LANES, Manifest
from pytest_stacks.verdicts.results import ResultsError, read_json
from pytest_stacks.verdicts.table import Expected

FIELDS = ("backend", "version", "role", "provider", "transport", "configuration")
FIX = "Pass the JSON that `pytest-stacks matrix --lane LANE` printed."


def expected_from_lane(manifest: Manifest, lane: str, project: Path | None = None,
                       tests: str = "") -> Expected:
    """The lane's matrix rows, bound to the checkout at ``project``; an empty lane raises
    ``EmptyLaneError`` (nothing to cover)."""
    rows = ci.matrix(manifest, lane, tests, project=project)["include"]
    return Expected(lane, tuple(rows), f"the {lane} lane of {manifest.path}")


def expected_from_matrix(path: str | Path, lane: str | None = None,
                         manifest: Manifest | None = None,
                         project: Path | None = None) -> Expected:
    """The rows of a matrix file as ``pytest-stacks matrix`` prints it (``{"include": rows}``).

    ``lane``, when given, must be the matrix's own. With ``manifest``, the rows must be exactly
    the lane the manifest plans on the checkout at ``project`` (default: the current folder).
    """
    src = str(path)
    data = read_json(path, FIX)
    problems = list(_matrix_problems(data, src))
    if problems:
        raise ResultsError(problems)
    rows: list[dict[str, Any]] = data["include"]
    lanes = sorted({r["lane"] for r in rows})
    if len(lanes) > 1:
        raise ResultsError([f"{src}: $.include[*].lane: rows of several lanes ({', '.join(lanes)})"
                            f"; a matrix is one lane's. Pass one lane's matrix."])
    if lane is not None and lanes != [lane]:
        raise ResultsError([f"{src}: $.include[*].lane: the matrix is the {lanes[0]} lane's, not "
                            f"the {lane} lane's. Drop --lane or pass the {lane} lane's matrix."])
    problems = _digest_problems(rows, src)
    if not problems and manifest is not None:
        problems = _replan_problems(rows, src, manifest, project or Path.cwd())
    if problems:
        raise ResultsError(problems)
    host = rows[0].get(RUNNABLE_ON)
    subset = f"the rows runnable on a host offering {', '.join(map(str, host)) or 'nothing'}" \
        if host is not None else ""
    return Expected(lanes[0], tuple(rows), src, subset)


def _matrix_problems(data: Any, src: str) -> Iterable[str]:
    if not isinstance(data, dict) or not isinstance(data.get("include"), list):
        yield f"{src}: $: expected an object {{\"include\": [rows]}}. {FIX}"
        return
    if not data["include"]:
        yield f"{src}: $.include: has no rows, so there is nothing to cover. {FIX}"
    seen: set[str] = set()
    for i, item in enumerate(data["include"]):
        at = f"{src}: $.include[{i}]"
        if not isinstance(item, dict):
            yield f"{at}: expected a row object. {FIX}"
            continue
        name = item.get("stack")
        if not isinstance(name, str) or not name:
            yield f"{at}.stack: expected a stack name. {FIX}"
        elif name in seen:
            yield f"{at}.stack: {name!r} is listed twice. {FIX}"
        else:
            seen.add(name)
        if item.get("lane") not in LANES:
            yield f"{at}.lane: {item.get('lane')!r} is not one of {', '.join(LANES)}. {FIX}"
        inputs = item.get("inputs")
        if not isinstance(inputs, dict) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in inputs.items()):
            yield f"{at}.inputs: expected an object of strings (the stack's pins). {FIX}"
        for key in (*FIELDS, *binding.ROW_KEYS, "tests"):
            if key in item and not isinstance(item[key], str):
                yield f"{at}.{key}: expected a string. {FIX}"
        missing = [k for k in binding.ROW_KEYS if k not in item]
        if missing:
            yield (f"{at}: has no {', '.join(missing)}, which bind the jobs' results to the "
                   f"plan (an older pytest-stacks, or a hand-made row). {FIX}")


def _digest_problems(rows: Sequence[Mapping[str, Any]], src: str) -> list[str]:
    """Each row's ``plan`` is the digest of all rows: a row removed or edited by hand breaks
    it for every row left."""
    digest = binding.plan_digest(rows)
    wrong = [i for i, r in enumerate(rows) if r["plan"] != digest]
    if not wrong:
        return []
    return [f"{src}: $.include[{wrong[0]}].plan: does not match the rows of the file"
            f"{f' (nor do {len(wrong) - 1} other row(s))' if len(wrong) > 1 else ''}: rows "
            f"were removed, added or edited after `pytest-stacks matrix` printed it. {FIX}"]


def _replan_problems(rows: Sequence[Mapping[str, Any]], src: str, manifest: Manifest,
                     project: Path) -> list[str]:
    """The file against the lane as the manifest plans it here, with the file's tests."""
    lane, tests = str(rows[0]["lane"]), {str(r.get("tests", "")) for r in rows}
    if len(tests) > 1:
        return [f"{src}: $.include[*].tests: the rows plan different tests "
                f"({' | '.join(sorted(tests))}); a lane's rows share one. {FIX}"]
    [planned_tests] = tests
    hosts = {tuple(map(str, r[RUNNABLE_ON])) if isinstance(r.get(RUNNABLE_ON), list)
             else None if r.get(RUNNABLE_ON) is None else ("\0garbled",) for r in rows}
    garbled = any(isinstance(r.get(RUNNABLE_ON), list)
                  and not all(isinstance(x, str) for x in r[RUNNABLE_ON]) for r in rows)
    if len(hosts) > 1 or garbled or ("\0garbled",) in hosts:
        return [f"{src}: $.include[*].{RUNNABLE_ON}: the rows disagree on (or garble) the host "
                f"their plan was made for. {FIX}"]
    [host] = hosts
    again = {r["stack"]: r for r in ci.matrix(
        manifest, lane, planned_tests, None if host is None else frozenset(host),
        project=project)["include"]}
    given = {str(r["stack"]): r for r in rows}
    found = []
    gone = [name for name in again if name not in given]
    extra = [name for name in given if name not in again]
    if gone:
        found.append(f"lacks row(s) {', '.join(gone)}")
    if extra:
        found.append(f"has row(s) {', '.join(extra)} the lane does not")
    for name in (n for n in given if n in again):
        keys = sorted(k for k in {*given[name], *again[name]}
                      if k != "plan" and given[name].get(k) != again[name].get(k))
        if keys:
            found.append(f"row {name} differs in {', '.join(keys)}")
    if not found:
        return []
    how = f"pytest-stacks matrix --lane {lane}" + (f" --tests '{planned_tests}'"
                                                    if planned_tests else "") \
        + (" --runnable-here" if host is not None else "")
    return [f"{src}: $.include: is not the {lane} lane that {manifest.path} plans on the "
            f"checkout at {project}: it {'; '.join(found)}. Pass the matrix `{how}` printed for "
            f"these jobs on this commit."]
