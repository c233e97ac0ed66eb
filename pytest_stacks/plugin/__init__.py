"""The pytest plugin (entry point ``pytest_stacks.plugin``): options, configure, and nothing
more until a project uses a manifest.

A project that merely installs pytest-stacks gets its options, markers and fixtures and pays
nothing else: the collection and reporting hooks (:mod:`.collection`, :mod:`.reporting`) are
registered only once the ini option or the command line asks for a manifest. Everything below
the plugin (manifest, providers, backends, lifecycle) knows nothing about pytest.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from pytest_stacks import extras, signals
from pytest_stacks.errors import ManifestError, StacksError, UnknownStackError
from pytest_stacks.lifecycle import StackPool, new_run_id, runs_root
from pytest_stacks.manifest import Manifest, Stack
from pytest_stacks.manifest import load as load_manifest
from pytest_stacks.manifest.catalogue import MANIFEST_NAME, default_manifest, is_stacks_manifest
from pytest_stacks.plugin import (
    allure,
    bringup,
    collection,
    fixtures,
    hookspecs,
    outcomes,
    release,
    reporting,
    retry,
    tally,
)
from pytest_stacks.plugin.state import STATE, State, setting
from pytest_stacks.plugin.xdist import XdistBridge, controller_run
from pytest_stacks.providers.base import RunContext
from pytest_stacks.selection import select
from pytest_stacks.verdicts import environment as ci_environment

MARKERS = (
    "requires(*capabilities): run only on stacks that offer every capability; skipped "
    "elsewhere, with the missing capabilities named.",
    "stack_version(specifier, backend=None, component=None): run only where the stack's "
    "version (or the pinned version of component, e.g. 'kubernetes') matches the PEP 440 "
    "specifier (and its backend, if given).",
    "for_backend(*backends): the test is about these backends only; it is deselected (not "
    "skipped) on stacks of other backends.",
    "for_transport(*transports): the test is about these transports only (ssh, local, "
    "bindings, kubernetes); it is deselected (not skipped) on stacks reached another way.",
    "for_provider(*providers): the test is about stacks this way brought up only (compose, "
    "kind, fake, existing); it is deselected (not skipped) elsewhere.",
    "client_version(specifier): run only where the client's observed version (e.g. the "
    "HTCondor bindings) matches the PEP 440 specifier.",
)


def pytest_addhooks(pluginmanager: pytest.PytestPluginManager) -> None:
    pluginmanager.add_hookspecs(hookspecs)


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("stacks", "pytest-stacks: run against pinned backend stacks")
    group.addoption("--stack", action="append", default=[], metavar="NAME",
                    help="Stack to run against (repeatable; shell globs such as 'slurm-*'). "
                         "Default, once pytest-stacks is on for the project (this option, "
                         "--stack-manifest, the 'stacks_manifest' ini option or a "
                         "pytest-stacks manifest.yaml in the rootdir): the manifest's fake "
                         "stacks; otherwise none, and tests that use a stack stop the run "
                         "saying how to turn it on.")
    group.addoption("--stack-manifest", default=None, metavar="PATH",
                    help="Manifest to read (default: the 'stacks_manifest' ini option; else "
                         "the rootdir's manifest.yaml if it is a pytest-stacks manifest; else "
                         "the stack catalogue shipped with pytest-stacks).")
    group.addoption("--stacks", action="store_true", default=False,
                    help="List the stacks of the manifest and exit.")
    group.addoption("--stack-lane", choices=("pinned", "canary"), default="pinned",
                    help="'canary' builds each stack from its floating reference; a version "
                         "other than the pin is then recorded, not an error.")
    group.addoption("--stack-parallel", type=int, default=None, metavar="N",
                    help="Bring up at most N stacks at once, ahead of their first test "
                         f"(default: the 'stacks_parallel' ini option, else "
                         f"{bringup.DEFAULT_PARALLEL}; 1: one after another).")
    group.addoption("--stack-group", action="store_true", default=False,
                    help="Under xdist (-n), send each stack's tests to one worker, so workers "
                         "run different stacks at once (pays when there are at least as many "
                         "stacks as workers).")
    group.addoption("--stack-unproven", choices=outcomes.UNPROVEN_POLICIES, default=None,
                    help="A declared capability no passing test required: 'warn' (default) "
                         "reports it in the summary and never fails; 'auto' fails a "
                         "whole-suite run and only reports it in a partial one (-k, -m, a "
                         "file or node id); 'fail' always fails. Default: the "
                         "'stacks_unproven' ini option, else warn.")
    group.addoption("--stack-results", default=None, metavar="PATH",
                    help="Where the run's results file (JSON, schema pytest-stacks/results v4) "
                         f"goes (default: the 'stacks_results' ini option, else "
                         f"{outcomes.DEFAULT_RESULTS}; 'none' writes none).")
    group.addoption("--stack-keep", choices=reporting.KEEP_POLICIES, default=None,
                    help="'on-failure': a stack on which a test failed or an infrastructure "
                         "error happened is left running for you to look at (how to reach it "
                         "is printed; `pytest-stacks down NAME` ends it). Default: the "
                         "'stacks_keep' ini option, else never.")
    group.addoption("--stack-release", choices=release.RELEASE_POLICIES, default=None,
                    help="'early' (default): each stack is brought down as soon as its last "
                         "test is over and every process is done with it, while the run goes "
                         "on; 'at-end': every stack stays up until the run ends. Default: the "
                         "'stacks_release' ini option, else early.")
    retry.add_option(group, parser)
    parser.addini("stacks_release", "early or at-end (--stack-release).", default="")
    parser.addini("stacks_unproven", "warn, auto or fail (--stack-unproven).", default="")
    parser.addini("stacks_keep", "never or on-failure (--stack-keep).", default="")
    parser.addini("stacks_results", "Path of the results file (--stack-results).", default="")
    parser.addini("stacks_parallel", "How many stacks come up at once (--stack-parallel).",
                  default="")
    parser.addini("stacks_manifest", "Path of the pytest-stacks manifest (relative to rootdir); "
                  "setting it turns pytest-stacks on for the project.", default="")


def _manifest_path(config: pytest.Config) -> Path:
    """--stack-manifest, else the ini option, else the project's own manifest.yaml if it is a
    pytest-stacks manifest, else the catalogue that ships with pytest-stacks."""
    given = setting(config, "stack_manifest", "stacks_manifest")
    if config.getoption("stack_manifest"):
        return Path(given).expanduser().absolute()
    if given:
        return Path(config.rootpath, given)
    try:
        return default_manifest(config.rootpath)
    except StacksError as exc:
        raise pytest.UsageError(f"pytest-stacks: {exc}") from None


def _manifest_requested(config: pytest.Config) -> bool:
    """Whether this project uses pytest-stacks at all.

    Installing the plugin must not change unrelated projects: a file that happens to be called
    manifest.yaml turns it on only when it is a pytest-stacks manifest (a top-level
    ``catalogue:`` or ``stacks:`` key) in the rootdir; else the project says so (ini option) or
    the command line does.
    """
    return bool(config.getoption("stack_manifest") or config.getini("stacks_manifest")
                or config.getoption("stack") or config.getoption("stacks")
                or is_stacks_manifest(config.rootpath / MANIFEST_NAME))


def _load(config: pytest.Config) -> tuple[Manifest, list[Stack]]:
    try:
        manifest = load_manifest(_manifest_path(config))
    except ManifestError as exc:
        raise pytest.UsageError("pytest-stacks: invalid manifest:\n" + str(exc)) from None
    try:
        selected = select(manifest, config.getoption("stack"))
    except UnknownStackError as exc:
        raise pytest.UsageError(f"pytest-stacks: {exc}") from None
    _require_extras(selected)
    return manifest, selected


def _require_extras(selected: list[Stack]) -> None:
    """A selected stack whose pytest-stacks extra is not installed is a usage error before
    anything starts, naming the stacks and the install line (a fakes-only install has none
    of the Docker, SSH, Kubernetes or HTCondor libraries)."""
    lacking: dict[str, list[str]] = {}
    for stack in selected:
        for extra in extras.missing(extras.needed(stack.provider, stack.transport)):
            lacking.setdefault(extra, []).append(stack.name)
    if lacking:
        said = "; ".join(f"the {extra!r} extra for {', '.join(names)}"
                         for extra, names in lacking.items())
        raise pytest.UsageError(f"pytest-stacks: not installed: {said}. Install it: "
                                f"{extras.install_line(sorted(lacking))}")


@pytest.hookimpl(tryfirst=True)
def pytest_configure(config: pytest.Config) -> None:
    for marker in MARKERS:
        config.addinivalue_line("markers", marker)
    config.pluginmanager.register(fixtures, "pytest-stacks-fixtures")
    retries = retry.retry_setting(config)  # bad input stops the run before anything starts
    if not _manifest_requested(config):
        config.stash[STATE] = State(None, [], explicit=False)
        return
    manifest, selected = _load(config)
    try:  # the CI job's word lands in the results file: checked by its rules, here
        ci_environment.check_all(os.environ)
    except StacksError as exc:
        raise pytest.UsageError(f"pytest-stacks: {exc}") from None
    current = State(manifest, selected, explicit=bool(config.getoption("stack")))
    config.stash[STATE] = current
    config.pluginmanager.register(collection, "pytest-stacks-collection")
    config.pluginmanager.register(reporting, "pytest-stacks-reporting")
    allure.register(config)
    if not selected:
        return
    shared = controller_run(config)
    if shared is not None:
        ctx, current.owner = shared, False
    else:
        try:
            root = runs_root()
        except (StacksError, OSError) as exc:
            raise pytest.UsageError(f"pytest-stacks: cannot use the run directory: {exc}") \
                from None
        run_id = new_run_id()
        ctx = RunContext.for_this_process(run_id, root / run_id, config.getoption("stack_lane"))
        # SIGTERM unwinds like Ctrl-C, so session teardown still runs and nothing leaks.
        current.previous_sigterm = signals.sigterm_as_interrupt()
    current.pool = StackPool(ctx)
    config.pluginmanager.register(reporting.Tracker(current), "pytest-stacks-tracker")
    if retries:
        config.pluginmanager.register(retry.InfraRetry(current, retries), "pytest-stacks-retry")
    if current.owner:
        outcomes.unproven_policy(config)  # a bad ini value is a usage error now, not at the end
        keeping = reporting.keep_policy(config) == "on-failure"
        current.outcomes = tally.Outcomes()
        # Under --dist each every worker runs every test: no stack is over before the end.
        if (release.release_policy(config) == "early"
                and getattr(config.option, "dist", "no") != "each"):
            config.pluginmanager.register(release.EarlyRelease(current, keeping),
                                          "pytest-stacks-release")
        config.pluginmanager.register(
            bringup.BringUp(current, bringup.parallel_setting(config)), "pytest-stacks-bringup")
    if config.pluginmanager.hasplugin("xdist"):
        config.pluginmanager.register(XdistBridge(current), "pytest-stacks-xdist")


def pytest_unconfigure(config: pytest.Config) -> None:
    """Put back the SIGTERM handler (pytester runs nest sessions in one process)."""
    current = config.stash.get(STATE, None)
    if current is not None and current.previous_sigterm is not None:
        signals.restore(current.previous_sigterm)


def pytest_cmdline_main(config: pytest.Config) -> int | None:
    """``pytest --stacks``: runs before configure, so it reads the manifest itself."""
    if not config.getoption("stacks"):
        return None
    from pytest_stacks.tables import stacks_table

    try:
        manifest = load_manifest(_manifest_path(config))
    except ManifestError as exc:
        print(f"pytest-stacks: invalid manifest:\n{exc}", file=sys.stderr)
        return int(pytest.ExitCode.USAGE_ERROR)
    print(stacks_table(manifest))
    return 0
