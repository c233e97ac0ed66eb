"""Results that were not produced by the run they claim, merged by `pytest-stacks report`.

A results file is JSON anyone can write. Seen before results were bound to what produced them:
files written from the manifest alone (no run; run id "forged"; dated 2020; test ids that do
not exist) merged `report --lane pr` GREEN; one fake's genuine file copied into every row's
file, relabelled as each real stack, merged "GREEN: pr lane, 2 pass"; and a matrix with its
failing rows removed by hand was trusted as the lane. Each forgery here starts from a genuine
file the plugin wrote for the fake stack, so it carries whatever the schema asks for.
"""

from __future__ import annotations

import copy
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks import ci, cli
from pytest_stacks.manifest import Stack, load
from tests.manifests import compose_slurm, manifest_of, stack

pytest_plugins = ["pytester"]

MANIFEST = manifest_of(stack("fake-slurm", capabilities=("submit", "status")),
                    compose_slurm("slurm-20.11", "20.11.9"),
                    compose_slurm("slurm-24.11", "24.11.5"), windows={"slurm": ("20.11", "24.11")})

TESTS = """
import pytest

@pytest.mark.requires("submit", "status")
def test_runs(backend, stack):
    pass

@pytest.mark.requires("submit")
def test_submits(backend, stack):
    pass
"""

ROWS = ["slurm-20.11", "slurm-24.11"]


def _git(cwd: Path, *args: str) -> None:
    subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@pytest-stacks.invalid",
                    *args], cwd=cwd, check=True, capture_output=True)


@pytest.fixture
def genuine(pytester: pytest.Pytester) -> dict[str, Any]:
    """A project in a git checkout, and the results file a real run of its fake wrote."""
    pytester.makefile(".yaml", manifest=MANIFEST)
    pytester.makeini("[pytest]\nstacks_manifest = manifest.yaml\ntestpaths = suite\n")
    (pytester.path / "stacks" / "slurm").mkdir(parents=True)
    (pytester.path / "stacks" / "slurm" / "compose.yaml").write_text("services: {}\n")
    (pytester.mkdir("suite") / "test_user.py").write_text(TESTS)
    (pytester.path / ".gitignore").write_text(".pytest-stacks/\nforged/\n")
    _git(pytester.path, "init", "-q", "-b", "main")
    _git(pytester.path, "add", "-A")
    _git(pytester.path, "commit", "-qm", "project")
    result = pytester.runpytest("--stack=fake-slurm", "-p", "no:randomly")
    assert result.ret == pytest.ExitCode.OK, result.stdout.str()
    doc: dict[str, Any] = json.loads(
        (pytester.path / ".pytest-stacks" / "results.json").read_text())
    return doc


def _relabel(doc: dict[str, Any], stack: Stack) -> dict[str, Any]:
    """The file, claiming to be ``stack``'s pr-lane job: what the manifest says of it."""
    doc = copy.deepcopy(doc)
    doc["run"]["ci_lane"] = "pr"
    entry = doc["stacks"][0]
    entry.update(name=stack.name, backend=stack.backend, version=stack.version,
                 provider=stack.provider, transport=stack.transport,
                 configuration=stack.configuration, role=stack.role, fake=False,
                 pins=ci.build_inputs(stack, "pr"))
    entry["observed"]["daemon"] = stack.version
    return doc


def _made_up(doc: dict[str, Any], name: str) -> dict[str, Any]:
    """No run at all: a run id, dates and test ids of the forger's own."""
    doc["run"].update(run_id="forged", started="2020-01-01T00:00:00+00:00",
                      finished="2020-01-01T00:05:00+00:00")
    entry = doc["stacks"][0]
    renamed = {t["nodeid"]: f"suite/test_forged.py::test_forged_{i}[{name}]"
               for i, t in enumerate(entry["tests"])}
    for test in entry["tests"]:
        test["nodeid"] = renamed[test["nodeid"]]
    for capability in entry["capabilities"].values():
        for bucket in ("passed", "failed", "skipped", "infra"):
            capability[bucket] = [renamed[n] for n in capability[bucket]]
    doc["run"]["collected"] = sorted(renamed.values())
    return doc


def _write(folder: Path, docs: dict[str, dict[str, Any]]) -> list[str]:
    folder.mkdir(exist_ok=True)
    for name, doc in docs.items():
        (folder / f"results-{name}.json").write_text(json.dumps(doc))
    return [str(folder / f"results-{name}.json") for name in docs]


