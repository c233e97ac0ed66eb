"""What binds a results file to what produced it (issues 49 and 51): the report refuses a file
that is not one run of its own, of this commit, manifest, code and stack inputs, answering the
row it fills of this very plan with tests it really collected; and a matrix that is not the
lane the manifest plans here. Each refusal names the file, the field and the fix."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks import ci
from pytest_stacks.ci import binding
from pytest_stacks.manifest import Manifest, load, loads
from pytest_stacks.verdicts import merge, results
from pytest_stacks.verdicts.results import ResultsError
from tests.unit.results_docs import (
    PR,
    document,
    entry,
    lane_files,
    loaded,
    plan_of,
)


def _git(cwd: Path, *args: str) -> str:
    done = subprocess.run(["git", "-c", "user.name=t", "-c", "user.email=t@pytest-stacks.invalid",
                           *args], cwd=cwd, check=True, capture_output=True, text=True)
    return done.stdout.strip()


def _lane(manifest: Manifest, paths: list[Path]) -> merge.Compatibility:
    return merge.merge(loaded(paths), manifest=manifest,
                       expected=merge.expected_from_lane(manifest, "pr"))


def _problems_of(model: merge.Compatibility, path: Path) -> list[str]:
    return [p for p in model.problems if p.startswith(f"{path}: ")]


def test_a_lane_of_bound_files_is_green(manifest: Manifest, write: Callable[..., Path]) -> None:
    model = _lane(manifest, lane_files(manifest, write))
    assert model.problems == () and model.green


def test_two_files_of_one_run_are_refused(manifest: Manifest,
                                          write: Callable[..., Path]) -> None:
    first, second = (write(f"{name}.json", document(manifest, entry(manifest.get(name), manifest),
                                                    run_id="run-same"))
                     for name in PR[:2])
    model = _lane(manifest, [first, second, *lane_files(manifest, write, PR[2:])])
    assert model.problems == (
        f"{second}: $.run.run_id: 'run-same' is also the run id of {first}; every run writes "
        f"one file under a fresh run id, so one of them is a copy: re-run pytest "
        f"--stack=slurm-22.05 on this commit.",)


def test_a_file_answering_another_row_is_refused(manifest: Manifest,
                                                 write: Callable[..., Path]) -> None:
    plan = plan_of(manifest, "pr")
    moved = write("slurm-22.05.json", document(manifest, entry(manifest.get("slurm-22.05"),
                                                               manifest),
                                               plan=("slurm-26.05", plan)))
    model = _lane(manifest, [moved, *lane_files(manifest, write, ["slurm-26.05",
                                                                   "htcondor-23.9"])])
    [problem] = _problems_of(model, moved)
    assert problem.startswith(
        f"{moved}: stack slurm-22.05: $.run.plan.stacks is slurm-26.05: the file answers those "
        f"rows, not this one (slurm-22.05); run it as the row's job does: "
        f"PYTEST_STACKS_CI_LANE=pr PYTEST_STACKS_CI_STACK=slurm-22.05 "
        f"PYTEST_STACKS_CI_PLAN={plan} pytest --stack=slurm-22.05")


def test_a_file_of_another_lanes_plan_is_refused(manifest: Manifest,
                                                 write: Callable[..., Path]) -> None:
    other = write("slurm-22.05.json", document(
        manifest, entry(manifest.get("slurm-22.05"), manifest),
        plan=("slurm-22.05", plan_of(manifest, "full"))))
    model = _lane(manifest, [other, *lane_files(manifest, write, ["slurm-26.05",
                                                                   "htcondor-23.9"])])
    [problem] = _problems_of(model, other)
    assert "$.run.plan.digest is " in problem
    assert "the run belongs to another plan of the lane" in problem


def test_a_file_of_another_manifest_is_refused(manifest: Manifest, manifest_path: Path,
                                               write: Callable[..., Path]) -> None:
    paths = lane_files(manifest, write)
    manifest_path.write_text(manifest_path.read_text().replace("Submit jobs.", "Submit."))
    again = load(manifest_path)
    model = _lane(again, paths)
    assert not model.green
    for path in paths:
        assert any(p.startswith(f"{path}: stack ") and "$.run.manifest_digest differs from "
                   "this manifest's: the run read another manifest; re-run pytest --stack="
                   in p for p in model.problems), model.problems


def test_a_file_of_another_commit_is_refused(manifest: Manifest, manifest_path: Path,
                                             write: Callable[..., Path]) -> None:
    project = manifest_path.parent
    _git(project, "init", "-q", "-b", "main")
    _git(project, "add", "-A")
    _git(project, "commit", "-qm", "one")
    old = lane_files(manifest, write)
    _git(project, "commit", "-q", "--allow-empty", "-m", "two")
    head = _git(project, "rev-parse", "HEAD")
    model = _lane(manifest, old)
    first = json.loads(old[0].read_text())["run"]["commit"]
    assert first != head and first != binding.UNKNOWN
    assert f"{old[0]}: stack slurm-26.05: $.run.commit is {first!r}, but the checkout at " \
           f"{project} is {head!r}; re-run pytest --stack=slurm-26.05 on this commit" \
           in model.problems


def test_a_known_commit_cannot_be_checked_outside_a_checkout(
        manifest: Manifest, write: Callable[..., Path]) -> None:
    doc = document(manifest, entry(manifest.get("slurm-22.05"), manifest))
    doc["run"]["commit"] = "a" * 40
    path = write("one.json", doc)
    model = merge.merge(loaded([path]), manifest=manifest)
    assert any("$.run.commit is 'aaaa" in p and "is not a git checkout, so it cannot be "
               "checked" in p for p in model.problems), model.problems


def test_collected_tests_without_an_outcome_are_refused(manifest: Manifest,
                                                        write: Callable[..., Path]) -> None:
    """The run collected more of the stack's tests than it reports: they ran (or not) out of
    sight, and the table must not rest on the rest."""
    doc = document(manifest, entry(manifest.get("slurm-22.05"), manifest))
    hidden = "tests/test_x.py::test_y[slurm-22.05]"
    doc["run"]["collected"] = sorted([*doc["run"]["collected"], hidden])
    path = write("slurm-22.05.json", doc)
    model = _lane(manifest, [path, *lane_files(manifest, write, ["slurm-26.05",
                                                                  "htcondor-23.9"])])
    assert _problems_of(model, path) == [
        f"{path}: stack slurm-22.05: $.run.collected: 1 test(s) collected for stack "
        f"slurm-22.05 have no outcome among its tests ('{hidden}'); re-run pytest "
        f"--stack=slurm-22.05 on this commit"]


def test_a_test_the_run_did_not_collect_is_refused_when_read(
        manifest: Manifest, tmp_path: Path) -> None:
    doc = document(manifest, entry(manifest.get("slurm-22.05"), manifest))
    doc["run"]["collected"] = doc["run"]["collected"][1:]
    with pytest.raises(ResultsError, match=r"\$\.stacks\[0\]\.tests\[\d\]\.nodeid \(stack "
                                           r"slurm-22\.05\): .* is not among \$\.run\.collected"):
        results.validate(doc, tmp_path / "r.json")


def test_a_test_that_does_not_exist_here_is_refused(manifest: Manifest, tmp_path: Path,
                                                    write: Callable[..., Path]) -> None:
    paths = lane_files(manifest, write)
    (tmp_path / "tests" / "contract" / "test_status.py").write_text("def test_other(): pass\n")
    (tmp_path / "tests" / "contract" / "test_outputs.py").unlink()
    model = _lane(manifest, paths)
    gone = [p for p in model.problems if "do not exist in the checkout" in p]
    assert gone and all("2 test(s)" in p or "1 test(s)" in p for p in gone), model.problems


# ---------------------------------------------------------------- what the digests cover


def _row(manifest_path: Path, name: str) -> dict[str, Any]:
    rows = ci.matrix(load(manifest_path), "pr")["include"]
    return next(r for r in rows if r["stack"] == name)


@pytest.mark.parametrize("edit", ["option", "stack folder", "test code", "pytest settings"])
def test_the_plan_changes_with_options_stack_folders_and_code(
        manifest_path: Path, edit: str) -> None:
    """Pins left out options, the stack folder's content and the code: a row (and so what its
    results are bound to) must change with each."""
    before = _row(manifest_path, "slurm-22.05")
    project = manifest_path.parent
    if edit == "option":
        text = manifest_path.read_text().replace(
            "  - name: slurm-22.05\n", "  - name: slurm-22.05\n    options: {partition: big}\n")
        manifest_path.write_text(text)
    elif edit == "stack folder":
        (project / "stacks" / "slurm" / "entrypoint.sh").write_text("exec slurmctld -D\n")
    elif edit == "test code":
        (project / "tests" / "contract" / "test_submit.py").write_text(
            "def test_it(stack):\n    assert True\n")
    else:
        (project / "pytest.ini").write_text("[pytest]\naddopts = -k submit\n")
    after = _row(manifest_path, "slurm-22.05")
    changed = {k for k in {*before, *after} if before.get(k) != after.get(k)}
    assert changed >= {"plan"} and changed & {"inputs_digest", "code_digest"}, changed


def test_results_of_a_stack_folder_since_edited_are_refused(
        manifest: Manifest, tmp_path: Path, write: Callable[..., Path]) -> None:
    paths = lane_files(manifest, write)
    (tmp_path / "stacks" / "slurm" / "Dockerfile").write_text("FROM debian:bookworm-slim\n")
    model = _lane(manifest, paths)
    edited = [p for p in model.problems if "inputs_digest differs" in p]
    # Every compose stack: a build may read any folder under stacks/ (shared helpers).
    assert [p.split(": stack ")[1].split(":")[0] for p in edited] == ["slurm-22.05",
                                                                      "slurm-26.05",
                                                                      "htcondor-23.9"]
    assert all("its stack folder" in p and "re-run pytest --stack=" in p for p in edited)


def test_the_code_digest_covers_the_package_and_the_projects_python(tmp_path: Path) -> None:
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_a.py").write_text("def test_a(): pass\n")
    (tmp_path / ".venv" / "lib").mkdir(parents=True)
    first = binding.code_digest(tmp_path)
    (tmp_path / ".venv" / "lib" / "x.py").write_text("# not the project's\n")
    (tmp_path / "notes.txt").write_text("not code\n")
    assert binding.code_digest(tmp_path) == first
    (tmp_path / "tests" / "conftest.py").write_text("collect_ignore = ['test_a.py']\n")
    assert binding.code_digest(tmp_path) != first


# ---------------------------------------------------------------- the matrix file


def test_a_trimmed_matrix_whose_digests_were_redone_is_still_not_the_lane(
        manifest: Manifest, tmp_path: Path, write: Callable[..., Path]) -> None:
    rows = [r for r in ci.matrix(manifest, "pr")["include"] if r["stack"] != "slurm-22.05"]
    plan = binding.plan_digest(rows)
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps({"include": [{**r, "plan": plan} for r in rows]}))
    with pytest.raises(ResultsError) as caught:
        merge.expected_from_matrix(path, manifest=manifest)
    assert str(caught.value) == (
        f"{path}: $.include: is not the pr lane that {manifest.path} plans on the checkout at "
        f"{Path.cwd()}: it lacks row(s) slurm-22.05. Pass the matrix `pytest-stacks matrix "
        f"--lane pr` printed for these jobs on this commit.")


def test_a_matrix_without_binding_is_refused(manifest: Manifest, tmp_path: Path) -> None:
    rows = ci.lane_rows(manifest, "pr")
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps({"include": rows}))
    with pytest.raises(ResultsError, match=r"\$\.include\[0\]: has no commit, manifest_digest, "
                                           r"inputs_digest, code_digest, plan"):
        merge.expected_from_matrix(path, manifest=manifest)


def test_the_matrix_of_this_checkout_is_accepted(manifest: Manifest, tmp_path: Path,
                                                 write: Callable[..., Path]) -> None:
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(ci.matrix(manifest, "pr")))
    expected = merge.expected_from_matrix(path, manifest=manifest)
    model = merge.merge(loaded(lane_files(manifest, write)), manifest=manifest,
                        expected=expected)
    assert model.green, model.problems


def _runnable_here(manifest_path: Path) -> Manifest:
    """The manifest with htcondor-23.9 needing a registry, so a host offering docker alone
    plans a subset of the pr lane."""
    text = manifest_path.read_text().replace(
        "    capabilities: [submit, status, outputs]\n",
        "    capabilities: [submit, status, outputs]\n    requires: [docker, registry]\n")
    manifest_path.write_text(text)
    return load(manifest_path)


def test_a_runnable_here_plan_is_covered_and_titled_as_the_subset_it_is(
        manifest_path: Path, tmp_path: Path, write: Callable[..., Path]) -> None:
    manifest = _runnable_here(manifest_path)
    rows = ci.matrix(manifest, "pr", host=frozenset({"docker"}))["include"]
    assert [r["stack"] for r in rows] == ["slurm-26.05", "slurm-22.05"]
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps({"include": rows}))
    files = [write(f"{r['stack']}.json", document(
        manifest, entry(manifest.get(r["stack"]), manifest), plan=(r["stack"], r["plan"])))
        for r in rows]
    model = merge.merge(loaded(files), manifest=manifest,
                        expected=merge.expected_from_matrix(path, manifest=manifest))
    assert model.green, model.problems
    assert model.title == "pr lane (the rows runnable on a host offering docker)"


def test_a_runnable_here_plan_with_a_row_removed_is_refused(
        manifest_path: Path, tmp_path: Path) -> None:
    manifest = _runnable_here(manifest_path)
    rows = [r for r in ci.matrix(manifest, "pr", host=frozenset({"docker"}))["include"]
            if r["stack"] != "slurm-22.05"]
    plan = binding.plan_digest(rows)
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps({"include": [{**r, "plan": plan} for r in rows]}))
    with pytest.raises(ResultsError, match=r"it lacks row\(s\) slurm-22\.05\. Pass the matrix "
                                           r"`pytest-stacks matrix --lane pr --runnable-here`"):
        merge.expected_from_matrix(path, manifest=manifest)


def test_a_fifo_in_the_code_or_a_stack_folder_is_named_never_opened(
        manifest: Manifest, manifest_path: Path) -> None:
    """Opening a FIFO blocks until someone writes to it: a digest that opened one would hang
    the run (seen: a compose folder at a project's root, beside other tests' FIFOs)."""
    project = manifest_path.parent
    os.mkfifo(project / "tests" / "blocked.py")
    os.mkfifo(project / "stacks" / "slurm" / "pipe")
    assert binding.code_digest(project)
    assert binding.inputs_digest(manifest, manifest.get("slurm-22.05"))


def test_a_stack_folder_outside_a_stacks_folder_is_digested_alone(tmp_path: Path) -> None:
    (tmp_path / "compose.yaml").write_text("services: {}\n")
    manifest = loads("""
