"""CI lanes -> GitHub Actions matrix rows: pure functions over the typed manifest.

A row is one stack (one version in one configuration) with everything its job needs. Fake
stacks never become rows: they run in ``ci.yml``'s fake lane. The pr lane must hold each
backend's leading edge and anchor; an empty lane is reported, never emitted as an (invalid)
empty matrix.
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from pathlib import Path
from typing import Any

from pytest_stacks.ci import binding, scope
from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import LANES, Manifest, Stack
from pytest_stacks.versions import in_series

RUNS_ON = "ubuntu-latest"
MAX_JOBS = 256  # GitHub Actions' limit of jobs per matrix
TEST_BUDGET_MINUTES = 20  # on top of the stack's own build/up/ready timeouts
MAX_TIMEOUT_MINUTES = 360  # GitHub-hosted runners' job limit
EMPTY_LANE_EXIT = 3
#: The row key of a ``--runnable-here`` plan: what the host offered, which picked its rows.
RUNNABLE_ON = "runnable_on"


class LaneError(StacksError):
    """A lane cannot be turned into a matrix (e.g. the pr lane misses an anchor)."""


class EmptyLaneError(LaneError):
    """The lane has no stacks: reported, never emitted as an (invalid) empty matrix."""


def lane_stacks(manifest: Manifest, lane: str) -> list[Stack]:
    """The non-fake stacks of ``lane``, in manifest order."""
    if lane not in LANES:
        raise LaneError(f"unknown lane {lane!r}: expected one of {', '.join(LANES)}")
    return [s for s in manifest.stacks if not s.is_fake and s.in_lane(lane)]



def pr_lane_problems(manifest: Manifest) -> list[str]:
    """Per backend with real stacks, the pr lane must hold its leading edge and its anchor,
    and those of each component's window (the MPI Operator's Kubernetes).

    Only the windows the manifest's own file writes: a project that uses a few catalogue
    stacks inherits the catalogue's windows to place its stacks in (roles, the window
    table), not to be held to edges it never chose; writing ``backends.<name>.window`` in
    its file (to widen it) makes that window its own, and its pr lane is held to it."""
    problems = []
    in_pr = {s.name for s in lane_stacks(manifest, "pr")}
    for backend in manifest.backends.values():
        real = [s for s in manifest.stacks if s.backend == backend.name and not s.is_fake]
        if not real:
            continue
        windows = [("", "window", backend.window, {s.name: s.version for s in real})]
        windows += [(f"{component} ", f"components.{component}", window,
                     {s.name: s.components[component] for s in real
                      if component in s.components})
                    for component, window in backend.components.items()]
        for label, field, window, versions in windows:
            if not manifest.own_window(f"{backend.name}.{field}"):
                continue
            for what, edge in (("leading edge", window.leading_edge),
                               ("anchor", window.anchor)):
                at_edge = [name for name, version in versions.items()
                           if in_series(version, edge)]
                if not at_edge:
                    problems.append(
                        f"backend {backend.name!r} has no stack at its {label}{what} {edge} "
                        f"(window {window.anchor}..{window.leading_edge}): add one, or move "
                        f"backends.{backend.name}.{field}.")
                elif not in_pr.intersection(at_edge):
                    problems.append(
                        f"the pr lane misses the {label}{what} {edge} of backend "
                        f"{backend.name!r}: add 'pr' to the lanes of one of: "
                        f"{', '.join(at_edge)}.")
    return problems


def build_inputs(stack: Stack, lane: str = "pr") -> dict[str, str]:
    """What goes into bringing the stack up: pins, with the canary's floats in that lane."""
    inputs: dict[str, str] = {"version": stack.version}
    canary = lane == "canary" and stack.canary is not None
    if stack.base_image is not None:
        inputs["base_image"] = stack.base_image.registry_reference
    if stack.compose is not None:
        args = dict(stack.compose.build_args)
        if canary and stack.canary is not None:
            args.update(stack.canary.build_args)
        inputs.update({f"build_arg.{k}": v for k, v in sorted(args.items())})
    if stack.image is not None:
        tag = stack.canary.image_tag if canary and stack.canary and stack.canary.image_tag else None
        inputs["image"] = (f"{stack.image.name}:{tag}" if tag else stack.image.reference)
    if stack.kind is not None:
        inputs["kind_version"] = stack.kind.kind_version
        inputs["node_image"] = stack.kind.node_reference
        inputs["operator_version"] = stack.kind.operator_version
        if stack.kind.worker_image is not None:
            inputs["worker_image"] = stack.kind.worker_image.reference
    return inputs


