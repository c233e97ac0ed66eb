"""Per stack: what each capability's tests showed, the stack's verdict, and the results file.

A stack promises its capabilities in the manifest; skipping tests where a capability is missing
is only half of dispatch. The other half is here: a capability the stack declares on which no
test requiring it passed is *unproven*. By default (``warn``) that is reported, one line per
capability in the summary, and the run passes when its tests pass: a user's own suite need not
prove every capability the catalogue promises. ``--stack-unproven=auto`` (this project's own
suite sets it in its ini) fails a whole run on it and only reports it in a run that picked some
tests (``-k``, a file, a node id); ``--stack-unproven=fail`` always fails.
Either way the run's scope is recorded exactly as selected (:mod:`pytest_stacks.ci.scope`):
the policy decides whether this run fails, never what the results file says was run.

The controller (or the single process) sees every report, so the outcomes are gathered here
and written once, as the ``pytest-stacks/results`` document that ``pytest-stacks report``
merges across matrix jobs.
"""

from __future__ import annotations

import os
from datetime import UTC, datetime
from importlib import metadata
from pathlib import Path
from typing import Literal, cast

import pytest

from pytest_stacks.ci import binding
from pytest_stacks.ci.lanes import build_inputs
from pytest_stacks.ci.scope import DESELECTED_BY_PLUGIN, ENDED_EARLY, Scope, normalised_path
from pytest_stacks.errors import StacksError
from pytest_stacks.evidence import EvidenceError
from pytest_stacks.manifest import Stack
from pytest_stacks.plugin.state import State, choice_setting, setting, state
from pytest_stacks.plugin.tally import Binding, Outcomes, unproven
from pytest_stacks.providers import driver_note
from pytest_stacks.verdicts import environment as ci_environment
from pytest_stacks.verdicts.results import (
    CaseResult,
    InfraRetry,
    Outcome,
    ResultsDoc,
    ResultsError,
    RunInfo,
    StackResult,
    dump,
    stack_verdict,
)

DEFAULT_RESULTS = ".pytest-stacks/results.json"
#: The plan a run belongs to (its rows' ``plan``) and the rows it answers: a CI job's one
#: stack (its row's ``stack``), or several comma-separated; unset, the stacks it selected.
#: Read and checked by :mod:`pytest_stacks.verdicts.environment`.
CI_LANE_ENV = ci_environment.CI_LANE_ENV
CI_STACK_ENV = ci_environment.CI_STACK_ENV
CI_PLAN_ENV = ci_environment.CI_PLAN_ENV
#: Narrowing options a plan cannot name (pytest's dest, the flag as users type it).
_OTHER_NARROWING = (("deselect", "--deselect"), ("ignore", "--ignore"),
                    ("ignore_glob", "--ignore-glob"), ("lf", "--last-failed"),
                    ("stepwise", "--stepwise"), ("maxfail", "--maxfail"),
                    # These change which configuration, conftests and files pytest reads.
                    ("inifilename", "-c"), ("rootdir", "--rootdir"),
                    ("confcutdir", "--confcutdir"), ("noconftest", "--noconftest"),
                    ("pyargs", "--pyargs"),
                    ("continue_on_collection_errors", "--continue-on-collection-errors"))
#: The ini keys that decide what pytest collects: ``-o`` (or PYTEST_ADDOPTS) overriding one
#: narrows the suite as surely as a path does, and no plan can name it.
_COLLECTION_INI = ("testpaths", "python_files", "python_classes", "python_functions",
                   "norecursedirs", "collect_imported_tests", "confcutdir",
                   "consider_namespace_packages", "pythonpath", "addopts")


def required(item: pytest.Item) -> tuple[str, ...]:
    """The capabilities a test requires (its ``requires`` markers, in order, once each)."""
    names = [str(a) for mark in item.iter_markers("requires") for a in mark.args]
    return tuple(dict.fromkeys(names))


