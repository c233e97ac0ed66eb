"""The local stand-ins that let act run our workflows (tests/workflows/) keep up with them:
every action a workflow uses has one, and every input a step passes is one the stand-in
declares, so a workflow change cannot silently fall outside what `scripts/act-lanes.sh` runs."""

from __future__ import annotations

from pathlib import Path

import yaml

from tests.workflows.act import ROOT, STANDINS, local_repositories, uses

WORKFLOWS = sorted([*(ROOT / ".github" / "workflows").glob("*.yml"),
                    *(ROOT / "examples" / "user-project" / ".github" / "workflows").glob("*.yml")])


def _steps() -> list[tuple[Path, str, dict[str, object]]]:
    found = []
    for path in WORKFLOWS:
        for job in yaml.safe_load(path.read_text())["jobs"].values():
            for step in job.get("steps", []):
                if "uses" in step:
                    found.append((path, step["uses"], step.get("with") or {}))
    return found


def test_every_action_used_has_a_stand_in() -> None:
    reusable = {repo for repo, _ in uses(WORKFLOWS) if repo.endswith("/pytest-stacks")}
    args = local_repositories(WORKFLOWS, {repo: ROOT for repo in reusable})
    mapped = {a.split("@")[0] for a in args if a != "--local-repository"}
    assert mapped >= {repo for repo, folder in STANDINS.items() if folder is not None}


def test_every_input_a_step_passes_is_declared_by_its_stand_in() -> None:
    checked = 0
    for path, action, given in _steps():
        folder = STANDINS.get(action.split("@")[0])
        if folder is None:
            continue  # actions/checkout: act's own
        declared = yaml.safe_load((folder / "action.yml").read_text())["inputs"]
        unknown = sorted(set(given) - set(declared))
        assert not unknown, f"{path.name}: {action} is given {unknown}, which its stand-in " \
                            f"{folder.relative_to(ROOT)} does not declare"
        checked += 1
    assert checked >= 6


def test_a_missing_stand_in_is_named(tmp_path: Path) -> None:
    workflow = tmp_path / "w.yml"
    workflow.write_text("jobs:\n  a:\n    steps:\n      - uses: actions/cache@v4\n")
    try:
        local_repositories([workflow], {})
    except RuntimeError as exc:
        assert "actions/cache@v4" in str(exc) and "STANDINS" in str(exc)
    else:
        raise AssertionError("an action without a stand-in was accepted")
