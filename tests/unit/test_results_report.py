"""Results documents and `pytest-stacks report`: the verdict rules, the loader's refusals, the
fail-closed merge across jobs, the renderings, and the command's exit codes."""

from __future__ import annotations

import fnmatch
import json
import os
import re
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_stacks import ci, cli
from pytest_stacks.ci import scope
from pytest_stacks.ci.scope import Scope
from pytest_stacks.cli import report as report_cli
from pytest_stacks.manifest import Manifest, load
from pytest_stacks.verdicts import merge, render, results
from pytest_stacks.verdicts.results import ResultsError, capability_status, stack_verdict
from tests.unit.results_docs import (
    PR,
    document,
    entry,
    lane_files,
    loaded,
    nodeid,
    plan_of,
)

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(("offered", "passed", "failed", "infra", "status"), [
    (False, 0, 0, 0, "not-offered"),
    (False, 2, 1, 1, "not-offered"),
    (True, 3, 1, 1, "fail"),
    (True, 3, 0, 1, "infra"),
    (True, 3, 0, 0, "pass"),
    (True, 0, 0, 0, "unproven"),
])
def test_capability_status(offered: bool, passed: int, failed: int, infra: int,
                           status: str) -> None:
    assert capability_status(offered, passed, failed, infra) == status


@pytest.mark.parametrize(("outcomes", "statuses", "infra", "verdict"), [
    (["passed", "failed", "infra"], ["fail"], None, "infra"),
    (["passed"], ["pass"], "stack did not come up", "infra"),
    (["skipped", "skipped"], ["not-offered"], None, "not-run"),
    ([], [], None, "not-run"),
    (["passed", "failed"], ["fail", "unproven"], None, "fail"),
    (["passed", "skipped"], ["pass", "unproven"], None, "unproven"),
    (["passed", "skipped"], ["pass", "not-offered"], None, "pass"),
])
def test_stack_verdict_precedence(outcomes: list[str], statuses: list[str], infra: str | None,
                                  verdict: str) -> None:
    assert stack_verdict(outcomes, statuses, infra) == verdict


# ---------------------------------------------------------------- reading and writing


def test_a_written_document_reads_back_typed(manifest: Manifest, tmp_path: Path,
                                             write: Callable[..., Path]) -> None:
    stack = manifest.get("htcondor-23.9")
    path = write("one.json", document(manifest, entry(
        stack, manifest, outcomes={"status": "failed"},
        messages={"status": "AssertionError: held"})))
    assert [p.name for p in path.parent.iterdir()] == ["one.json"]  # no temporary left
    doc = results.load(path)
    assert doc.source == str(path) and doc.run.lane == "pinned" and doc.run.ci_lane == "pr"
    [result] = doc.stacks
    assert result.verdict == "fail" and result.pins["build_arg.HTCONDOR_VERSION"] == \
        "23.9.6+dfsg-2.1"
    assert result.capabilities["status"].failed == (nodeid("htcondor-23.9", "status"),)
    assert result.capabilities["outputs.repeatable"].status == "not-offered"
    failed = result.test(nodeid("htcondor-23.9", "status"))
    assert failed is not None and failed.message == "AssertionError: held"


def test_the_schema_is_valid_draft_2020_12_and_shipped() -> None:
    schema = results.schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"][
        "package-data"]["pytest_stacks"]
    assert any(fnmatch.fnmatch("schema/results-v3.schema.json", g) for g in globs)


def _good(manifest: Manifest) -> dict[str, Any]:
    return document(manifest, entry(manifest.get("slurm-22.05"), manifest),
                    entry(manifest.get("htcondor-23.9"), manifest))


