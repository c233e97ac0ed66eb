"""The HTML compatibility report, opened in a real browser: headless Chromium parses the page
and dumps its DOM, and the table must be there as rendered (rows, cells, verdict classes, the
failing node ids as text, never as markup).

Chromium comes from ``scripts/install-chromium.sh`` (Debian's ``chromium``). Without it this
test skips, unless ``PYTEST_STACKS_REQUIRE_CHECKERS=1`` is set (as in CI), where it fails.
"""

from __future__ import annotations

import subprocess
from html.parser import HTMLParser
from pathlib import Path

from pytest_stacks.verdicts import render
from pytest_stacks.verdicts.merge import Cell, Compatibility, Failure, Row
from tests.checks.browser_page import chromium

EVIL = "tests/test_io.py::test_fetch[<b>bold</b>&amp;]"
CAPS = ("submit", "outputs", "outputs.repeatable")


def _row(stack: str, version: str, role: str, verdict: str, cells: dict[str, Cell],
         infra: str | None = None) -> Row:
    return Row(stack=stack, backend=stack.split("-")[0], version=version, role=role, lane="pr",
               provider="compose", transport="local", configuration="single-node", fake=False,
               verdict=verdict, source=f"results/{stack}.json", observed_daemon=version,
               infra=infra, cells=cells, scope="" if verdict == "missing" else "tests/contract",
               deselected=2)


MODEL = Compatibility(
    title="pr lane", lane="pr", capabilities=CAPS, sources=("a.json", "b.json"),
    problems=("a.json: stack slurm-24.11: fail: 1 test(s) failed",
              "the pr lane of manifest.yaml: stack slurm-26.05: no results"),
    rows=(
        _row("slurm-22.05", "22.05.8", "anchor", "pass",
             {"submit": Cell("pass", passed=3), "outputs": Cell("pass", passed=2),
              "outputs.repeatable": Cell("not-offered", skipped=1)}),
        _row("slurm-24.11", "24.11.5", "supported", "fail",
             {"submit": Cell("pass", passed=3),
              "outputs": Cell("fail", passed=3, failed=1, failures=(
                  Failure(EVIL, "failed", "AssertionError: b'hi' != b''\nsecond line"),)),
              "outputs.repeatable": Cell("unproven", skipped=2)}),
        _row("slurm-26.05", "26.05.5", "leading-edge", "missing",
             {c: Cell("missing") for c in CAPS}),
        _row("htcondor-23.9", "23.9.6", "anchor", "infra",
             {"submit": Cell("infra", infra=2, failures=(
                 Failure("tests/test_submit.py::test_bulk[htcondor-23.9]", "infra",
                         "schedd did not answer"),)),
              "outputs": Cell("pass", passed=1), "outputs.repeatable": Cell("unreported")},
             infra="schedd did not answer within 120 s"),
    ))


class _Table(HTMLParser):
    """The table as the browser built it: per <tr>, its attributes and (tag, class, text) per
    cell; and every element name seen, to prove no node id became markup."""

    def __init__(self) -> None:
        super().__init__()
        self.rows: list[tuple[dict[str, str | None], list[tuple[str, str, str]]]] = []
        self.tags: set[str] = set()
        self._cell: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.add(tag)
        if self._cell is not None:
            self._cell[2] += " "  # an element boundary inside a cell separates words
        if tag == "tr":
            self.rows.append((dict(attrs), []))
        elif tag in ("td", "th") and self.rows:
            self._cell = [tag, dict(attrs).get("class") or "", ""]

    def handle_endtag(self, tag: str) -> None:
        if tag in ("td", "th") and self._cell is not None:
            tag_, cls, text = self._cell
            self.rows[-1][1].append((tag_, cls, " ".join(text.split())))
            self._cell = None
        elif self._cell is not None:
            self._cell[2] += " "

    def handle_data(self, data: str) -> None:
        if self._cell is not None:
            self._cell[2] += data


def test_the_report_renders_in_chromium(tmp_path: Path) -> None:
    browser = chromium()
    page = tmp_path / "report.html"
    page.write_text(render.html_page(MODEL), encoding="utf-8")
    result = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
         f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=90, check=False)
    assert result.returncode == 0, result.stderr[-3000:]
    dom = _Table()
    dom.feed(result.stdout)
    assert "tbody" in dom.tags and "details" in dom.tags  # parsed, not shown as text
    assert "b" not in dom.tags and "script" not in dom.tags  # the node id stayed text
    header, *rows = dom.rows
    assert [text for _, _, text in header[1]] == [
        "Backend", "Version", "Role", "Stack", "Lane · provider · transport · configuration",
        "Scope · deselected", "Verdict", *CAPS]
    assert len(rows) == 4
    assert [(attrs["data-stack"], attrs["class"]) for attrs, _ in rows] == [
        ("slurm-22.05", "row verdict-pass"), ("slurm-24.11", "row verdict-fail"),
        ("slurm-26.05", "row verdict-missing"), ("htcondor-23.9", "row verdict-infra")]
    cells = {attrs["data-stack"]: cells for attrs, cells in rows}
    assert cells["slurm-22.05"][:4] == [("td", "", "slurm"),
                                        ("td", "version", "22.05.8 observed via the local client"),
                                        ("td", "", "anchor"),
                                        ("th", "", "slurm-22.05 observed 22.05.8")]
    assert cells["slurm-22.05"][5] == ("td", "scope", "tests/contract · 2 deselected")
    assert [(cls, text) for _, cls, text in cells["slurm-22.05"][6:]] == [
        ("verdict pass", "pass"), ("cell pass", "pass 3"), ("cell pass", "pass 2"),
        ("cell not-offered", "not offered")]
    failing = cells["slurm-24.11"][8]
    assert failing[1] == "cell fail"
    assert failing[2] == f"fail 1/4 {EVIL} (failed) AssertionError: b'hi' != b'' second line"
    assert cells["slurm-26.05"][5] == ("td", "scope", "no run")
    assert [text for _, _, text in cells["slurm-26.05"][7:]] == ["no result"] * 3
    assert {cls for _, cls, _ in cells["slurm-26.05"][7:]} == {"cell missing"}
    infra = cells["htcondor-23.9"]
    assert infra[6] == ("td", "verdict infra", "infra schedd did not answer within 120 s")
    assert infra[7][1:] == ("cell infra", "infra 2/2 tests/test_submit.py::test_bulk"
                                          "[htcondor-23.9] (infra) schedd did not answer")
    assert infra[9][1:] == ("cell unreported", "not reported")
    assert 'class="overall not-green"' in result.stdout
