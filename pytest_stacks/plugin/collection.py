"""Collection: parametrise tests over the selected stacks, refuse marker typos, and dispatch
by capability, backend and version. Registered only when a manifest is in use."""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

from pytest_stacks import registry
from pytest_stacks.manifest import PROVIDERS, Manifest, Stack
from pytest_stacks.plugin.state import OWN_DESELECTION, item_stack, state
from pytest_stacks.selection import (
    missing_capabilities,
    parse_specifier,
    unknown_capabilities,
    version_matches,
)


def _parametrizes_stack_itself(metafunc: pytest.Metafunc) -> bool:
    for mark in metafunc.definition.iter_markers("parametrize"):
        argnames = mark.args[0] if mark.args else mark.kwargs.get("argnames", "")
        if isinstance(argnames, str):
            argnames = [a.strip() for a in argnames.split(",")]
        if "stack" in argnames:
            return True
    return False


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    if "stack" not in metafunc.fixturenames or _parametrizes_stack_itself(metafunc):
        return  # a test that parametrizes 'stack' itself: its values win
    current = state(metafunc.config)
    assert current.manifest is not None
    if not current.selected:
        pytest.fail(
            f"pytest-stacks: {metafunc.function.__name__} needs a stack but none is selected: "
            f"the manifest {current.manifest.path} has no fake stacks to run by default. Pass "
            f"--stack NAME (known: {', '.join(current.manifest.names())}).", pytrace=False)
    metafunc.parametrize("stack", current.selected, ids=[s.name for s in current.selected],
                         indirect=True, scope="session")


@pytest.hookimpl(wrapper=True)
def pytest_pycollect_makeitem(collector: pytest.Collector, name: str,
                              obj: object) -> Generator[None, Any, Any]:
    """A capability that does not exist is a collection error: a typo must not skip a test."""
    result = yield
    manifest = state(collector.config).manifest
    if manifest is None or result is None:
        return result
    for item in result if isinstance(result, list) else [result]:
        if isinstance(item, pytest.Function):
            problem = _marker_problem(item, manifest)
            if problem:
                raise collector.CollectError(f"{MARKER_ERROR}{item.nodeid}: {problem}")
    return result


#: How a marker's collection error starts, so the session's end can tell it from others.
MARKER_ERROR = "pytest-stacks marker error: "


@pytest.hookimpl(trylast=True)
def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    """A marker typo is a usage error (exit 4, as an unknown --stack is), not the
    "interrupted" (2) a collection error gets (or, under xdist, which runs on past it, 1).
    Read from the terminal's collection errors, which under xdist also hold the workers'."""
    if exitstatus not in (pytest.ExitCode.INTERRUPTED, pytest.ExitCode.TESTS_FAILED):
        return
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    errors = [r for r in getattr(reporter, "stats", {}).get("error", [])
              if isinstance(r, pytest.CollectReport)]
    if any(MARKER_ERROR in str(r.longrepr) for r in errors):
        session.exitstatus = pytest.ExitCode.USAGE_ERROR


def _marker_problem(item: pytest.Function, manifest: Manifest) -> str | None:
    for mark in item.iter_markers("requires"):
        bad = unknown_capabilities(manifest, [str(a) for a in mark.args])
        if bad:
            text = "; ".join(f"{n!r}" + (f" (did you mean {c!r}?)" if c else "") for n, c in bad)
            return (f"@pytest.mark.requires names unknown capability {text}. "
                    f"Known: {', '.join(manifest.capabilities)}")
    for mark in item.iter_markers("for_backend"):
        unknown = [b for b in mark.args if b not in manifest.backends]
        if unknown or not mark.args:
            return (f"@pytest.mark.for_backend names unknown backend(s) {unknown or '(none)'}; "
                    f"known: {', '.join(manifest.backends)}")
    transports = sorted({t for s in registry.BACKENDS.values() for t in s.transports})
    for mark in item.iter_markers("for_transport"):
        unknown = [t for t in mark.args if t not in transports]
        if unknown or not mark.args:
            return (f"@pytest.mark.for_transport names unknown transport(s) "
                    f"{unknown or '(none)'}; known: {', '.join(transports)}")
    for mark in item.iter_markers("for_provider"):
        unknown = [p for p in mark.args if p not in PROVIDERS]
        if unknown or not mark.args:
            return (f"@pytest.mark.for_provider names unknown provider(s) "
                    f"{unknown or '(none)'}; known: {', '.join(PROVIDERS)}")
    for marker, example in (("client_version", ""), ("stack_version", ", e.g. "
                                                     "stack_version('>=24.11')")):
        for mark in item.iter_markers(marker):
            if len(mark.args) != 1:
                return f"@pytest.mark.{marker} takes one specifier string{example}"
            try:
                parse_specifier(str(mark.args[0]))
            except ValueError as exc:
                return str(exc)
    return None


def _about_another_stack(item: pytest.Item, stack: Stack | None) -> bool:
    """A test about some backends, transports or providers only (``for_backend``,
    ``for_transport``, ``for_provider``) on a stack of another: not a skip (it proves nothing
    there, and says nothing missing)."""
    if stack is None:
        return False
    for marker, value in (("for_backend", stack.backend), ("for_transport", stack.transport),
                          ("for_provider", stack.provider)):
        wanted = {str(a) for m in item.iter_markers(marker) for a in m.args}
        if wanted and value not in wanted:
            return True
    return False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    kept: list[pytest.Item] = []
    other_backend: list[pytest.Item] = []
    for item in items:
        if _about_another_stack(item, item_stack(item)):
            other_backend.append(item)
        else:
            kept.append(item)
    if other_backend:
        for item in other_backend:
            item.stash[OWN_DESELECTION] = True
        config.hook.pytest_deselected(items=other_backend)
        items[:] = kept
    for item in items:
        stack = item_stack(item)
        reason = _skip_reason(item, stack) if stack is not None else None
        if reason:
            item.add_marker(pytest.mark.skip(reason=reason))


def _skip_reason(item: pytest.Item, stack: Stack) -> str | None:
    required = [str(a) for mark in item.iter_markers("requires") for a in mark.args]
    missing = missing_capabilities(stack, required)
    if missing:
        return f"stack {stack.name} lacks capability: {', '.join(missing)}"
    for mark in item.iter_markers("stack_version"):
        backend, component = mark.kwargs.get("backend"), mark.kwargs.get("component")
        if not version_matches(stack, str(mark.args[0]), backend, component):
            where = f"{backend} " if backend else ""
            what = (f"{component} {stack.components.get(component, '(not pinned)')}"
                    if component else f"{stack.backend} {stack.version}")
            shape = f", component={component!r}" if component else ""
            return (f"stack {stack.name} ({what}) is outside "
                    f"stack_version({where}{mark.args[0]!r}{shape})")
    return None
