"""The shell of the workflows' steps, run here as GitHub runs it (``bash -eo pipefail``) with
stand-ins for the commands they call: what a step does with an outcome, without act.

An empty lane proves nothing. Seen before this was checked: the reusable workflow turned
`pytest-stacks matrix`'s exit 3 (empty lane) into a warning and a green run, and the canary's
issue job closed the open canary issue on that green run as if the lane had passed.
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
GH = ROOT / "tests" / "workflows" / "runner" / "gh"


def _step(workflow: str, job: str, name_starts: str) -> dict[str, Any]:
    steps = yaml.safe_load((WORKFLOWS / workflow).read_text())["jobs"][job]["steps"]
    return next(s for s in steps if str(s.get("name", "")).startswith(name_starts))


def _run(script: str, env: dict[str, str], bin_dir: Path) -> subprocess.CompletedProcess[str]:
    """The step's script as GitHub's `shell: bash` runs it, stand-ins first on the PATH."""
    full = {"PATH": f"{bin_dir}:/usr/bin:/bin", "HOME": str(bin_dir), **env}
    return subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
                          env=full, capture_output=True, text=True, timeout=60, check=False)


def _stand_in(bin_dir: Path, name: str, body: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    path = bin_dir / name
    path.write_text("#!/bin/bash\n" + body)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


def test_an_empty_lane_fails_the_plan(tmp_path: Path) -> None:
    step = _step("stacks.yml", "plan", "Matrix of the lane")
    bin_dir = tmp_path / "bin"
    # `pytest-stacks matrix` on an empty lane: has_rows=false, then exit 3.
    _stand_in(bin_dir, "pytest-stacks",
              'echo "has_rows=false" >> "$GITHUB_OUTPUT"\n'
              'echo "pytest-stacks matrix: the canary lane is empty" >&2\nexit 3\n')
    output = tmp_path / "output"
    done = _run(step["run"], {"LANE": "canary", "MANIFEST": "", "TEST_PATHS": "tests",
                              "GITHUB_OUTPUT": str(output)}, bin_dir)
    assert done.returncode != 0, done.stdout + done.stderr
    assert "::error::the canary lane is empty" in done.stdout
    assert "has_rows=false" in output.read_text()


def test_a_planned_lane_passes_the_plan(tmp_path: Path) -> None:
    step = _step("stacks.yml", "plan", "Matrix of the lane")
    bin_dir = tmp_path / "bin"
    _stand_in(bin_dir, "pytest-stacks", 'echo "has_rows=true" >> "$GITHUB_OUTPUT"\n')
    done = _run(step["run"], {"LANE": "pr", "MANIFEST": "", "TEST_PATHS": "tests",
                              "GITHUB_OUTPUT": str(tmp_path / "output")}, bin_dir)
    assert done.returncode == 0, done.stdout + done.stderr


def _canary(tmp_path: Path, result: str, table: str | None, open_issues: str
            ) -> list[list[str]]:
    step = _step("canary.yml", "report", "Comment, open or close")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    os.symlink(GH, bin_dir / "gh")
    path = tmp_path / "report" / "compatibility.md"
    if table is not None:
        path.parent.mkdir()
        path.write_text(table)
    calls = tmp_path / "calls.jsonl"
    env = {**step["env"], "TABLE": str(path), "RESULT": result, "GH_TOKEN": "t",
           "GH_REPO": "OWNER/REPO", "RUN_URL": "https://github.com/OWNER/REPO/actions/runs/1",
           "ACT_GH_CALLS": str(calls), "ACT_GH_OPEN_ISSUES": open_issues,
           "PATH": f"{bin_dir}:{os.environ['PATH']}"}
    done = _run(step["run"], {k: str(v) for k, v in env.items()}, bin_dir)
    assert done.returncode == 0, done.stdout + done.stderr
    return [json.loads(line)["args"] for line in calls.read_text().splitlines()][2:]


GREEN = "## pytest-stacks compatibility: canary lane\n\n**✅ GREEN: canary lane, 2 stack(s) " \
        "(2 pass), 0 problem(s)**\n"
RED = "## pytest-stacks compatibility: canary lane\n\n**❌ NOT GREEN: canary lane, 2 " \
      "stack(s) (1 fail, 1 pass), 1 problem(s)**\n"


@pytest.mark.parametrize(("table", "closed"), [(GREEN, True), (None, False), (RED, False),
                                               ("", False)],
                         ids=["green-table", "no-table", "red-table", "empty-table"])
def test_the_canary_issue_is_closed_only_on_a_green_table(tmp_path: Path, table: str | None,
                                                          closed: bool) -> None:
    """A lane that succeeded without a green table (it ran nothing) must not close it."""
    calls = _canary(tmp_path, "success", table, "12")
    assert (calls == [["issue", "close", "12", "--comment",
                       "The canary lane is green again: "
                       "https://github.com/OWNER/REPO/actions/runs/1"]]) is closed, calls
    if not closed:
        assert calls == [], calls


def test_a_failed_canary_lane_keeps_its_issue_open(tmp_path: Path) -> None:
    calls = _canary(tmp_path, "failure", None, "12")
    assert [c[:3] for c in calls] == [["issue", "comment", "12"]], calls
