"""The compatibility table as Markdown (for ``$GITHUB_STEP_SUMMARY``), as one self-contained
HTML page, or as JSON. All three say the same three things, in this order: the overall verdict
in one line, the table, and the problems that keep it from being green.

Every text that came from a results file (node ids, messages, names) is escaped: a test id is
whatever its author wrote, and a report must not turn it into markup.
"""

from __future__ import annotations

import html
import json
from collections import Counter
from typing import Any

from pytest_stacks import __version__
from pytest_stacks.verdicts.merge import Cell, Compatibility, Failure, Row

FORMATS = ("markdown", "html", "json")
LEGEND = (
    ("pass", "pass N", "offered, and the N tests requiring it that ran all passed against the "
     "stack (no failure, no infrastructure error); N >= 1. The version column says which "
     "daemon version the run observed and through which client; a fake stack's daemon is a "
     "double, which only claims its pin"),
    ("fail", "fail F/N", "offered, and F of the N tests requiring it that ran failed"),
    ("infra", "infra I/N", "offered, no failure, but I tests hit an infrastructure error"),
    ("unproven", "unproven", "offered, but no test requiring it passed (none ran)"),
    ("pass", "· S skipped", "S more tests requiring it were skipped at run time on this stack "
     "(they proved nothing here; the count is shown so a cell never hides them)"),
    ("not-offered", "not offered", "the stack does not offer it; tests requiring it skipped"),
    ("missing", "no result", "no job reported this stack"),
    ("unreported", "not reported", "the stack's results do not mention this capability"),
)
ICONS = {"pass": "✅", "fail": "❌", "infra": "⚠️", "unproven": "❔", "not-run": "❔",
         "missing": "⛔", "not-offered": "·", "unreported": "·"}
MARKDOWN_SPECIALS = str.maketrans({c: f"\\{c}" for c in "\\`*_[]~|"})


def render(model: Compatibility, fmt: str) -> str:
    if fmt == "markdown":
        return markdown(model)
    if fmt == "html":
        return html_page(model)
    if fmt == "json":
        # Strict JSON or nothing: a non-finite number would be written as Infinity.
        return json.dumps(to_dict(model), indent=2, ensure_ascii=False, allow_nan=False) + "\n"
    raise ValueError(f"unknown format {fmt!r}: expected one of {', '.join(FORMATS)}")


def overall(model: Compatibility) -> str:
    """The one line a person reads first: green or not, and what the table holds."""
    tally = Counter(row.verdict for row in model.rows)
    counts = ", ".join(f"{n} {verdict}" for verdict, n in sorted(tally.items()))
    word = "GREEN" if model.green else "NOT GREEN"
    holds = f"{len(model.rows)} stack(s) ({counts})" if model.rows else "no stacks"
    retried = sum(1 for row in model.rows if row.retries)
    holds += f", {retried} after an infra retry" if retried else ""
    return f"{word}: {model.title}, {holds}, {len(model.problems)} problem(s)"


def failures(model: Compatibility) -> list[tuple[Row, Failure]]:
    """Each failing or infra test once per stack, in table order."""
    seen: set[tuple[str, str]] = set()
    found = []
    for row in model.rows:
        for cell in row.cells.values():
            for failure in cell.failures:
                if (row.stack, failure.nodeid) not in seen:
                    seen.add((row.stack, failure.nodeid))
                    found.append((row, failure))
    return found


def _where(row: Row) -> str:
    return " · ".join(x for x in (row.lane, row.provider, row.transport, row.configuration) if x)


def _first_line(text: str) -> str:
    return next((ln.strip() for ln in text.splitlines() if ln.strip()), "")


# ---------------------------------------------------------------- Markdown


def _md(text: str) -> str:
    """Plain text in a Markdown table cell: no markup, no HTML, no line breaks."""
    flat = " ".join(text.split())
    return html.escape(flat, quote=False).translate(MARKDOWN_SPECIALS)


#: Why a run that passed under pytest's default policy is not green here.
STRICT = ("The report is always strict: a declared capability no passing test proved is a "
          "problem here, whatever --stack-unproven the run used (warn, the default, only "
          "keeps it from failing the pytest run).")