def run_scope(config: pytest.Config) -> Scope:
    """The tests this run selected, exactly as selected: path arguments relative to the
    project root, ``-k``, ``-m`` and every other narrowing option."""
    paths: tuple[str, ...] = ()
    if config.args_source == pytest.Config.ArgsSource.ARGS:
        paths = tuple(_relative(config.rootpath, config.invocation_params.dir, a)
                      for a in config.args)
    elif config.args_source == pytest.Config.ArgsSource.INVOCATION_DIR:
        # ``cd tests/contract && pytest``: pytest collects the directory it was started in,
        # not the ini's testpaths, so that directory is what the run selected.
        here = _relative(config.rootpath, config.invocation_params.dir, ".")
        if here != "." or config.getini("testpaths"):
            paths = (here,)
    other = [f"-o {o}" for o in config.getoption("override_ini", None) or ()
             if o.partition("=")[0].strip() in _COLLECTION_INI]
    for dest, flag in _OTHER_NARROWING:
        value = config.getoption(dest, None)
        if not value:
            continue
        values = value if isinstance(value, list) else [value]
        other += [flag if v is True else f"{flag}={v}" for v in values]
    return Scope(paths, str(config.getoption("keyword", "") or ""),
                 str(config.getoption("markexpr", "") or ""), tuple(other))


def partial_reasons(config: pytest.Config, exit_status: int) -> list[str]:
    """What made this run less than the whole suite; empty for a whole run.

    The whole suite is what a bare ``pytest`` runs: no narrowing option, and either no paths
    or exactly the ini ``testpaths``. An interrupted or broken run is never whole. Whatever
    ``--stack-unproven`` says, these are recorded: the policy decides only whether an unproven
    capability fails the run.
    """
    scope = run_scope(config)
    reasons = [f"-k {scope.keyword!r}"] if scope.keyword else []
    reasons += [f"-m {scope.markexpr!r}"] if scope.markexpr else []
    reasons += list(scope.other)
    deselected = state(config).deselected
    if deselected and not scope.narrowed_by_options:
        reasons.append(f"{deselected} test(s) {DESELECTED_BY_PLUGIN}")
    if scope.paths:
        whole = {_relative(config.rootpath, config.rootpath, str(p))
                 for p in config.getini("testpaths")}
        if set(map(normalised_path, scope.paths)) != set(map(normalised_path, whole)):
            reasons.append("only " + " ".join(scope.paths))
    if exit_status in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.INTERNAL_ERROR):
        reasons.append(f"{ENDED_EARLY} (exit {int(exit_status)})")
    return reasons


def _relative(root: Path, base: Path, arg: str) -> str:
    """A path argument relative to the project root (absolute when outside it), node id part
    kept (so a node id never equals its file)."""
    path, sep, rest = arg.partition("::")
    where = (base / path).resolve()
    try:
        shown = where.relative_to(root.resolve()).as_posix() or "."
    except ValueError:
        shown = where.as_posix()
    return normalised_path(shown) + sep + rest


UNPROVEN_POLICIES = ("warn", "auto", "fail")  # the first is the default


def unproven_policy(config: pytest.Config) -> str:
    return choice_setting(config, "stack_unproven", "stacks_unproven", UNPROVEN_POLICIES)


def binding_now(config: pytest.Config, current: State) -> Binding:
    assert current.manifest is not None
    manifest = current.manifest
    return Binding(binding.commit(config.rootpath), binding.manifest_digest(manifest),
                   binding.code_digest(config.rootpath),
                   {s.name: binding.inputs_digest(manifest, s) for s in current.selected})


def planned_rows(current: State) -> tuple[tuple[str, ...], str] | None:
    """The rows of a plan this run answers, as its job says (None without a plan)."""
    plan = ci_environment.ci_plan(os.environ)
    if not plan:
        return None
    said = ci_environment.ci_stacks(os.environ)
    return tuple(dict.fromkeys(said or [s.name for s in current.selected])), plan