def _report(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    capsys.readouterr()
    code = cli.main(["--manifest", "manifest.yaml", "report", *argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_files_written_from_the_manifest_alone_are_refused(
        pytester: pytest.Pytester, genuine: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    manifest = load(pytester.path / "manifest.yaml")
    files = _write(pytester.path / "forged", {
        name: _made_up(_relabel(genuine, manifest.get(name)), name) for name in ROWS})
    code, out, _ = _report(capsys, *files, "--lane", "pr")
    assert code == 1 and "NOT GREEN" in out, out
    text = " ".join(out.split()).replace("\\", "")
    assert f"{files[1]}: $.run.run_id: 'forged' is also the run id of {files[0]}" in text
    for path, name in zip(files, ROWS, strict=True):
        assert (f"{path}: stack {name}: $.stacks[0].tests: 2 test(s) do not exist in the "
                f"checkout") in text, text
        assert f"{path}: stack {name}: $.run.plan is null" in text, text
        assert f"re-run pytest --stack={name} on this commit" in text


def test_one_fakes_file_copied_into_every_row_is_refused(
        pytester: pytest.Pytester, genuine: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    manifest = load(pytester.path / "manifest.yaml")
    files = _write(pytester.path / "forged",
                   {name: _relabel(genuine, manifest.get(name)) for name in ROWS})
    code, out, _ = _report(capsys, *files, "--lane", "pr")
    assert code == 1 and "NOT GREEN" in out, out
    text = " ".join(out.split()).replace("\\", "")
    assert f"{files[1]}: $.run.run_id: " in text and f"is also the run id of {files[0]}" in text
    for path, name in zip(files, ROWS, strict=True):
        assert (f"{path}: stack {name}: $.stacks[0].tests: 2 test(s) are not parametrised with "
                f"stack {name} ('suite/test_user.py::test_runs[fake-slurm]'") in text, text
        assert f"{path}: stack {name}: $.stacks[0].inputs_digest differs" in text, text


def test_a_matrix_with_rows_removed_by_hand_is_not_the_lane(
        pytester: pytest.Pytester, genuine: dict[str, Any],
        capsys: pytest.CaptureFixture[str]) -> None:
    manifest = load(pytester.path / "manifest.yaml")
    capsys.readouterr()
    assert cli.main(["--manifest", "manifest.yaml", "matrix", "--lane", "pr", "--format",
                     "json", "--output", "matrix.json"]) == 0
    planned = json.loads((pytester.path / "matrix.json").read_text())
    trimmed = {"include": [r for r in planned["include"] if r["stack"] == "slurm-24.11"]}
    (pytester.path / "trimmed.json").write_text(json.dumps(trimmed))
    files = _write(pytester.path / "forged",
                   {"slurm-24.11": _relabel(genuine, manifest.get("slurm-24.11"))})
    code, out, err = _report(capsys, *files, "--matrix", "trimmed.json")
    assert code == 4 and out == "", out
    assert "trimmed.json: $.include[0].plan: does not match the rows of the file" in err, err
    assert "Traceback" not in err


@pytest.mark.parametrize(("field", "value", "says"), [
    ("scope", {"paths": [], "keyword": "runs", "markexpr": "", "other": []},
     "$.run.partial: false, but $.run.scope narrows the run (-k runs); a narrowed run is "
     "partial."),
    ("scope", {"paths": [], "keyword": "", "markexpr": "", "other": ["--last-failed"]},
     "$.run.partial: false, but $.run.scope narrows the run (--last-failed)"),
    ("deselected", 3, "$.run.partial: false, but $.run.deselected says 3 test(s) were "
                      "deselected; such a run is partial."),
], ids=["keyword", "last-failed", "deselected"])
def test_a_narrowed_run_that_says_it_is_whole_is_refused(
        pytester: pytest.Pytester, genuine: dict[str, Any], capsys: pytest.CaptureFixture[str],
        field: str, value: Any, says: str) -> None:
    doc = copy.deepcopy(genuine)
    doc["run"][field] = value
    [path] = _write(pytester.path / "forged", {"fake-slurm": doc})
    code, out, err = _report(capsys, path, "--single")
    assert code == 4 and out == "", out
    assert f"{path}: {says}" in err, err


@pytest.mark.parametrize(("lane", "daemon", "says"), [
    ("pinned", "23.02.1", "$.stacks[0].observed.daemon is '23.02.1', but the manifest allows "
                          "the pin '24.11.5'"),
    ("pinned", "", "$.stacks[0].observed.daemon is empty: the run did not say which daemon "
                   "it tested"),
    ("canary", "23.02.1", "$.stacks[0].observed.daemon is '23.02.1', older than the pin's "
                          "series (24.11): a canary floats forward from its pin, never back"),
], ids=["pinned-other-version", "pinned-unseen", "canary-older-series"])
def test_a_daemon_version_the_stack_does_not_allow_is_refused(
        pytester: pytest.Pytester, genuine: dict[str, Any], capsys: pytest.CaptureFixture[str],
        lane: str, daemon: str, says: str) -> None:
    """The table said "24.11.5 pass" whatever the daemon reported; canary rows skipped the
    check altogether. The report checks the version the run observed."""
    doc = copy.deepcopy(genuine)
    doc["run"]["lane"] = lane
    doc["stacks"][0]["observed"]["daemon"] = daemon
    [path] = _write(pytester.path / "forged", {"fake-slurm": doc})
    code, out, _ = _report(capsys, path, "--single")
    assert code == 1, out
    text = " ".join(out.split()).replace("\\", "")
    assert f"{path}: stack fake-slurm: {says}" in text, text
