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
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
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
def test_every_shell_block_of_the_guide_runs(project: Path, index: int, block: Block) -> None:
    if block.note.startswith("not run: "):
        pytest.skip(f"{GUIDE.name}:{block.line}: {block.note.removeprefix('not run: ')}")
    done = subprocess.run(["bash", "-eo", "pipefail", "-c", block.text], cwd=project,
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
