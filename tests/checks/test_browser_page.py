"""browser_page.rendered_dom: a page is read once its scripts have drawn, in real time."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.checks.browser_page import chromium, rendered_dom

LATE = """<!doctype html><html><body><p id="state">loading</p><script>
console.error("from " + (window.before || "the page alone"));
setTimeout(() => { document.getElementById("state").textContent = "drawn"; }, 2500);
</script></body></html>"""


@pytest.fixture
def late_page(tmp_path: Path) -> str:
    page = tmp_path / "late.html"
    page.write_text(LATE)
    return page.as_uri()


def test_the_dom_is_read_once_the_page_drew_it(tmp_path: Path, late_page: str) -> None:
    started = time.monotonic()
    dom = rendered_dom(chromium(), late_page, tmp_path / "profile",
                       lambda h: ">drawn<" in h).dom
    assert '<p id="state">drawn</p>' in dom
    assert time.monotonic() - started >= 2.5  # it waited for the script, not for the load


def test_a_page_that_never_draws_is_returned_as_it_is(tmp_path: Path, late_page: str) -> None:
    dom = rendered_dom(chromium(), late_page, tmp_path / "profile", lambda h: "never" in h,
                       timeout=1).dom
    assert dom.startswith("<html") and "drawn</p>" not in dom  # 1 s: before the script ran


def test_a_script_runs_before_the_page_and_the_console_is_kept(tmp_path: Path,
                                                               late_page: str) -> None:
    rendered = rendered_dom(chromium(), late_page, tmp_path / "profile",
                            lambda h: ">drawn<" in h, at_document_start='window.before = "us";')
    assert "console.error: from us" in rendered.console