version: 1
capabilities: {submit: s}
backends: {slurm: {window: {anchor: "22.05", leading_edge: "26.05"}}}
stacks:
  - {name: s, backend: slurm, version: "24.11.5", provider: compose, transport: local,
     configuration: c, capabilities: [submit], lanes: [pr],
     compose: {directory: ., service: slurm}}
""", tmp_path / "manifest.yaml")
    assert binding.stack_folders(manifest.stacks[0]) == [tmp_path]


@pytest.mark.parametrize("host", [{"docker": True}, ["docker", 3]], ids=["an object", "a number"])
def test_a_garbled_host_of_a_matrix_is_refused_not_a_traceback(
        manifest: Manifest, tmp_path: Path, host: object) -> None:
    rows = [{**r, "runnable_on": host} for r in ci.matrix(manifest, "pr")["include"]]
    plan = binding.plan_digest(rows)
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps({"include": [{**r, "plan": plan} for r in rows]}))
    with pytest.raises(ResultsError, match=r"runnable_on: the rows disagree on \(or garble\)"):
        merge.expected_from_matrix(path, manifest=manifest)


def test_a_stacks_folder_above_the_manifests_is_never_read_whole(tmp_path: Path) -> None:
    """A stack whose folder lies under some ``/srv/stacks`` outside the project counts its
    own folder alone; one under the manifest's own ``stacks/`` counts that whole folder."""
    outside = tmp_path / "srv" / "stacks" / "mine"
    project = tmp_path / "project"
    assert binding._stacks_root(outside, project) == outside
    inside = project / "stacks" / "mine"
    assert binding._stacks_root(inside, project) == project / "stacks"


def test_in_a_git_checkout_the_code_is_what_git_lists(tmp_path: Path) -> None:
    """Files git ignores (a big data folder, a virtual environment) are never read."""
    import subprocess

    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    (tmp_path / ".gitignore").write_text("data/\n")
    (tmp_path / "test_a.py").write_text("def test_a():\n    pass\n")
    before = binding.code_digest(tmp_path)
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "huge.py").write_text("x = 1\n")
    assert binding.code_digest(tmp_path) == before
    (tmp_path / "test_b.py").write_text("def test_b():\n    pass\n")  # new, not ignored
    assert binding.code_digest(tmp_path) != before
