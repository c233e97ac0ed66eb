"""The Allure results pytest-stacks writes build into real reports, offline, with Allure 3 from
npm (no Java): the default Awesome report with the categories docs/allure.md configures, and
the Allure 2-style report, which reads categories.json from the results on its own.

Allure comes from ``scripts/install-allure.sh`` (its cache path, or ``PYTEST_STACKS_ALLURE``).
Without it these tests skip, unless ``PYTEST_STACKS_REQUIRE_CHECKERS=1`` is set (as in CI),
where a missing Allure fails.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.plugin import allure as allure_support
from tests.checks.browser_page import chromium, rendered_dom

pytest_plugins = ["pytester"]

ROOT = Path(__file__).resolve().parents[2]
INSTALL_SCRIPT = ROOT / "scripts" / "install-allure.sh"
REQUIRE = os.environ.get("PYTEST_STACKS_REQUIRE_CHECKERS") == "1"

MANIFEST = """
version: 1
capabilities: {submit: s, status: t, logs: l}
backends:
  slurm:
    window: {anchor: "22.05", leading_edge: "26.05"}
stacks:
  - name: fake-slurm
    backend: slurm
    version: "24.11.5"
    provider: fake
    transport: local
    configuration: single-node
    capabilities: [submit, status, logs]
    lanes: [pr]
  - name: broken-slurm
    backend: slurm
    version: "24.11.5"
    provider: fake
    transport: local
    configuration: default
    capabilities: [submit, status]
    lanes: [full]
    options: {slots: 0}
    timeouts: {job: 0.5}
"""

TESTS = """
import pytest
from pytest_stacks.contract import JobSpec, submitted, wait_for

@pytest.mark.requires("submit")
def test_green(backend, stack):
    [h] = submitted(backend.submit([JobSpec(script="true\\n")]))
    wait_for(backend, [h], timeout=30)

def test_red(backend):
    [h] = submitted(backend.submit([JobSpec(script="echo boom-marker; exit 9\\n")]))
    wait_for(backend, [h], timeout=30)
    assert False, "deliberate"
"""

# The Allure 3 configuration docs/allure.md recommends: the categories pytest-stacks wrote.
ALLURERC = """
import { readFileSync } from "node:fs";