def _edit(doc: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = [int(p) if p.isdigit() else p for p in path.split("/")]
    target: Any = doc
    for part in parents:
        target = target[part]
    if value is _DELETE:
        del target[last]
    else:
        target[last] = value


_DELETE = object()
REPEATABLE = '$.stacks[0].capabilities["outputs.repeatable"]'


@pytest.mark.parametrize(("path", "value", "expected"), [
    ("schema", "junit", r"\$\.schema: 'junit' is not a pytest-stacks results document"),
    ("schema_version", 3, r"\$\.schema_version: 3 is not supported \(the file was written by "
                          r"pytest-stacks 0\.1\.0\).*reads version 4"),
    ("schema_version", True, r"\$\.schema_version: True is not supported"),
    ("stacks/0/verdict", "ok", r"\$\.stacks\[0\]\.verdict \(stack slurm-22\.05\): 'ok' is not "
                               r"allowed\. Expected one of: \"pass\", \"fail\""),
    ("run/pytest_exit", "0", r"\$\.run\.pytest_exit: expected integer, got a string"),
    ("run/lane", "pr", r"\$\.run\.lane: 'pr' is not allowed.*Regenerate it"),
    ("stacks/1/verdikt", "pass", r"\$\.stacks\[1\] \(stack htcondor-23\.9\): unknown key\(s\): "
                                 r"verdikt\..*Did you mean 'verdict'\?"),
    ("stacks/0/observed", _DELETE, r"\$\.stacks\[0\] \(stack slurm-22\.05\): missing key\(s\): "
                                   r"observed"),
    ("stacks/0/tests/0/duration_s", -1, r"tests\[0\]\.duration_s \(stack slurm-22\.05\): -1 "
                                        r"is negative"),
    ("stacks/0/capabilities/Outputs", {"offered": True, "status": "pass", "passed": [],
                                       "failed": [], "skipped": [], "infra": []},
     r"\$\.stacks\[0\]\.capabilities \(stack slurm-22\.05\): 'Outputs' is not a capability "
     r"name"),
    ("stacks/0/capabilities/outputs.repeatable/status", "pass",
     re.escape(REPEATABLE + ".status (stack slurm-22.05): 'pass', but capability_status() "
                            "gives 'unproven'")),
    ("stacks/0/verdict", "fail", r"\$\.stacks\[0\]\.verdict \(stack slurm-22\.05\): 'fail', but "
                                 r"stack_verdict\(\) gives 'pass'"),
    ("stacks/0/capabilities/submit/passed", [], r"capabilities\.submit\.passed \(stack "
                                                r"slurm-22\.05\): must list exactly the tests "
                                                r"that require 'submit' and passed; unlisted: "
                                                r"\['tests/contract/test_submit\.py::test_it"
                                                r"\[slurm-22\.05\]'\], listed but not such a "
                                                r"test: \[\]"),
    ("stacks/0/tests/0/requires", ["submit", "kill"], r"tests\[0\]\.requires \(stack "
                                                      r"slurm-22\.05\): 'kill' has no entry"),
    ("run/started", "yesterday", r"\$\.run\.started: 'yesterday' is not an ISO 8601"),
    ("run/partial", True, r"\$\.run\.partial_reasons: partial is true but 0 reason"),
    ("stacks/1/name", "slurm-22.05", r"\$\.stacks\[1\]\.name \(stack slurm-22\.05\): the stack "
                                     r"is listed twice"),
    ("stacks/0/fake", True, r"\$\.stacks\[0\]\.fake \(stack slurm-22\.05\): true contradicts "
                            r"provider 'compose'"),
])
def test_invalid_documents_are_refused_with_file_and_path(
        manifest: Manifest, tmp_path: Path, path: str, value: Any, expected: str) -> None:
    doc = _good(manifest)
    if path == "stacks/0/capabilities/outputs.repeatable/status":
        # the 22.05 stack offers outputs.repeatable; make it unproven, then claim a pass
        entry_ = entry(manifest.get("slurm-22.05"), manifest,
                       outcomes={"outputs.repeatable": "absent"})
        doc["stacks"][0] = entry_
        doc["stacks"][0]["verdict"] = "unproven"
    _edit(doc, path, value)
    target = tmp_path / "bad.json"
    target.write_text(json.dumps(doc))
    with pytest.raises(ResultsError) as caught:
        results.load(target)
    assert str(target) in str(caught.value)
    assert re.search(expected, str(caught.value)), str(caught.value)
    with pytest.raises(ResultsError):  # the writer refuses it the same way, writing nothing
        results.dump(doc, tmp_path / "out" / "written.json")
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


def _fifo(path: Path) -> None:
    os.mkfifo(path)


@pytest.mark.parametrize(("make", "expected"), [
    (lambda p: None, r"\$: cannot be read \(No such file or directory\)\. Pass a results file"),
    (lambda p: p.mkdir(), r"\$: is a directory\. Pass a results file"),
    (_fifo, r"\$: is not a regular file"),
    (lambda p: p.write_bytes(b'{"schema": "pytest-stacks/results", "x": "\xff"}'),
     r"\$: is not UTF-8 \(byte 0xff at offset 42\)"),
    (lambda p: p.write_text('{"schema": "pytest-stacks/results", "stacks": ['),
     r":1:48: \$: not valid JSON \(Expecting value\); truncated by an upload\?"),
    (lambda p: p.write_text('{"schema": 1, "schema": 2}'),
     r"\$: not valid JSON \(key 'schema' appears twice in one object\)"),
    (lambda p: p.write_text('{"duration": NaN}'), r"\$: not valid JSON \(NaN is not a JSON"),
    (lambda p: p.write_text("[" * 100_000 + "]" * 100_000), r"\$: nested too deeply"),
    (lambda p: p.write_text("[]"), r"\$: expected a JSON object, got an array"),
])
def test_unusable_files_are_refused(tmp_path: Path, make: Callable[[Path], None],
                                    expected: str) -> None:
    path = tmp_path / "results.json"
    make(path)
    with pytest.raises(ResultsError) as caught:
        results.load(path)
    message = str(caught.value)
    assert message.startswith(str(path)) and re.search(expected, message), message


def test_dump_reports_unwritable_targets_and_keeps_symlinks(manifest: Manifest,
                                                             tmp_path: Path) -> None:
    doc, out = _good(manifest), tmp_path / "out"
    out.mkdir()
    (out / "plain").write_text("")
    with pytest.raises(ResultsError, match=r"plain/r\.json: Not a directory"):
        results.dump(doc, out / "plain" / "r.json")
    (out / "real.json").write_text("old")
    (out / "link.json").symlink_to(out / "real.json")
    results.dump(doc, out / "link.json")
    assert (out / "link.json").is_symlink()
    assert json.loads((out / "real.json").read_text()) == doc
    assert sorted(p.name for p in out.iterdir()) == ["link.json", "plain", "real.json"]


def test_oversized_files_are_refused_before_reading(tmp_path: Path) -> None:
    path = tmp_path / "huge.json"
    with open(path, "wb") as handle:
        handle.truncate(results.MAX_BYTES + 1)  # sparse: nothing is really written
    with pytest.raises(ResultsError, match=r"huge\.json: \$: is larger than 16 MiB"):
        results.load(path)


def test_many_problems_are_reported_at_once_but_capped(manifest: Manifest,
                                                       tmp_path: Path) -> None:
    doc = _good(manifest)
    for test in doc["stacks"][0]["tests"]:
        test["outcome"] = "maybe"
    doc["stacks"][1]["tests"] = [dict(doc["stacks"][1]["tests"][0], outcome="x")] * 30
    with pytest.raises(ResultsError) as caught:
        results.validate(doc, "doc.json")
    assert len(caught.value.problems) == 21
    assert caught.value.problems[-1] == "... and 14 more problem(s)"
    assert all(p.startswith("doc.json: $.stacks[") for p in caught.value.problems[:-1])


JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
                    | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3)
                    | st.dictionaries(st.text(max_size=8), inner, max_size=3), max_leaves=6)


