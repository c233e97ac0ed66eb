"""Whether a results file answers the row it fills: one run of its own, on the commit, manifest,
code and stack inputs of the checkout the report runs in, as the job of that row of that plan,
with tests that exist there and ran on that stack.

The merge calls :func:`stack_problems` for every reported stack and :func:`run_id_problems`
once; each problem names the JSON path of the field that does not match and says how to get a
file that does (re-run the stack's tests on this commit). A copy of a fake's file relabelled
as a real stack, or a file written from the manifest alone, fails here by name.
"""

from __future__ import annotations

import re
import stat
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_stacks.ci import binding
from pytest_stacks.manifest import Manifest, Stack
from pytest_stacks.verdicts.results import ResultsDoc, StackResult

SHOWN = 3


#: A test module larger than this is no test module of a checkout (8 MiB).
MAX_TEST_FILE = 8 * 1024 * 1024

@dataclass(frozen=True)
class Checkout:
    """What results are bound to: the project the report runs in (the jobs' checkout) and its
    manifest, digested once per report."""

    project: Path
    commit: str
    manifest_digest: str
    code_digest: str
    inputs: Mapping[str, str]
    _texts: dict[str, str | None] = field(default_factory=dict, compare=False)

    @classmethod
    def of(cls, manifest: Manifest, project: Path) -> Checkout:
        return cls(project, binding.commit(project), binding.manifest_digest(manifest),
                   binding.code_digest(project),
                   {s.name: binding.inputs_digest(manifest, s) for s in manifest.stacks})

    def text(self, path: str) -> str | None:
        """The file at ``path`` (relative to the project) if it lies in it and is a regular
        test-sized file; None if not (a results file names the path: a FIFO would block the
        report, a pack file fill its memory)."""
        if path not in self._texts:
            self._texts[path] = None
            try:
                target = (self.project / path).resolve()
                target.relative_to(self.project.resolve())
                info = target.stat()
                if stat.S_ISREG(info.st_mode) and info.st_size <= MAX_TEST_FILE:
                    self._texts[path] = target.read_text(encoding="utf-8", errors="replace")
            except (OSError, ValueError):
                pass
        return self._texts[path]


def rerun(stack: str) -> str:
    return f"re-run pytest --stack={stack} on this commit"


def run_id_problems(docs: Sequence[ResultsDoc]) -> list[str]:
    """Every file whose run id an earlier file already has: two files of one run are a copy."""
    first: dict[str, ResultsDoc] = {}
    found = []
    for doc in docs:
        seen = first.setdefault(doc.run.run_id, doc)
        if seen is not doc:
            names = ",".join(s.name for s in doc.stacks) or "NAME"
            found.append(f"{doc.source}: $.run.run_id: {doc.run.run_id!r} is also the run id of "
                         f"{seen.source}; every run writes one file under a fresh run id, so "
                         f"one of them is a copy: {rerun(names)}.")
    return found


def stack_problems(doc: ResultsDoc, stack: StackResult, index: int, checkout: Checkout,
                   known: Stack | None, row: Mapping[str, Any] | None) -> list[str]:
    """What ties this stack's results to something other than this checkout (and, given the
    matrix ``row`` it fills, to another row or plan)."""
    fix = rerun(stack.name)
    found = _checkout_problems(doc, checkout, fix)
    want = checkout.inputs.get(stack.name)
    if known is not None and want is not None and stack.inputs_digest != want:
        found.append(f"$.stacks[{index}].inputs_digest differs from this checkout's (the "
                     f"stack's manifest entry with its options, and its stack folder): the run "
                     f"used other inputs; {fix}")
    if row is not None:
        found += _plan_problems(doc, stack.name, row)
    found += _test_problems(doc, stack, index, checkout)
    return found


def _checkout_problems(doc: ResultsDoc, checkout: Checkout, fix: str) -> list[str]:
    run, found = doc.run, []
    if run.commit != checkout.commit:
        if checkout.commit == binding.UNKNOWN:
            found.append(f"$.run.commit is {run.commit!r}, but {checkout.project} is not a git "
                         f"checkout, so it cannot be checked: report in the checkout the jobs "
                         f"tested (--project)")
        else:
            found.append(f"$.run.commit is {run.commit!r}, but the checkout at "
                         f"{checkout.project} is {checkout.commit!r}; {fix}")
    if run.manifest_digest != checkout.manifest_digest:
        found.append(f"$.run.manifest_digest differs from this manifest's: the run read "
                     f"another manifest; {fix}")
    if run.code_digest != checkout.code_digest:
        found.append(f"$.run.code_digest differs from the code at {checkout.project} (the "
                     f"pytest_stacks package, the project's Python files and pytest settings): "
                     f"the run tested other code; {fix}")
    return found