export default {
  name: "pytest-stacks",
  categories: JSON.parse(readFileSync("allure-results/categories.json", "utf8")),
};
"""


def pinned_version() -> str:
    """The Allure version install-allure.sh pins: one source of truth for both."""
    match = re.search(r'allure_version="\$\{ALLURE_VERSION:-([^}]+)\}"',
                      INSTALL_SCRIPT.read_text())
    assert match, f"no allure_version pin in {INSTALL_SCRIPT}"
    return match.group(1)


# Resolved at import: pytester points HOME at each test's temporary directory.
ALLURE = Path(os.environ.get("PYTEST_STACKS_ALLURE") or (
    Path.home() / ".cache" / "pytest-stacks" / f"allure-{pinned_version()}" / "bin" / "allure"))


def allure_binary() -> Path:
    path = ALLURE
    if path.is_file() and os.access(path, os.X_OK):
        return path
    message = f"Allure 3 is not installed at {path}: run scripts/install-allure.sh"
    if REQUIRE:
        pytest.fail(message + " (PYTEST_STACKS_REQUIRE_CHECKERS=1)", pytrace=False)
    pytest.skip(message)


@pytest.fixture
def allure_results(pytester: pytest.Pytester) -> Path:
    """A run on a healthy and a broken fake stack: a pass, a product failure, infra errors."""
    allure_binary()  # skip (or fail) before spending a run on it
    pytester.makefile(".yaml", manifest=MANIFEST)
    pytester.makeini("[pytest]\nstacks_manifest = manifest.yaml\n")
    pytester.makepyfile(test_user=TESTS)
    result = pytester.runpytest("--stack=fake-slurm", "--stack=broken-slurm",
                                "--alluredir=allure-results")
    result.assert_outcomes(passed=1, failed=1)
    assert "2 infra" in result.stdout.lines[-1]
    return pytester.path / "allure-results"


def generate(cwd: Path, config: str) -> Path:
    (cwd / "allurerc.mjs").write_text(config)
    done = subprocess.run([str(allure_binary()), "generate", "allure-results", "-o", "report"],
                          cwd=cwd, capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    return cwd / "report"


def by_name(directory: Path) -> dict[str, dict[str, Any]]:
    found = {}
    for path in directory.glob("*.json"):
        data = json.loads(path.read_text())
        found[data["name"]] = data
    return found


def test_the_default_report_shows_stacks_attachments_and_categories(
        allure_results: Path) -> None:
    report = generate(allure_results.parent, ALLURERC)
    assert "<html" in (report / "index.html").read_text().lower()
    cases = by_name(report / "data" / "test-results")
    assert set(cases) == {"test_green[fake-slurm]", "test_red[fake-slurm]",
                          "test_green[broken-slurm]", "test_red[broken-slurm]"}
    green = cases["test_green[fake-slurm]"]
    assert green["status"] == "passed"
    assert {"name": "stack", "value": "fake-slurm"} in green["labels"]
    assert {"name": "parentSuite", "value": "fake-slurm"} in green["labels"]
    assert [p["value"] for p in green["parameters"] if p["name"] == "stack"] == ["'fake-slurm'"]
    for name in ("test_green[broken-slurm]", "test_red[broken-slurm]"):
        assert cases[name]["status"] == "broken"
        assert [c["name"] for c in cases[name]["categories"]] == [
            allure_support.INFRA_CATEGORY], name
    red = cases["test_red[fake-slurm]"]
    assert [c["name"] for c in red["categories"]] == [allure_support.PRODUCT_CATEGORY]
    attachments = "\n".join(p.read_text() for p in (report / "data" / "attachments").iterdir())
    assert "ExitCode=9:0" in attachments and "boom-marker" in attachments
    env = {e["name"]: e["values"] for e in
           json.loads((report / "widgets" / "allure_environment.json").read_text())}
    assert env["stack.fake-slurm.claimed_version"] == ["fake, claims 24.11.5"]
    assert env["stack.broken-slurm.infrastructure_error"][0].startswith(
        "functional probe job did not finish")
    summary = json.loads((report / "summary.json").read_text())
    assert summary["stats"]["total"] == 4 and summary["stats"]["broken"] == 2


def test_the_allure2_report_reads_categories_json_from_the_results(
        allure_results: Path) -> None:
    """What Allure 2 users get: categories.json in the results directory, nothing to
    configure."""
    report = generate(allure_results.parent,
                      "export default { plugins: { allure2: { options: {} } } };\n")
    assert (report / "index.html").is_file()
    cases = by_name(report / "data" / "test-cases")
    categories = {name: [c["name"] for c in case["extra"].get("categories", [])]
                  for name, case in cases.items()}
    assert categories == {
        "test_green[fake-slurm]": [],
        "test_red[fake-slurm]": [allure_support.PRODUCT_CATEGORY],
        "test_green[broken-slurm]": [allure_support.INFRA_CATEGORY],
        "test_red[broken-slurm]": [allure_support.INFRA_CATEGORY],
    }
    suites = json.loads((report / "data" / "suites.json").read_text())
    assert {child["name"] for child in suites["children"]} == {"fake-slurm", "broken-slurm"}


# Allure 3.18's single-file report defines window.allureReportData in an inline script placed
# after its 3.5 MB app script; the app asks for its data as soon as it starts, and where that
# object is not there yet it fetches widgets/*.json instead, which a file:// page may not (CORS):
# the tree stays empty. Under 8 busy loops on 2 cores 3 renders in 10 drew it, 10 in 10 with
# this; a fast machine parses the inline script first. The page's own script keeps an object
# it finds (`window.allureReportData = window.allureReportData || {}`) and the app then waits
# for its `allureReportDataReady`, so defining it first only takes the race away.
SINGLE_FILE_DATA_FIRST = "window.allureReportData = window.allureReportData || {};"


def _shown(dom: str) -> list[str]:
    """The page's text nodes, in order, without its styles and scripts."""
    text = re.sub(r"<style.*?</style>|<script.*?</script>", "", dom, flags=re.S)
    return [t.strip() for t in re.sub(r"<[^>]+>", "\n", text).splitlines() if t.strip()]


def test_the_shipped_config_makes_the_tree_read_stack_first(allure_results: Path) -> None:
    """The allurerc.mjs pytest-stacks writes beside the results: the Awesome report, opened
    in headless Chromium, shows the stacks as the top level of its tree (by default every
    result sits under "tests"), and keeps the categories."""
    browser = chromium()
    config = allure_results / "allurerc.mjs"
    assert config.is_file()
    cwd = allure_results.parent
    done = subprocess.run([str(allure_binary()), "generate", "allure-results", "--config",
                           str(config), "-o", "stack-report"], cwd=cwd, capture_output=True,
                          text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    page = cwd / "stack-report" / "index.html"
    # The tree is drawn by the page's scripts: the DOM is read until it is there, in real time
    # (a virtual-time budget ran out before it on a loaded machine: browser_page.py).
    rendered = rendered_dom(browser, page.as_uri(), cwd / "profile",
                            lambda html: "Order Earliest" in _shown(html),
                            at_document_start=SINGLE_FILE_DATA_FIRST)
    shown = _shown(rendered.dom)
    assert "Order Earliest" in shown, (shown[:80], rendered.console[:20])
    tree = shown[shown.index("Order Earliest") + 1:shown.index("Powered by")]
    groups = [t for t in tree if not re.fullmatch(r"[\d.]+m?s|\d+", t)]
    # First level: the stacks (each then holds its test module, then the tests).
    assert groups[0] in ("fake-slurm", "broken-slurm"), groups
    assert {"fake-slurm", "broken-slurm"} <= set(groups) and "tests" not in groups, groups
    assert groups.index("test_user") > groups.index(groups[0]), groups
