"""Docs as tests (issue 58): the user's guide, copied as written, works.

Its ``<!-- file: PATH -->`` blocks make a project; every shell block is then run in it, in
order, with this environment's pytest-stacks, unless the line above it says
``<!-- not run: why -->`` (it needs a Docker engine or the network; the reason is the test's
skip); an ``<!-- expected output -->`` block lists lines (fnmatch patterns) the shell block
before it must print, in that order.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parents[2]
GUIDE = REPO / "docs" / "user-guide.md"
FENCE = re.compile(r"^```(\w*)\s*$")
NOTE = re.compile(r"^<!--\s*(.*?)\s*-->$")


@dataclass
class Block:
    lang: str
    text: str
    note: str  # the comment on the line above the fence, if any
    line: int


def blocks(markdown: str) -> list[Block]:
    found, lines, index = [], markdown.splitlines(), 0
    while index < len(lines):
        opened = FENCE.match(lines[index])
        if not opened or not opened.group(1):
            index += 1
            continue
        above = NOTE.match(lines[index - 1]) if index else None
        end = next(i for i in range(index + 1, len(lines)) if lines[i].startswith("```"))
        found.append(Block(opened.group(1), "\n".join(lines[index + 1:end]) + "\n",
                           above.group(1) if above else "", index + 1))
        index = end + 1
    return found


GUIDE_BLOCKS = blocks(GUIDE.read_text())
SHELL = [(i, b) for i, b in enumerate(GUIDE_BLOCKS) if b.lang == "bash"]


def test_the_guide_has_a_project_and_commands_to_run() -> None:
    files = [b.note for b in GUIDE_BLOCKS if b.note.startswith("file: ")]
    assert {"file: pytest.ini", "file: tests/test_jobs.py"} <= set(files)
    assert [b for _, b in SHELL if not b.note.startswith("not run:")]
    for _, block in SHELL:
        assert not block.note or block.note.startswith("not run: "), block.note


@pytest.fixture(scope="module")
def guide_project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("guide") / "my-client"
    for block in GUIDE_BLOCKS:
        if block.note.startswith("file: "):
            target = root / block.note.removeprefix("file: ")
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(block.text)
    return root


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTEST_ADDOPTS", "PYTEST_XDIST_WORKER", "PYTEST_CURRENT_TEST",
                        "COLUMNS")}
    env["PATH"] = f"{Path(sys.executable).parent}:{env.get('PATH', '')}"
    return env


@pytest.mark.parametrize("index,block", SHELL, ids=[f"line-{b.line}" for _, b in SHELL])
def test_every_shell_block_of_the_guide_runs(guide_project: Path, index: int, block: Block) -> None:
    if block.note.startswith("not run: "):
        pytest.skip(f"{GUIDE.name}:{block.line}: {block.note.removeprefix('not run: ')}")
    done = subprocess.run(["bash", "-eo", "pipefail", "-c", block.text], cwd=guide_project,
                          env=_env(), capture_output=True, text=True, timeout=600, check=False)
    said = done.stdout + done.stderr
    assert done.returncode == 0, f"{GUIDE.name}:{block.line}: {block.text}\n{said[-4000:]}"
    following = GUIDE_BLOCKS[index + 1] if index + 1 < len(GUIDE_BLOCKS) else None
    if following is not None and following.note == "expected output":
        printed = said.splitlines()
        at = 0
        for pattern in following.text.splitlines():
            hit = next((i for i in range(at, len(printed))
                        if fnmatch.fnmatchcase(printed[i], pattern)), None)
            assert hit is not None, f"{GUIDE.name}:{following.line}: {pattern!r} not printed " \
                                    f"(in order) by {block.text!r}:\n{said[-4000:]}"
            at = hit + 1


def test_the_readmes_manifest_loads_and_shows_its_stack(tmp_path: Path) -> None:
    [block] = [b for b in blocks((REPO / "README.md").read_text()) if b.lang == "yaml"]
    (tmp_path / "manifest.yaml").write_text(block.text)
    done = subprocess.run([str(Path(sys.executable).parent / "pytest-stacks"), "show",
                           "site-slurm"], cwd=tmp_path, env=_env(), capture_output=True,
                          text=True, timeout=120, check=False)
    assert done.returncode == 0, done.stderr
    assert "(catalogue, via extends: slurm-24.11)" in done.stdout


PAGES = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def test_the_readme_links_a_guide_per_reader_and_the_users_starts_with_install() -> None:
    readme = (REPO / "README.md").read_text()
    assert "(docs/user-guide.md)" in readme and "(docs/contributing.md)" in readme
    headings = re.findall(r"^## (.*)$", GUIDE.read_text(), re.M)
    assert headings[:2] == ["Install", "A first project"], headings
    [first_test] = [b for b in GUIDE_BLOCKS if b.note == "file: tests/test_jobs.py"]
    assert first_test.line < 120  # a newcomer meets a test early, not 90 lines into set-up
    for page in ("user-guide.md",):
        text = (REPO / "docs" / page).read_text()
        assert "setup.sh" not in text and "pip install -e" not in text


def test_every_table_row_belongs_to_a_table() -> None:
    """A paragraph inside a table leaves the rows after it as raw text."""
    for page in PAGES:
        lines = page.read_text().splitlines()
        fenced = False
        for number, line in enumerate(lines):
            if line.startswith("```"):
                fenced = not fenced
            if fenced or not line.startswith("|"):
                continue
            if number and lines[number - 1].startswith("|"):
                continue
            below = lines[number + 1] if number + 1 < len(lines) else ""
            assert re.fullmatch(r"\|(\s*:?-+:?\s*\|)+", below), \
                f"{page.name}:{number + 1}: a table row outside a table: {line[:60]}"


def test_a_stack_name_means_one_thing_across_the_docs() -> None:
    """`doctor NAME` must do what the text around every NAME says: one name is never a
    catalogue extension in one page and an existing site in another."""
    meaning: dict[str, set[str]] = {}
    for page in PAGES:
        for block in blocks(page.read_text()):
            if block.lang != "yaml":
                continue
            try:
                data = yaml.safe_load(block.text)
            except yaml.YAMLError:
                continue
            stacks = data.get("stacks") if isinstance(data, dict) else None
            for stack in stacks if isinstance(stacks, list) else []:
                if isinstance(stack, dict) and "name" in stack:
                    kind = stack.get("provider") or f"extends {stack.get('extends')}"
                    meaning.setdefault(str(stack["name"]), set()).add(str(kind))
    clashes = {n: k for n, k in meaning.items() if len(k) > 1}
    assert not clashes, clashes