def _plan_problems(doc: ResultsDoc, name: str, row: Mapping[str, Any]) -> list[str]:
    lane, plan = str(row.get("lane", "")), str(row.get("plan", ""))
    how = (f"run it as the row's job does: PYTEST_STACKS_CI_LANE={lane} "
           f"PYTEST_STACKS_CI_STACK={name} PYTEST_STACKS_CI_PLAN={plan} pytest --stack={name}")
    if doc.run.plan is None:
        return [f"$.run.plan is null: the run answers no row of the {lane} lane's plan; {how}"]
    found = []
    stacks, digest = doc.run.plan
    if name not in stacks:
        found.append(f"$.run.plan.stacks is {', '.join(stacks)}: the file answers those rows, "
                     f"not this one ({name}); {how}")
    if digest != plan:
        found.append(f"$.run.plan.digest is {digest[:12]}..., but this row's plan is "
                     f"{plan[:12]}...: the run belongs to another plan of the lane; {how}")
    if doc.run.ci_lane is None:
        found.append(f"$.run.ci_lane is null, but the row is the {lane} lane's; {how}")
    return found


_NODE = re.compile(r"^(?P<path>[^:]+)(?:::(?P<names>.*?))?(?:\[(?P<params>.*)\])?$")


def names_stack(nodeid: str, stack: str) -> bool:
    """Whether ``nodeid`` is parametrised with ``stack`` (the plugin's id for it)."""
    params = _NODE.match(nodeid)
    text = (params.group("params") if params else None) or ""
    return re.search(rf"(?:^|-){re.escape(stack)}(?:-|$)", text) is not None


def owner(nodeid: str, names: Sequence[str]) -> str | None:
    """Which of ``names`` the test is parametrised with; the longest when several match
    (``fake-slurm-20.11`` also ends in ``slurm-20.11``)."""
    matching = [n for n in names if names_stack(nodeid, n)]
    return max(matching, key=len) if matching else None


def _exists(nodeid: str, checkout: Checkout) -> bool:
    """Whether the checkout has the test: its file, and its function's name in it."""
    parts = _NODE.match(nodeid)
    if parts is None:
        return False
    text = checkout.text(parts.group("path"))
    if text is None:
        return False
    name = (parts.group("names") or "").split("::")[-1]
    return not name or not parts.group("path").endswith(".py") \
        or re.search(rf"\b{re.escape(name)}\b", text) is not None


def _some(ids: Sequence[str]) -> str:
    more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return ", ".join(repr(i) for i in ids[:SHOWN]) + more


def _test_problems(doc: ResultsDoc, stack: StackResult, index: int,
                   checkout: Checkout) -> list[str]:
    """The stack's tests must be parametrised with it, exist in the checkout, and cover every
    test the run collected for it."""
    fix, found = rerun(stack.name), []
    ids = [t.nodeid for t in stack.tests]
    names = [stack.name, *(s.name for s in doc.stacks)]
    foreign = [i for i in ids if owner(i, names) != stack.name]
    if foreign:
        found.append(f"$.stacks[{index}].tests: {len(foreign)} test(s) are not parametrised "
                     f"with stack {stack.name} ({_some(foreign)}): another stack's results; "
                     f"{fix}")
    missing = [i for i in ids if not _exists(i, checkout)]
    if missing:
        found.append(f"$.stacks[{index}].tests: {len(missing)} test(s) do not exist in the "
                     f"checkout at {checkout.project} ({_some(missing)}); {fix}")
    uncovered = sorted({i for i in doc.run.collected if owner(i, names) == stack.name}
                       - set(ids))
    if uncovered:
        found.append(f"$.run.collected: {len(uncovered)} test(s) collected for stack "
                     f"{stack.name} have no outcome among its tests ({_some(uncovered)}); "
                     f"{fix}")
    return found