def _timeout_minutes(stack: Stack) -> int:
    t = stack.timeouts
    minutes = math.ceil((t.build + t.up + t.ready) / 60) + TEST_BUDGET_MINUTES
    return max(10, min(MAX_TIMEOUT_MINUTES, minutes))


def _artifact_name(lane: str, stack: Stack) -> str:
    safe = re.sub(r"[^A-Za-z0-9._-]+", "-", stack.name).strip("-")
    return f"stack-logs-{lane}-{safe}"


def row(stack: Stack, lane: str, tests: str = "") -> dict[str, Any]:
    """One matrix row: a job's whole description. ``tests``: what pytest must run on the
    stack (paths, -k, -m; empty: the project's default tests); a job's results stand in the
    table only for exactly this scope or the whole suite."""
    inputs = build_inputs(stack, lane)
    pytest_args = f"--stack={stack.name}"
    if lane == "canary":
        pytest_args += " --stack-lane=canary"
    fingerprint = hashlib.sha256(json.dumps(inputs, sort_keys=True).encode()).hexdigest()[:12]
    return {
        "stack": stack.name,
        "backend": stack.backend,
        "version": stack.version,
        "role": stack.role,
        "components": {c: {"version": v, "role": stack.component_roles.get(c, "")}
                       for c, v in stack.components.items()},
        "provider": stack.provider,
        "transport": stack.transport,
        "configuration": stack.configuration,
        "lane": lane,
        "runner_needs": list(stack.requires),
        "runs_on": RUNS_ON,
        "pytest_args": pytest_args,
        "tests": tests,
        "artifact": _artifact_name(lane, stack),
        "timeout_minutes": _timeout_minutes(stack),
        "inputs": inputs,
        "fingerprint": fingerprint,
    }


def lane_rows(manifest: Manifest, lane: str, tests: str = "",
              host: frozenset[str] | None = None) -> list[dict[str, Any]]:
    """The matrix rows of ``lane``.

    pr: the stacks marked ``pr`` (checked to hold each backend's leading edge and anchor);
    full: the stacks marked ``full``; canary: every stack with a ``canary:`` block.
    ``tests``: the scope every job runs (checked: paths, -k, -m only). ``host``: what a
    machine offers (docker, go, registry, kind); when given, only the stacks whose
    ``requires`` it meets. Raises :class:`LaneError` for an invalid pr lane, a scope a plan
    cannot name, or more rows than GitHub allows.
    """
    stacks = lane_stacks(manifest, lane)
    if lane == "pr":
        problems = pr_lane_problems(manifest)
        if problems:
            raise LaneError("invalid pr lane: " + " ".join(problems))
    try:
        scope.planned(tests)
    except scope.ScopeError as exc:
        raise LaneError(str(exc)) from None
    if host is not None:
        stacks = [s for s in stacks if set(s.requires) <= host]
    rows = [row(s, lane, tests) for s in stacks]
    if len(rows) > MAX_JOBS:
        raise LaneError(f"the {lane} lane has {len(rows)} stacks; a GitHub Actions matrix holds "
                        f"at most {MAX_JOBS} jobs. Split the lane.")
    artifacts = [r["artifact"] for r in rows]
    if len(set(artifacts)) != len(artifacts):  # pragma: no cover - names are unique
        raise LaneError(f"artifact names collide in the {lane} lane: {artifacts}")
    return rows


def matrix(manifest: Manifest, lane: str, tests: str = "",
           host: frozenset[str] | None = None,
           project: Path | None = None) -> dict[str, list[dict[str, Any]]]:
    """``{"include": rows}``, each row bound to the checkout at ``project`` (default: the
    current directory; :mod:`.binding`); raises :class:`EmptyLaneError` for an empty lane."""
    rows = lane_rows(manifest, lane, tests, host)
    if not rows:
        why = ("no stack declares a 'canary:' block" if lane == "canary" else
               f"no real stack lists '{lane}' in its lanes")
        if host is not None and lane_stacks(manifest, lane):
            why = f"this host offers only {', '.join(sorted(host)) or 'nothing'} of what its " \
                  f"stacks require"
        raise EmptyLaneError(f"the {lane} lane is empty ({why}); there is nothing to run")
    if host is not None:  # a subset of the lane, which says which: a report recomputes it
        rows = [{**r, RUNNABLE_ON: sorted(host)} for r in rows]
    return {"include": binding.bind(rows, manifest, project or Path.cwd())}

