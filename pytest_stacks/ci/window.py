"""The support window per backend as one Markdown table (the README embeds it): per version,
its role and every stack of it with its transport and configuration."""

from __future__ import annotations

from pytest_stacks.manifest import LANES, Manifest, Stack
from pytest_stacks.versions import in_series, release


def window_markdown(manifest: Manifest) -> str:
    """The support window per backend as one Markdown table (oldest first per backend)."""
    lines = ["| Backend | Window (anchor .. leading edge) | Version | Role | Stacks | Lanes |",
             "|---|---|---|---|---|---|"]
    for backend in manifest.backends.values():
        window = f"{backend.window.anchor} .. {backend.window.leading_edge}"
        real = [s for s in manifest.stacks if s.backend == backend.name and not s.is_fake]
        by_version: dict[str, list[Stack]] = {}
        for stack in real:
            by_version.setdefault(stack.version, []).append(stack)
        entries: list[tuple[tuple[int, ...], str, str, str, str]] = []
        for version, stacks in by_version.items():
            # Transport and configuration are dimensions of the matrix: each stack says its.
            names = ", ".join(f"`{s.name}` ({s.transport}, {s.configuration})" for s in stacks)
            lanes = ", ".join(lane for lane in LANES if any(s.in_lane(lane) for s in stacks))
            entries.append((release(version), version, stacks[0].role, names, lanes or "-"))
        for role, edge in (("anchor", backend.window.anchor),
                           ("leading-edge", backend.window.leading_edge)):
            if not any(in_series(s.version, edge) for s in real):
                entries.append((release(edge), edge, role, "(no stack)", "-"))
        for _, version, role, names, lanes in sorted(entries, key=lambda e: e[0]):
            lines.append(f"| {backend.name} | {window} | {version} | {role} | {names} | {lanes} |")
    return "\n".join(lines) + "\n"

