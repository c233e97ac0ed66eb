"""Human-readable views of the manifest (tables for the CLI and ``pytest --stacks``)."""

from __future__ import annotations

import io
import os
import shutil
import sys
import textwrap
from collections.abc import Mapping

from rich.console import Console
from rich.table import Table

from pytest_stacks.manifest import Manifest, Stack


def width() -> int:
    """As wide as ``COLUMNS`` says, else the terminal on stdout; 160 when neither says (a
    pipe, a CI log, a captured pytest run), so a table written to a file keeps its rows on
    one line each."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit():
        return max(40, int(columns))
    if sys.stdout is not None and sys.stdout.isatty():
        return max(40, shutil.get_terminal_size((160, 24)).columns)
    return 160


def _render(table: Table) -> str:
    buffer = io.StringIO()
    Console(file=buffer, width=width(), no_color=True, force_terminal=False).print(table)
    return buffer.getvalue().rstrip()


#: Below this many columns a table's cells would cut words in the middle: each stack (and
#: each window) becomes a block of lines instead, wrapped at whole words.
NARROW = 100


def _block(title: str, fields: list[tuple[str, str]], columns: int) -> list[str]:
    lines = [title]
    for label, value in fields:
        # Words move to the next line whole; only one longer than a line (a path) is cut.
        lines.append(textwrap.fill(f"{label}: {value}", columns, initial_indent="  ",
                                   subsequent_indent="    ", break_on_hyphens=False))
    return lines


def _stacks_blocks(manifest: Manifest, columns: int) -> str:
    lines = [f"stacks in {manifest.path}", ""]
    for stack in manifest.stacks:
        lanes = [*stack.lanes, *(["canary"] if stack.canary else [])]
        version = " ".join([stack.version, *(f"({c} {v})" for c, v in stack.components.items())])
        lines += _block(stack.name, [
            ("backend", f"{stack.backend} {version} ({stack.role})"),
            ("provider", stack.provider), ("lanes", ", ".join(lanes) or "-"),
            ("capabilities", " ".join(sorted(stack.capabilities)))], columns)
    lines += ["", "support windows", ""]
    for backend in manifest.backends.values():
        entries = [(backend.name, backend.window, f"{backend.name}.window"),
                   *((f"{backend.name} {c}", w, f"{backend.name}.components.{c}")
                     for c, w in backend.components.items())]
        for label, window, key in entries:
            lines += _block(label, [("anchor .. leading edge",
                                     f"{window.anchor} .. {window.leading_edge}"),
                                    ("written at", _whose(manifest, key))], columns)
    return "\n".join(lines)


def stacks_table(manifest: Manifest) -> str:
    columns = width()
    if columns < NARROW:
        return _stacks_blocks(manifest, columns)
    table = Table(title=f"stacks in {manifest.path}")
    for column in ("stack", "backend", "version", "role", "provider", "lanes", "capabilities"):
        table.add_column(column, overflow="fold")
    for stack in manifest.stacks:
        lanes = [*stack.lanes, *(["canary"] if stack.canary else [])]
        version = " ".join([stack.version, *(f"({c} {v})" for c, v in stack.components.items())])
        table.add_row(stack.name, stack.backend, version, stack.role, stack.provider,
                      ",".join(lanes) or "-", " ".join(sorted(stack.capabilities)))
    return _render(table) + "\n" + _render(windows(manifest))


def windows(manifest: Manifest) -> Table:
    """Each window the roles above are judged by, and the file and line it was written at:
    a project's own, or the catalogue's it inherits."""
    table = Table(title="support windows")
    for column in ("backend", "anchor .. leading edge", "written at"):
        table.add_column(column, overflow="fold")
    for backend in manifest.backends.values():
        entries = [(backend.name, backend.window, f"{backend.name}.window"),
                   *((f"{backend.name} {c}", w, f"{backend.name}.components.{c}")
                     for c, w in backend.components.items())]
        for label, window, key in entries:
            table.add_row(label, f"{window.anchor} .. {window.leading_edge}",
                          _whose(manifest, key))
    return table


def _whose(manifest: Manifest, key: str) -> str:
    where = manifest.window_origins.get(key, "")
    if manifest.catalogue is None:
        return where or str(manifest.path)
    return f"{'your file' if manifest.own_window(key) else 'the catalogue'}: {where}"


def _needs_nothing(stack: Stack) -> str:
    return ("nothing on this machine (a deployment that already exists)"
            if stack.is_site else "nothing (in process)")


def stack_details(stack: Stack, origins: Mapping[str, str] | None = None,
                  manifest: Manifest | None = None) -> str:
    """One stack in full; with ``origins``, where each field came from (which file and line:
    the project's manifest or the catalogue it extends); with ``manifest``, the window its
    role is judged by and where that was written."""
    lines = [
        f"name:          {stack.name}",
        f"description:   {stack.description or '-'}",
        f"backend:       {stack.backend}",
        f"version:       {stack.version} ({stack.role})",
        *(f"{component + ':':<15}{version} ({stack.component_roles.get(component, '-')})"
          for component, version in stack.components.items()),
        f"provider:      {stack.provider}",
        f"transport:     {stack.transport}",
        f"configuration: {stack.configuration}",
        f"lanes:         {', '.join(stack.lanes) or '-'}"
        + (" + canary" if stack.canary else ""),
        f"capabilities:  {', '.join(sorted(stack.capabilities))}",
        f"requires:      {', '.join(stack.requires) or _needs_nothing(stack)}",
    ]
    if manifest is not None and stack.backend in manifest.backends:
        window = manifest.backends[stack.backend].window
        lines.insert(4, f"window:        {window.anchor} .. {window.leading_edge} (from "
                        f"{_whose(manifest, f'{stack.backend}.window')})")
    if stack.existing:
        lines.append(f"existing:      accepts {stack.allowed_versions}"
                     + (f", Kubernetes {stack.existing.kubernetes_versions!r}"
                        if stack.existing.kubernetes_versions else "")
                     + (f"; runs work under {stack.existing.job_root}/pst-<run id>/"
                        if stack.existing.job_root else "; a namespace per run"))
    if stack.base_image:
        lines.append(f"base image:    {stack.base_image.registry_reference} "
                     f"(seeded offline as {stack.base_image.seeded_reference})")
    if stack.image:
        lines.append(f"image:         {stack.image.reference}")
    if stack.compose:
        lines.append(f"compose:       {stack.compose.directory} (service "
                     f"{stack.compose.service})")
        for key, value in stack.compose.build_args.items():
            lines.append(f"  build arg    {key}={value}")
    if stack.kind:
        lines.append(f"kind:          {stack.kind.kind_version}, node "
                     f"{stack.kind.node_reference}, operator "
                     f"{stack.kind.operator_version}")
    if stack.canary:
        floats = {**stack.canary.build_args}
        if stack.canary.image_tag:
            floats["image tag"] = stack.canary.image_tag
        lines.append("canary floats: " + ", ".join(f"{k}={v or '(newest)'}"
                                                   for k, v in floats.items()))
    if stack.options:
        lines.append(f"options:       {dict(stack.options)}")
    if manifest is not None:
        lines.extend(_same_line(stack, manifest))
    if origins:
        width = max(len(name) for name in origins)
        lines.append("where each field comes from:")
        lines.extend(f"  {name:<{width}}  {origin}" for name, origin in sorted(origins.items()))
    return "\n".join(lines)


def _same_line(stack: Stack, manifest: Manifest) -> list[str]:
    """The other stacks of the stack's release line (backend and major version), each with
    how it is had: where a line is both built here and run from an upstream image, a reader of
    ``show htcondor-25`` learns that the name is this stack's alone, and which to name for the
    other way."""
    major = stack.version.split(".")[0]
    others = [s for s in manifest.stacks if s.name != stack.name and s.backend == stack.backend
              and s.version.split(".")[0] == major and not s.is_fake]
    if not others or stack.is_fake:
        return []
    width = max(len(s.name) for s in others)
    lines = [f"same line ({stack.backend} {major}.x), other stacks:"]
    for other in others:
        if other.image is not None:
            how = f"upstream image {other.image.reference}"
        elif other.compose is not None:
            how = f"built here ({other.compose.directory.name})"
        else:
            how = other.provider
        needs = f", needs {', '.join(other.requires)}" if other.requires else ""
        lines.append(f"  {other.name:<{width}}  {other.version:<8} {other.configuration} over "
                     f"{other.transport}; {how}{needs}")
    own = (f"upstream image {stack.image.reference}" if stack.image is not None
           else "built here" if stack.compose is not None else stack.provider)
    lines.append(f"--stack={stack.name} runs this stack ({own}): a name is matched exactly, "
                 f"never by version; name one of the above for the other way")
    return lines
