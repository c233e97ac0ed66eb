"""The support window per backend as one Markdown table (the README embeds it): per version,
its role and every stack of it with its transport and configuration; then, per component a
backend's stacks pin beside it (the MPI Operator's Kubernetes), the same for that component."""

from __future__ import annotations

from collections.abc import Mapping

from pytest_stacks.manifest import LANES, Manifest, Stack, Window
from pytest_stacks.versions import in_series, release, role


def window_markdown(manifest: Manifest) -> str:
    """The support window per backend as one Markdown table (oldest first per backend)."""
    lines = ["| Backend | Window (anchor .. leading edge) | Version | Role | Stacks | Lanes |",
             "|---|---|---|---|---|---|"]
    for backend in manifest.backends.values():
        real = [s for s in manifest.stacks if s.backend == backend.name and not s.is_fake]
        lines += _rows(backend.name, backend.window, {s.name: s.version for s in real}, real)
        for component, window in backend.components.items():
            versions = {s.name: s.components[component] for s in real if component in s.components}
            lines += _rows(f"{backend.name} · {component}", window, versions, real)
    return "\n".join(lines) + "\n"


def _rows(label: str, window: Window, versions: Mapping[str, str],
          stacks: list[Stack]) -> list[str]:
    """One row per version of the window's axis (``versions``: per stack name), and one per
    edge no stack stands at."""
    edges = f"{window.anchor} .. {window.leading_edge}"
    by_version: dict[str, list[Stack]] = {}
    for stack in stacks:
        if stack.name in versions:
            by_version.setdefault(versions[stack.name], []).append(stack)
    entries: list[tuple[tuple[int, ...], str, str, str, str]] = []
    for version, at in by_version.items():
        # Transport and configuration are dimensions of the matrix: each stack says its.
        names = ", ".join(f"`{s.name}` ({s.transport}, {s.configuration})" for s in at)
        lanes = ", ".join(lane for lane in LANES if any(s.in_lane(lane) for s in at))
        entries.append((release(version), version,
                        role(version, window.anchor, window.leading_edge), names, lanes or "-"))
    for name, edge in (("anchor", window.anchor), ("leading-edge", window.leading_edge)):
        if not any(in_series(version, edge) for version in by_version):
            entries.append((release(edge), edge, name, "(no stack)", "-"))
    return [f"| {label} | {edges} | {version} | {role_} | {names} | {lanes} |"
            for _, version, role_, names, lanes in sorted(entries, key=lambda e: e[0])]