def markdown(model: Compatibility) -> str:
    icon = "✅" if model.green else "❌"
    header = ["Backend", "Version", "Role", "Stack", "Lane · provider · transport · "
              "configuration", "Scope · deselected", "Verdict", *model.capabilities]
    lines = [f"## pytest-stacks compatibility: {_md(model.title)}", "",
             f"**{icon} {_md(overall(model))}**", "",
             "| " + " | ".join(_md(h) for h in header) + " |",
             "|" + "---|" * len(header)]
    for row in model.rows:
        cells = [row.backend, row.version_text, row.role, row.stack, _where(row), row.ran]
        shown = [_md(c) for c in cells]
        shown.append(f"{ICONS.get(row.verdict, '')} {_md(row.verdict_text)}".strip())
        shown += [_md_cell(row.cells.get(c, Cell("unreported"))) for c in model.capabilities]
        lines.append("| " + " | ".join(shown) + " |")
    helped = [row for row in model.rows if row.driver]
    if helped:
        lines += ["", "### What the reference driver adds (a user's own client would not)", ""]
        lines += [f"- {_md(row.stack)}: {_md(row.driver)}" for row in helped]
    retried = [row for row in model.rows if row.retries]
    if retried:
        lines += ["", "### Infra retries (each a stack broken and brought up fresh)", ""]
        lines += [f"- {_md(row.stack)}: {_md(r)}" for row in retried for r in row.retries]
    checked = [row for row in model.rows if row.parity]
    if checked:
        lines += ["", "### Parity: fakes checked against recordings, real stacks recorded", ""]
        lines += [f"- {_md(row.stack)}: {_md(row.parity)}" for row in checked]
    lines += ["", f"### Problems ({len(model.problems)})", ""]
    if any(row.verdict == "unproven" for row in model.rows):
        lines += [f"_{_md(STRICT)}_", ""]
    lines += [f"{i}. {_md(p)}" for i, p in enumerate(model.problems, 1)] or ["None."]
    failing = failures(model)
    if failing:
        lines += ["", f"<details><summary>Failing tests ({len(failing)})</summary>", ""]
        lines += [f"- {_md(row.stack)}: {_md(f.nodeid)} ({_md(f.outcome)})"
                  + (f": {_md(_first_line(f.message))}" if f.message.strip() else "")
                  for row, f in failing]
        lines += ["", "</details>"]
    lines += ["", f"<sub>{len(model.sources)} results file(s); pytest-stacks "
                  f"{_md(__version__)}</sub>", ""]
    return "\n".join(lines)


def _md_cell(cell: Cell) -> str:
    return f"{ICONS.get(cell.status, '')} {_md(cell.text)}".strip()


# ---------------------------------------------------------------- HTML

CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px;color:#111827}
h1{font-size:20px;margin:0 0 8px}h2{font-size:16px;margin:24px 0 8px}
.overall{font-weight:600;padding:8px 12px;border-radius:6px;display:inline-block}
.overall.green{background:#dcfce7;color:#14532d}.overall.not-green{background:#fee2e2;color:#7f1d1d}
table.compat{border-collapse:collapse;margin-top:12px}
.compat th,.compat td{border:1px solid #d1d5db;padding:4px 8px;text-align:left;vertical-align:top}
.compat th{background:#f9fafb;position:sticky;top:0}
.pass{background:#dcfce7;color:#14532d}.fail{background:#fee2e2;color:#7f1d1d}
.infra{background:#ffedd5;color:#7c2d12}.unproven,.not-run{background:#fef9c3;color:#713f12}
.not-offered,.unreported{background:#f3f4f6;color:#6b7280}
.missing{background:repeating-linear-gradient(45deg,#e5e7eb 0 6px,#f3f4f6 6px 12px);
 color:#111827;font-style:italic}
.stackinfo{color:#4b5563;font-size:12px}
details summary{cursor:pointer}ul.failures{margin:4px 0;padding-left:18px;max-width:640px}
ul.failures pre{white-space:pre-wrap;margin:2px 0 6px;font-size:12px}
.legend span{display:inline-block;min-width:90px;padding:2px 6px;margin-right:6px;border-radius:4px}
.legend li{list-style:none;margin:3px 0}
"""


def _h(text: object) -> str:
    return html.escape(str(text), quote=True)


def html_page(model: Compatibility) -> str:
    """One file, nothing external, no script: it is opened from a CI artifact, often offline."""
    state = "green" if model.green else "not-green"
    header = ["Backend", "Version", "Role", "Stack", "Lane · provider · transport · "
              "configuration", "Scope · deselected", "Verdict", *model.capabilities]
    head = "".join(f"<th scope=\"col\">{_h(h)}</th>" for h in header)
    body = "\n".join(_html_row(row, model.capabilities) for row in model.rows)
    problems = ("<ol class=\"problems\">" + "".join(f"<li>{_h(p)}</li>" for p in model.problems)
                + "</ol>") if model.problems else "<p class=\"problems\">None.</p>"
    legend = "".join(f"<li><span class=\"{_h(cls)}\">{_h(text)}</span>{_h(what)}</li>"
                     for cls, text, what in LEGEND)
    sources = ", ".join(_h(s) for s in model.sources)
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>pytest-stacks compatibility: {_h(model.title)}</title>
<style>{CSS}</style>
</head>
<body>
<h1>pytest-stacks compatibility: {_h(model.title)}</h1>
<p id="overall" class="overall {state}">{_h(overall(model))}</p>
<table class="compat">
<thead><tr>{head}</tr></thead>
<tbody>
{body}
</tbody>
</table>
<h2>Problems ({len(model.problems)})</h2>
{problems}
<h2>Legend</h2>
<ul class="legend">{legend}</ul>
<p class="stackinfo">From {len(model.sources)} results file(s): {sources}. pytest-stacks
{_h(__version__)}.</p>
</body>
</html>
"""


def _html_row(row: Row, capabilities: tuple[str, ...]) -> str:
    info = [row.observed,
            f"client {row.observed_client}" if row.observed_client and not row.fake else "",
            f"up in {row.startup_s:.0f} s" if row.startup_s is not None else "",
            f"parity: {row.parity}" if row.parity else "",
            f"the driver {row.driver}" if row.driver else ""]
    detail = ", ".join(x for x in info if x)
    stack = _h(row.stack) + (f"<div class=\"stackinfo\">{_h(detail)}</div>" if detail else "")
    verdict = _h(row.verdict_text)
    said = "\n".join(x for x in (row.infra or "", *row.retries) if x)
    if said:
        verdict = f"<details><summary>{verdict}</summary><pre>{_h(said)}</pre></details>"
    cells = "".join(_html_cell(row.cells.get(c, Cell("unreported")), c) for c in capabilities)
    return (f"<tr class=\"row verdict-{_h(row.verdict)}\" data-stack=\"{_h(row.stack)}\">"
            f"<td>{_h(row.backend)}</td><td class=\"version\">{_h(row.version_text)}</td>"
            f"<td>{_h(row.role)}</td>"
            f"<th scope=\"row\">{stack}</th><td>{_h(_where(row))}</td>"
            f"<td class=\"scope\">{_h(row.ran)}</td>"
            f"<td class=\"verdict {_h(row.verdict)}\">{verdict}</td>{cells}</tr>")


def _html_cell(cell: Cell, capability: str) -> str:
    attrs = f"class=\"cell {_h(cell.status)}\" data-capability=\"{_h(capability)}\""
    if not cell.failures:
        return f"<td {attrs}>{_h(cell.text)}</td>"
    items = "".join(f"<li><code>{_h(f.nodeid)}</code> ({_h(f.outcome)})"
                    + (f"<pre>{_h(f.message)}</pre>" if f.message else "") + "</li>"
                    for f in cell.failures)
    return (f"<td {attrs}><details><summary>{_h(cell.text)}</summary>"
            f"<ul class=\"failures\">{items}</ul></details></td>")


# ---------------------------------------------------------------- JSON


def to_dict(model: Compatibility) -> dict[str, Any]:
    """The merged model as plain data, with ``green`` and the problems, for other tools."""
    return {
        "schema": "pytest-stacks/compatibility", "schema_version": 1,
        "title": model.title, "lane": model.lane, "green": model.green,
        "overall": overall(model), "capabilities": list(model.capabilities),
        "problems": list(model.problems), "sources": list(model.sources),
        "rows": [_row_dict(row) for row in model.rows],
    }


def _row_dict(row: Row) -> dict[str, Any]:
    return {
        "stack": row.stack, "backend": row.backend, "version": row.version, "role": row.role,
        "lane": row.lane, "provider": row.provider, "transport": row.transport,
        "configuration": row.configuration, "fake": row.fake, "verdict": row.verdict,
        "source": row.source, "run_id": row.run_id, "version_text": row.version_text,
        # A fake's version is a claim (it echoes its pin), never an observation.
        **({"observed": None, "claimed": {"daemon": row.observed_daemon,
                                           "client": row.observed_client}} if row.fake else
           {"observed": {"daemon": row.observed_daemon, "client": row.observed_client}}),
        "startup_s": row.startup_s, "infra": row.infra, "parity": row.parity,
        "driver": row.driver, "scope": row.scope, "deselected": row.deselected,
        "infra_retries": list(row.retries),
        "cells": {name: {"status": c.status, "text": c.text, "passed": c.passed,
                         "failed": c.failed, "skipped": c.skipped, "infra": c.infra,
                         "failures": [{"nodeid": f.nodeid, "outcome": f.outcome,
                                       "message": f.message} for f in c.failures]}
                  for name, c in row.cells.items()},
    }