def _paths(value: Any, at: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    yield at
    items = value.items() if isinstance(value, dict) else \
        enumerate(value) if isinstance(value, list) else ()
    for key, child in items:
        yield from _paths(child, (*at, key))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_any_field_replaced_fails_only_cleanly(manifest: Manifest, data: st.DataObject
                                                    ) -> None:
    """Whatever value lands wherever in a valid document, the verdict is valid or a
    ResultsError naming the file: never another exception."""
    doc = _good(manifest)
    at = data.draw(st.sampled_from(list(_paths(doc))[1:]))
    target: Any = doc
    for key in at[:-1]:
        target = target[key]
    target[at[-1]] = data.draw(JSON)
    try:
        results.validate(doc, "fuzz.json")
    except ResultsError as exc:
        assert all(p.startswith(("fuzz.json: $", "... and ")) for p in exc.problems), \
            exc.problems


# ---------------------------------------------------------------- merging


def test_exact_coverage_is_green_and_ordered_by_window(manifest: Manifest,
                                                       write: Callable[..., Path]) -> None:
    fake = write("fake.json", document(manifest, entry(manifest.get("fake-slurm"), manifest)))
    docs = loaded([*lane_files(manifest, write), fake])
    model = merge.merge(docs, manifest=manifest,
                        expected=merge.expected_from_lane(manifest, "pr"))
    assert model.problems == () and model.green
    assert [(r.stack, r.role, r.lane) for r in model.rows] == [
        ("slurm-22.05", "anchor", "pr"), ("fake-slurm", "supported", "fake"),
        ("slurm-26.05", "leading-edge", "pr"), ("htcondor-23.9", "leading-edge", "pr")]
    assert model.capabilities == ("submit", "status", "outputs", "outputs.repeatable")
    cells = model.rows[-1].cells
    assert [cells[c].text for c in model.capabilities] == ["pass 1", "pass 1", "pass 1",
                                                           "not offered"]


def test_a_missing_job_is_a_problem_and_a_row(manifest: Manifest,
                                              write: Callable[..., Path]) -> None:
    docs = loaded(lane_files(manifest, write, ["slurm-22.05", "htcondor-23.9"]))
    model = merge.merge(docs, manifest=manifest,
                        expected=merge.expected_from_lane(manifest, "pr"))
    assert not model.green
    assert model.problems == (f"the pr lane of {manifest.path}: stack slurm-26.05: no results. "
                              f"Did its job run and upload its results file?",)
    [missing] = [r for r in model.rows if r.verdict == "missing"]
    assert missing.stack == "slurm-26.05" and missing.version == "26.05.5"
    assert {c.text for c in missing.cells.values()} == {"no result"}


def test_a_stack_reported_twice_is_a_problem(manifest: Manifest,
                                             write: Callable[..., Path]) -> None:
    paths = lane_files(manifest, write)
    again = write("again.json", document(manifest, entry(manifest.get("slurm-22.05"), manifest)))
    model = merge.merge(loaded([*paths, again]), manifest=manifest,
                        expected=merge.expected_from_lane(manifest, "pr"))
    assert model.problems == (f"{again}: stack slurm-22.05: also reported by {paths[1]}; each "
                              f"stack must come from exactly one job.",)
    assert len(model.rows) == 3


def test_unexpected_stacks_are_problems_but_fakes_are_extra_rows(
        manifest: Manifest, write: Callable[..., Path]) -> None:
    extra = write("full-only.json",
                  document(manifest, entry(manifest.get("slurm-24.11"), manifest)))
    model = merge.merge(loaded([*lane_files(manifest, write), extra]), manifest=manifest,
                        expected=merge.expected_from_lane(manifest, "pr"))
    assert model.problems == (f"{extra}: stack slurm-24.11: not in the pr lane of "
                              f"{manifest.path}. Report only the lane's results, or plan the "
                              f"lane to hold it.",)


def test_pins_that_differ_from_the_manifest_are_named(manifest: Manifest,
                                                      write: Callable[..., Path]) -> None:
    wrong = entry(manifest.get("slurm-22.05"), manifest)
    wrong["pins"]["build_arg.SLURM_VERSION"] = "22.05.8-4+deb12u2"
    del wrong["pins"]["base_image"]
    paths = lane_files(manifest, write, ["slurm-26.05", "htcondor-23.9"])
    paths.append(write("old.json", document(manifest, wrong)))
    model = merge.merge(loaded(paths), manifest=manifest,
                        expected=merge.expected_from_lane(manifest, "pr"))
    assert model.problems == (
        f"{paths[-1]}: stack slurm-22.05: pin base_image differs from the manifest's: expected "
        f"'debian:bookworm-slim', got (absent)",
        f"{paths[-1]}: stack slurm-22.05: pin build_arg.SLURM_VERSION differs from the "
        f"manifest's: expected '22.05.8-4+deb12u3', got '22.05.8-4+deb12u2'")


def test_row_fields_that_differ_from_the_plan_are_named(manifest: Manifest,
                                                       write: Callable[..., Path]) -> None:
    moved = entry(manifest.get("htcondor-23.9"), manifest)
    moved.update(transport="local", role="anchor")
    paths = [*lane_files(manifest, write, ["slurm-26.05", "slurm-22.05"]),
             write("moved.json", document(manifest, moved))]
    model = merge.merge(loaded(paths), manifest=manifest,
                        expected=merge.expected_from_lane(manifest, "pr"))
    assert model.problems == (
        f"{paths[-1]}: stack htcondor-23.9: role is 'anchor', expected 'leading-edge'",
        f"{paths[-1]}: stack htcondor-23.9: transport is 'local', expected 'bindings'")


def test_lane_partial_and_exit_problems(manifest: Manifest,
                                        write: Callable[..., Path]) -> None:
    canary = write("canary.json", document(
        manifest, entry(manifest.get("slurm-22.05"), manifest, lane="canary"), lane="canary",
        ci_lane="full", plan=("slurm-22.05", plan_of(manifest, "pr"))))
    partial = write("partial.json", document(
        manifest, entry(manifest.get("slurm-26.05"), manifest), partial=("-k 'outputs'",),
        exit_code=2, scope=Scope(keyword="outputs"), run_id="run-1"))
    paths = [canary, partial, *lane_files(manifest, write, ["htcondor-23.9"])]
    model = merge.merge(loaded(paths), manifest=manifest,
                        expected=merge.expected_from_lane(manifest, "pr"))
    assert model.problems == (
        f"{partial}: run run-1: pytest exited 2 although every stack passed (a collection "
        f"error, an interruption, or a failure outside the stacks).",
        f"{canary}: stack slurm-22.05: pin build_arg.SLURM_VERSION differs from the manifest's:"
        f" expected '22.05.8-4+deb12u3', got ''",
        f"{canary}: stack slurm-22.05: ran with the canary references, but the pr lane runs "
        f"the pinned ones",
        f"{canary}: stack slurm-22.05: came from the full lane, not the pr lane",
        f"{partial}: stack slurm-26.05: partial run: -k outputs (-k 'outputs'), and the plan "
        f"named no selection; a table needs the whole suite, or a plan that names the "
        f"selection (pytest-stacks matrix --tests)")


def test_failures_infra_and_unproven_are_not_green(manifest: Manifest,
                                                   write: Callable[..., Path]) -> None:
    overrides: dict[str, dict[str, Any]] = {
        "slurm-22.05": {"outcomes": {"outputs": "failed", "status": "failed"},
                        "messages": {"outputs": "AssertionError: b'hi' != b''\nmore"}},
        "slurm-26.05": {"outcomes": {"submit": "infra"}, "infra": "slurmctld did not start\nlog",
                        "problems": ("teardown could not be proven",)},
        "htcondor-23.9": {"outcomes": {"outputs": "skipped"}},
    }
    paths = lane_files(manifest, write, overrides=overrides)
    model = merge.merge(loaded(paths), manifest=manifest,
                        expected=merge.expected_from_lane(manifest, "pr"))
    by = {r.stack: r for r in model.rows}
    assert (by["slurm-22.05"].verdict, by["slurm-26.05"].verdict,
            by["htcondor-23.9"].verdict) == ("fail", "infra", "unproven")
    assert by["slurm-22.05"].cells["outputs"].text == "fail 1/1"
    assert by["slurm-22.05"].cells["outputs"].failures == (merge.Failure(
        nodeid("slurm-22.05", "outputs"), "failed", "AssertionError: b'hi' != b''\nmore"),)
    assert by["slurm-26.05"].cells["submit"].text == "infra 1/1"
    assert by["htcondor-23.9"].cells["outputs"].text == "unproven · 1 skipped"
    assert model.problems == (  # in table order
        f"{paths[1]}: stack slurm-22.05: fail: 2 test(s) ({nodeid('slurm-22.05', 'status')}, "
        f"{nodeid('slurm-22.05', 'outputs')}) failed",
        f"{paths[0]}: stack slurm-26.05: infra: slurmctld did not start",
        f"{paths[0]}: stack slurm-26.05: teardown could not be proven",
        f"{paths[2]}: stack htcondor-23.9: unproven: no test proved outputs")


def test_capabilities_must_match_the_manifest(manifest: Manifest,
                                              write: Callable[..., Path]) -> None:
    stack = manifest.get("htcondor-23.9")
    wrong = entry(stack, manifest, outcomes={"outputs": "skipped"})
    wrong["capabilities"]["outputs"].update(offered=False, status="not-offered")
    wrong["verdict"] = "pass"  # as a run with a manifest without it would have said
    path = write("h.json", document(manifest, wrong))
    model = merge.merge([results.load(path)], manifest=manifest)
    assert model.problems == (f"{path}: stack htcondor-23.9: capability outputs is offered in "
                              f"the manifest but not in the results",)


def test_single_job_summary_checks_pins_and_verdict_but_not_coverage(
        manifest: Manifest, write: Callable[..., Path]) -> None:
    [path] = lane_files(manifest, write, ["slurm-24.11"])
    model = merge.merge([results.load(path)], manifest=manifest)
    assert model.green and model.title == "single job" and model.rows[0].lane == "pr"
    failing = write("f.json", document(manifest, entry(manifest.get("slurm-24.11"), manifest,
                                             outcomes={"submit": "failed"})))
    assert not merge.merge([results.load(failing)], manifest=manifest).green
    unknown = document(manifest, entry(manifest.get("slurm-24.11"), manifest))
    unknown["stacks"][0]["name"] = "slurm-99"
    model = merge.merge([results.load(write("u.json", unknown))], manifest=manifest)
    assert model.problems[0].endswith("stack slurm-99: not in manifest "
                                      f"{manifest.path}, so its pins cannot be checked. Pass "
                                      f"the manifest the run used (--manifest).")


def test_the_matrix_file_is_the_expected_rows(manifest: Manifest, tmp_path: Path,
                                              write: Callable[..., Path]) -> None:
    path = tmp_path / "matrix.json"
    path.write_text(json.dumps(ci.matrix(manifest, "pr")))
    expected = merge.expected_from_matrix(path)
    assert expected.lane == "pr"
    assert [r["stack"] for r in expected.rows] == ["htcondor-23.9", "slurm-26.05", "slurm-22.05"]
    docs = loaded(lane_files(manifest, write, ["slurm-22.05"]))
    model = merge.merge(docs, manifest=manifest, expected=expected)
    assert [p.split(": no results")[0] for p in model.problems] == [
        f"{path}: stack slurm-26.05", f"{path}: stack htcondor-23.9"]
    with pytest.raises(ResultsError, match=r"matrix\.json: \$\.include\[\*\]\.lane: the matrix "
                                           r"is the pr lane's, not the full lane's"):
        merge.expected_from_matrix(path, "full")


@pytest.mark.parametrize(("content", "expected"), [
    ('{"include": []}', r"\$\.include: has no rows"),
    ('[{"stack": "x"}]', r"\$: expected an object \{\"include\": \[rows\]\}"),
    ('{"include": [{"stack": "a", "lane": "pr", "inputs": {"version": 1}}]}',
     r"\$\.include\[0\]\.inputs: expected an object of strings"),
    ('{"include": [{"stack": "a", "lane": "nightly", "inputs": {}}]}',
     r"\$\.include\[0\]\.lane: 'nightly' is not one of pr, full, canary"),
])
def test_bad_matrix_files_are_refused(tmp_path: Path, content: str, expected: str) -> None:
    path = tmp_path / "matrix.json"
    path.write_text(content)
    with pytest.raises(ResultsError, match=expected):
        merge.expected_from_matrix(path)


# ---------------------------------------------------------------- rendering


def _failing_model(manifest: Manifest, write: Callable[..., Path]) -> merge.Compatibility:
    evil = "slurm-22.05-<script>alert(1)</script>|x"
    stack = manifest.get("slurm-22.05")
    bad = entry(stack, manifest, outcomes={"outputs": "failed"},
                messages={"outputs": "assert '<b>' == 'a|b'\nsecond line"})
    for test in bad["tests"]:
        if test["outcome"] == "failed":
            test["nodeid"] = f"tests/test_x.py::test_y[{evil}]"
    bad["capabilities"]["outputs"]["failed"] = [f"tests/test_x.py::test_y[{evil}]"]
    paths = [write("bad.json", document(manifest, bad)),
             *lane_files(manifest, write, ["htcondor-23.9"])]
    return merge.merge(loaded(paths), manifest=manifest,
                       expected=merge.expected_from_lane(manifest, "pr"))


def _table(markdown: str) -> list[list[str]]:
    lines = [ln for ln in markdown.splitlines() if ln.startswith("| ")]
    return [re.split(r"(?<!\\)\|", ln.strip())[1:-1] for ln in lines]


def test_markdown_has_the_verdict_the_table_and_the_problems(
        manifest: Manifest, write: Callable[..., Path]) -> None:
    text = render.markdown(_failing_model(manifest, write))
    lines = text.splitlines()
    assert lines[0] == "## pytest-stacks compatibility: pr lane"
    assert lines[2] == ("**❌ NOT GREEN: pr lane, 3 stack(s) (1 fail, 1 missing, 1 pass), 2 "
                        "problem(s)**")
    header, *rows = _table(text)
    assert [c.strip() for c in header][-4:] == ["submit", "status", "outputs",
                                                "outputs.repeatable"]
    assert [[c.strip() for c in r][:7] for r in rows] == [
        ["slurm", "22.05.8 observed via the local client", "anchor", "slurm-22.05",
         "pr · compose · local · single-node", "the default tests · 0 deselected", "❌ fail"],
        ["slurm", "26.05.5", "leading-edge", "slurm-26.05", "pr · compose · local · "
                                                            "single-node", "no run", "⛔ missing"],
        ["htcondor", "23.9.6 observed via the bindings client", "leading-edge", "htcondor-23.9",
         "pr · compose · bindings · single-node", "the default tests · 0 deselected",
         "✅ pass"]]
    assert [c.strip() for c in rows[0][7:]] == ["✅ pass 1", "✅ pass 1", "❌ fail 1/1",
                                                "✅ pass 1"]
    assert "### Problems (2)" in lines
    assert "&lt;script&gt;alert(1)&lt;/script&gt;\\|x" in text and "<script>" not in text
    assert ": assert '&lt;b&gt;' == 'a\\|b'" in text and "second line" not in text


def test_html_is_one_escaped_self_contained_page(manifest: Manifest,
                                                 write: Callable[..., Path]) -> None:
    page = render.html_page(_failing_model(manifest, write))
    assert page.startswith("<!DOCTYPE html>") and "<style>" in page
    assert not re.search(r"<script|<link|\bsrc=|@import|url\(", page)
    assert page.count("<tr class=\"row ") == 3
    assert "<tr class=\"row verdict-fail\" data-stack=\"slurm-22.05\">" in page
    assert ("<td class=\"cell fail\" data-capability=\"outputs\"><details><summary>fail 1/1"
            "</summary>") in page
    assert ("<code>tests/test_x.py::test_y[slurm-22.05-&lt;script&gt;alert(1)&lt;/script&gt;|x]"
            "</code>") in page
    assert "<pre>assert &#x27;&lt;b&gt;&#x27; == &#x27;a|b&#x27;\nsecond line</pre>" in page
    assert "<p id=\"overall\" class=\"overall not-green\">NOT GREEN: pr lane" in page
    assert page.count("<li><span class=") == len(render.LEGEND)


def test_json_is_the_merged_model(manifest: Manifest, write: Callable[..., Path]) -> None:
    model = _failing_model(manifest, write)
    data = json.loads(render.render(model, "json"))
    assert data["green"] is False and data["problems"] == list(model.problems)
    assert [r["stack"] for r in data["rows"]] == ["slurm-22.05", "slurm-26.05", "htcondor-23.9"]
    assert data["rows"][0]["cells"]["outputs"]["failures"][0]["message"].startswith("assert")
    assert data["rows"][1]["cells"]["submit"] == {
        "status": "missing", "text": "no result", "passed": 0, "failed": 0, "skipped": 0,
        "infra": 0, "failures": []}


# ---------------------------------------------------------------- the command


def _commands(parser: Any) -> Any:
    """The parser's subcommand registry (argparse keeps it private)."""
    return parser._subparsers._group_actions[0]


WIRED = any(kind is ResultsError and code == 4 for kind, code in cli.EXIT_CODES) and \
    "report" in _commands(cli.build_parser()).choices


@pytest.fixture
def run(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        manifest_path: Path) -> Iterator[Callable[..., tuple[int, str, str]]]:
    """``pytest-stacks --manifest M report ...``. Until cli/__init__.py registers the command
    and maps ResultsError to exit 4, both are patched in here (test_report_is_wired says so)."""
    if not WIRED:
        build = cli.build_parser

        def wired() -> Any:
            parser = build()
            report_cli.register(_commands(parser))
            return parser

        monkeypatch.setattr(cli, "build_parser", wired)
        monkeypatch.setattr(cli, "EXIT_CODES", ((ResultsError, 4), *cli.EXIT_CODES))

    def _run(*argv: str) -> tuple[int, str, str]:
        code = cli.main(["--manifest", str(manifest_path), "report", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    yield _run


@pytest.mark.skipif(not WIRED, reason="not wired yet: cli/__init__.py needs "
                                      "report.register(sub) and (ResultsError, 4) in EXIT_CODES")
def test_report_is_wired() -> None:
    assert cli.exit_code(ResultsError(["x"])) == 4


def test_green_lane_exits_0(run: Callable[..., tuple[int, str, str]], manifest: Manifest,
                            write: Callable[..., Path]) -> None:
    paths = [str(p) for p in lane_files(manifest, write)]
    code, out, err = run(*paths, "--lane", "pr")
    assert (code, err) == (0, "")
    assert "**✅ GREEN: pr lane, 3 stack(s) (3 pass), 0 problem(s)**" in out


def test_not_green_exits_1_and_still_writes_the_table(
        run: Callable[..., tuple[int, str, str]], manifest: Manifest, tmp_path: Path,
        write: Callable[..., Path]) -> None:
    paths = [str(p) for p in lane_files(manifest, write, ["slurm-22.05", "htcondor-23.9"])]
    out_file = tmp_path / "report.html"
    code, out, err = run(*paths, "--lane", "pr", "--format", "html", "--output", str(out_file))
    assert code == report_cli.NOT_GREEN_EXIT == 1 and out == ""
    assert "data-stack=\"slurm-26.05\"" in out_file.read_text()
    assert err.splitlines() == [
        "pytest-stacks report: NOT GREEN: pr lane, 3 stack(s) (1 missing, 2 pass), 1 problem(s)",
        f"  the pr lane of {manifest.path}: stack slurm-26.05: no results. Did its job run and "
        f"upload its results file?"]


def test_bad_results_files_exit_4_naming_each_file(
        run: Callable[..., tuple[int, str, str]], tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text("{")
    (tmp_path / "b.json").write_text('{"schema": "pytest-stacks/results", "schema_version": 9}')
    code, out, err = run(str(tmp_path / "a.json"), str(tmp_path / "b.json"), "--lane", "pr")
    assert code == 4 and out == "" and "Traceback" not in err
    assert err.startswith(f"pytest-stacks report: {tmp_path / 'a.json'}:1:2: $: not valid JSON")
    assert f"{tmp_path / 'b.json'}: $.schema_version: 9 is not supported" in err


def test_single_and_matrix_modes(run: Callable[..., tuple[int, str, str]],
                                 manifest: Manifest, tmp_path: Path,
                                 write: Callable[..., Path]) -> None:
    [one] = lane_files(manifest, write, ["slurm-24.11"])
    code, out, _ = run(str(one), "--single", "--format", "json")
    assert code == 0 and json.loads(out)["title"] == "single job"
    matrix = tmp_path / "matrix.json"
    matrix.write_text(json.dumps(ci.matrix(manifest, "full")))
    code, out, err = run(str(one), "--matrix", str(matrix), "--format", "json")
    data = json.loads(out)
    assert code == 1 and data["green"] is False and len(data["problems"]) == 5
    assert "stack slurm-22.05: no results" in err
    assert "stack slurm-24.11: $.run.plan is null: the run answers no row of the full lane's " \
           "plan; run it as the row's job does: PYTEST_STACKS_CI_LANE=full " \
           "PYTEST_STACKS_CI_STACK=slurm-24.11 PYTEST_STACKS_CI_PLAN=" in err


@pytest.mark.parametrize("argv", [("--single", "--lane", "pr"), ()])
def test_usage_errors_exit_2(run: Callable[..., tuple[int, str, str]], manifest: Manifest,
                             write: Callable[..., Path], argv: tuple[str, ...]) -> None:
    [one] = lane_files(manifest, write, ["slurm-22.05"])
    code, _, err = run(str(one), *argv)
    assert code == 2 and err.startswith("pytest-stacks report: ")
    assert "--single" in err and "Traceback" not in err


def test_a_canary_report_of_an_empty_lane_exits_3(run: Callable[..., tuple[int, str, str]],
                                                  manifest: Manifest, manifest_path: Path,
                                                  write: Callable[..., Path]) -> None:
    manifest_path.write_text(manifest_path.read_text().replace(
        '    canary: {build_args: {SLURM_VERSION: ""}}\n', ""))
    [one] = lane_files(manifest, write, ["slurm-22.05"])
    code, _, err = run(str(one), "--lane", "canary")
    assert code == ci.EMPTY_LANE_EXIT and "the canary lane is empty" in err


# ---------------------------------------------------------------- planned selections

PLANNED = "tests/contract tests/backend"


def _planned_lane(manifest: Manifest, write: Callable[..., Path], ran: Scope,
                  reasons: tuple[str, ...], plan: str) -> tuple[merge.Compatibility, Path]:
    """The pr lane with every job running the scope ``ran``, checked against a matrix whose
    rows were planned with ``plan``."""
    rows = ci.matrix(manifest, "pr", plan)
    paths = [write(f"{name}.json", document(manifest, entry(manifest.get(name), manifest),
                                            partial=reasons, scope=ran, planned_tests=plan))
             for name in PR]
    path = paths[0].parent / "matrix.json"
    path.write_text(json.dumps(rows))
    model = merge.merge(loaded(paths), manifest=manifest,
                        expected=merge.expected_from_matrix(path))
    return model, paths[0]


def test_a_run_of_exactly_the_planned_tests_stands_in_the_table(
        manifest: Manifest, write: Callable[..., Path]) -> None:
    ran = Scope(paths=("tests/backend", "./tests/contract/"))
    model, _ = _planned_lane(manifest, write, ran, ("only tests/backend tests/contract",),
                             PLANNED)
    assert model.problems == () and model.green


@pytest.mark.parametrize(("ran", "reasons", "says"), [
    (Scope(paths=("tests/contract", "tests/backend"), keyword="completion"),
     ("-k 'completion'", "only tests/contract tests/backend"),
     "ran tests/contract tests/backend -k completion (-k 'completion'; only tests/contract "
     "tests/backend), but the plan named tests/contract tests/backend: run exactly the "
     "planned tests"),
    (Scope(paths=("tests/contract", "tests/backend"), other=("--deselect=tests/x.py::t",)),
     ("--deselect=tests/x.py::t", "only tests/contract tests/backend"),
     "ran tests/contract tests/backend --deselect=tests/x.py::t"),
    (Scope(paths=("tests/contract",)), ("only tests/contract",),
     "ran tests/contract (only tests/contract), but the plan named tests/contract "
     "tests/backend"),
    (Scope(paths=("tests/contract", "tests/backend")), ("the run ended early (exit 2)",),
     "the run ended early (exit 2): its tests did not all run, whatever was planned"),
    (Scope(paths=("tests/contract", "tests/backend")),
     ("only tests/backend tests/contract", "3 test(s) deselected by a plugin or conftest"),
     "3 test(s) deselected by a plugin or conftest: no plan names such a narrowing"),
])
def test_a_selection_the_plan_did_not_name_is_refused_naming_job_and_selection(
        manifest: Manifest, write: Callable[..., Path], ran: Scope, reasons: tuple[str, ...],
        says: str) -> None:
    model, first = _planned_lane(manifest, write, ran, reasons, PLANNED)
    assert not model.green
    assert any(p.startswith(f"{first}: stack {PR[0]}: {says}") for p in model.problems), \
        model.problems


def test_one_jobs_summary_takes_the_scope_its_plan_named(
        run: Callable[..., tuple[int, str, str]], manifest: Manifest,
        write: Callable[..., Path]) -> None:
    """The row a stack job writes to its own summary (stacks.yml): seen under act, a job that
    ran exactly its planned tests was called partial, because --single knew no plan."""
    name = PR[0]
    path = write(f"{name}.json", document(manifest,
        entry(manifest.get(name), manifest), partial=("only tests/contract tests/backend",),
        scope=Scope(paths=("tests/contract", "tests/backend"))))
    code, _, err = run(str(path), "--single", "--format", "json")
    assert code == 1 and "the plan named no selection" in err
    code, out, err = run(str(path), "--single", "--tests", PLANNED, "--format", "json")
    assert code == 0 and json.loads(out)["green"], err
    code, _, err = run(str(path), "--single", "--tests", "tests/contract", "--format", "json")
    assert code == 1 and "but the plan named tests/contract" in err
    code, _, err = run(str(path), "--lane", "pr", "--tests", PLANNED)
    assert code == 2 and "use it with --single" in err


def test_a_plan_may_name_paths_k_and_m_only() -> None:
    assert scope.planned("tests/a './tests/b/' -k 'x or y' -m slow") == Scope(
        ("tests/a", "tests/b"), "x or y", "slow")
    assert scope.planned("-kfoo") == Scope(keyword="foo")
    for bad in ("tests --deselect tests/x.py::t", "-k a -k b", "-k", "tests 'unclosed"):
        with pytest.raises(scope.ScopeError):
            scope.planned(bad)


def test_the_matrix_carries_the_planned_tests_and_refuses_other_options(
        manifest: Manifest) -> None:
    rows = ci.matrix(manifest, "pr", PLANNED)["include"]
    assert {r["tests"] for r in rows} == {PLANNED}
    with pytest.raises(ci.LaneError, match="a plan may name paths"):
        ci.matrix(manifest, "pr", "tests --lf")


def test_runnable_here_keeps_only_the_stacks_whose_requires_the_host_offers() -> None:
    manifest = load(ROOT / "manifest.yaml")
    everything = {r["stack"] for r in ci.matrix(manifest, "full")["include"]}
    here = ci.matrix(manifest, "full", host=frozenset({"docker"}))["include"]
    assert {r["stack"] for r in here} < everything
    assert all(set(r["runner_needs"]) <= {"docker"} for r in here)
    machine = {r["stack"] for r in ci.matrix(manifest, "full", host=frozenset(
        {"docker", "go"}))["include"]}
    assert "k8s-1.36-node-mpi-0.8" in machine and "htcondor-25-mini" not in machine
    with pytest.raises(ci.EmptyLaneError, match="this host offers only nothing"):
        ci.matrix(manifest, "full", host=frozenset())


def test_a_cell_shows_the_tests_skipped_at_run_time() -> None:
    """A test that requires an offered capability and skips at run time proved nothing; the
    cell says so instead of showing only the passes."""
    assert merge.Cell("pass", passed=2, skipped=1).text == "pass 2 · 1 skipped"
    assert merge.Cell("fail", passed=1, failed=1, skipped=3).text == "fail 1/2 · 3 skipped"
    assert merge.Cell("pass", passed=2).text == "pass 2"
    assert merge.Cell("not-offered", skipped=4).text == "not offered"


def test_a_fakes_version_is_what_it_claims_never_observed() -> None:
    """A double echoes its pin: its version proves nothing about a daemon, and no rendering
    may call it observed."""
    fake = merge.Row("fake-slurm", "slurm", "24.11.5", "leading-edge", "pr", "fake", "local",
                     "single-node", True, "pass", observed_daemon="24.11.5")
    model = merge.Compatibility("t", None, (), (fake,), (), ())
    [row] = _table(render.markdown(model))[1:]
    assert row[1].strip() == "24.11.5 (fake, claims 24.11.5)"
    page = render.html_page(model)
    assert "fake, claims 24.11.5" in page and "observed 24.11.5" not in page
    data = render.to_dict(model)["rows"][0]
    assert data["observed"] is None
    assert data["claimed"] == {"daemon": "24.11.5", "client": ""}


def test_the_version_cell_shows_the_observed_daemon_and_the_client_that_saw_it() -> None:
    """An existing site on 22.05.11 under a range read "24.11.5 pass" (the manifest's pin):
    the cell must say what the run saw, and through which client."""
    site = merge.Row("site-slurm", "slurm", "24.11.5", "leading-edge", "site", "existing",
                     "ssh", "site", False, "pass", observed_daemon="22.05.11",
                     observed_client="22.05.11")
    pinned = merge.Row("slurm-24.11", "slurm", "24.11.5", "leading-edge", "pr", "compose",
                       "local", "single-node", False, "pass", observed_daemon="24.11.5",
                       observed_client="24.11.5")
    model = merge.Compatibility("t", None, (), (site, pinned), (), ())
    rows = _table(render.markdown(model))[1:]
    assert [r[1].strip() for r in rows] == [
        "22.05.11 observed via the ssh client 22.05.11 (pin 24.11.5)",
        "24.11.5 observed via the local client 24.11.5"]
    page = render.html_page(model)
    assert "<td class=\"version\">22.05.11 observed via the ssh client 22.05.11 (pin " \
           "24.11.5)</td>" in page
    data = render.to_dict(model)["rows"][0]
    assert data["observed"] == {"daemon": "22.05.11", "client": "22.05.11"}
    assert "claimed" not in data


def test_the_report_names_the_recording_each_fake_was_checked_against(
        manifest: Manifest, write: Callable[..., Path]) -> None:
    stack = entry(manifest.get("htcondor-23.9"), manifest)
    stack["parity"] = "checked against htcondor-23.9 23.9.6 recorded 2026-12-02T00:57:00Z (passed)"
    model = merge.merge(loaded([write("one.json", document(manifest, stack))]), manifest=manifest)
    text = render.markdown(model)
    assert ("- htcondor-23.9: checked against htcondor-23.9 23.9.6 recorded "
            "2026-12-02T00:57:00Z (passed)") in text.splitlines()
    assert "parity: checked against htcondor-23.9" in render.html_page(model)
    assert render.to_dict(model)["rows"][0]["parity"].endswith("(passed)")
    plain = entry(manifest.get("htcondor-23.9"), manifest)
    assert "### Parity" not in render.markdown(
        merge.merge(loaded([write("two.json", document(manifest, plain))]), manifest=manifest))