def stack_result(current: State, stack: Stack, outcomes: Outcomes,
                 bound: Binding) -> StackResult:
    """One stack's part of the results, in the model the report reads."""
    assert current.manifest is not None
    table = outcomes.capabilities(stack, list(current.manifest.capabilities))
    cases = list(outcomes.cases.get(stack.name, {}).values())
    record = current.records.get(stack.name)
    infra = current.infra.get(stack.name)
    lane = current.pool.ctx.lane if current.pool is not None else "pinned"
    own = current.problems_of(stack.name)
    problems = [p.text for p in own]
    problems += [line for line in unproven(stack, table) if line not in problems]
    teardown = [p.text for p in own if p.kind == "teardown"]
    if infra is None and teardown:
        infra = teardown[0]  # a stack whose teardown was not proven is not a pass anywhere
    return StackResult(
        name=stack.name, backend=stack.backend, version=stack.version,
        provider=stack.provider, transport=stack.transport,
        configuration=stack.configuration, role=stack.role, fake=stack.is_fake,
        pins=build_inputs(stack, "canary" if lane == "canary" else "pr"),
        observed_daemon=record.observed_version if record else "",
        observed_client=record.client_version if record else "",
        startup_s=round(record.startup_s, 2) if record else None,
        verdict=stack_verdict([c.final() for c in cases], [c.status for c in table.values()],
                              infra),
        infra=infra, problems=tuple(problems), capabilities=table,
        tests=tuple(CaseResult(c.nodeid, cast(Outcome, c.final()), round(c.duration_s, 3),
                               c.requires, tuple(c.identities), c.message, c.retries)
                    for c in cases),
        infra_retries=tuple(InfraRetry(attempt, fault, tuple(dict.fromkeys(hit))) for
                            attempt, (fault, hit) in
                            sorted(outcomes.retries.get(stack.name, {}).items())),
        parity="; ".join(f"{c.parity} ({c.final()})" for c in cases if c.parity),
        driver=driver_note(stack), inputs_digest=bound.inputs[stack.name])


def results(config: pytest.Config, current: State, outcomes: Outcomes, exit_status: int,
            source: str) -> ResultsDoc:
    """The run's results, in the model the report reads (:mod:`pytest_stacks.verdicts`)."""
    assert current.manifest is not None and current.pool is not None
    reasons = partial_reasons(config, exit_status)
    try:
        version = metadata.version("pytest-stacks")
    except metadata.PackageNotFoundError:  # pragma: no cover - run from a source tree
        version = "0+unknown"
    lane = cast(Literal["pinned", "canary"], current.pool.ctx.lane)
    bound = current.binding or binding_now(config, current)
    run = RunInfo(run_id=current.pool.ctx.run_id, lane=lane,
                  ci_lane=ci_environment.ci_lane(os.environ), started=outcomes.started,
                  finished=datetime.now(UTC).isoformat(), manifest=str(current.manifest.path),
                  partial=bool(reasons), partial_reasons=tuple(reasons),
                  scope=run_scope(config), pytest_exit=int(exit_status),
                  pytest_stacks_version=version,
                  collected=tuple(sorted(current.collected or ())),
                  deselected=current.deselected, commit=bound.commit,
                  manifest_digest=bound.manifest_digest, code_digest=bound.code_digest,
                  plan=planned_rows(current))
    return ResultsDoc(source, run, tuple(stack_result(current, s, outcomes, bound)
                                         for s in current.selected))


def results_path(config: pytest.Config) -> Path | None:
    """``--stack-results``, else the ini value, else the default; '' (or 'none') turns it
    off."""
    raw = setting(config, "stack_results", "stacks_results", DEFAULT_RESULTS)
    if str(raw).strip().lower() in ("", "none"):
        return None
    return Path(config.rootpath, str(raw))


def write(config: pytest.Config, document: ResultsDoc) -> tuple[Path | None, str]:
    """Write the results file; (path, "") or (None, why not)."""
    path = results_path(config)
    if path is None:
        return None, ""
    try:
        dump(document, path)  # its folder made, the file written whole, or why not
    except EvidenceError as exc:
        return None, str(exc)
    except ResultsError as exc:
        said = str(exc)
        return None, said if said.startswith("cannot write") else \
            f"cannot write the results file {path}: {said}"
    except (StacksError, OSError) as exc:
        return None, f"cannot write the results file {path}: {exc}"
    return path, ""

