"""Infra retries in the results file (schema v4) and the report: a stack that passed after one
is read back with its retries, is never shown as a clean pass (markdown, HTML, JSON, the
overall line), and a file whose retries do not tell one story with its tests is refused."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.manifest import Manifest, load
from pytest_stacks.verdicts import merge, render, results
from pytest_stacks.verdicts.results import ResultsError
from tests.unit.results_docs import (
    document,
    entry,
    lane_files,
    loaded,
    make_project,
    nodeid,
    writer,
)

FAULT = "the stack died during the run: the stack's container p-slurm-1 (service slurm) is paused"


@pytest.fixture
def manifest(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Manifest:
    monkeypatch.chdir(tmp_path)  # the checkout the report binds to
    return load(make_project(tmp_path))


@pytest.fixture
def write(tmp_path: Path) -> Callable[..., Path]:
    return writer(tmp_path / "results")


def _retried(manifest: Manifest, name: str = "slurm-22.05") -> dict[str, Any]:
    """A stack that passed, one of whose tests a fault hit once (run again on a fresh stack)."""
    stack = entry(manifest.get(name), manifest)
    hit = nodeid(name, "submit")
    for test in stack["tests"]:
        if test["nodeid"] == hit:
            test["infra_retries"] = 1
    stack["infra_retries"] = [{"attempt": 1, "fault": FAULT, "tests": [hit]}]
    return stack


def test_a_retried_stack_reads_back_with_its_retries(manifest: Manifest,
                                                     write: Callable[..., Path]) -> None:
    doc = results.load(write("r.json", document(manifest, _retried(manifest))))
    [stack] = doc.stacks
    assert stack.verdict == "pass"
    [retry] = stack.infra_retries
    assert (retry.attempt, retry.fault, retry.tests) == (1, FAULT, (nodeid("slurm-22.05",
                                                                          "submit"),))
    assert stack.test(nodeid("slurm-22.05", "submit")).infra_retries == 1  # type: ignore[union-attr]
    assert json.loads(json.dumps(results.to_json(doc)))["stacks"][0]["infra_retries"] == [
        {"attempt": 1, "fault": FAULT, "tests": [nodeid("slurm-22.05", "submit")]}]


@pytest.mark.parametrize(("change", "expected"), [
    (lambda s: s["tests"][0].update(infra_retries=0),
     r"tests\[0\]\.infra_retries \(stack slurm-22\.05\): 0, but 1 of the stack's infra_retries "
     r"name the test"),
    (lambda s: s["infra_retries"][0]["tests"].append("tests/x.py::test_gone[slurm-22.05]"),
     r"infra_retries\[0\]\.tests \(stack slurm-22\.05\): 'tests/x\.py::test_gone\[slurm-22\.05\]'"
     r" is not among the stack's tests"),
    (lambda s: s["infra_retries"].append(dict(s["infra_retries"][0], tests=[])),
     r"infra_retries \(stack slurm-22\.05\): attempts \[1, 1\] are not in order, once each"),
    (lambda s: s.pop("infra_retries"),
     r"stacks\[0\] \(stack slurm-22\.05\): missing key\(s\): infra_retries"),
    (lambda s: s["infra_retries"][0].update(attempt=0),
     r"infra_retries\[0\]\.attempt \(stack slurm-22\.05\): 0 is out of range; expected a "
     r"whole number >= 1"),
])
def test_retries_that_do_not_tell_one_story_are_refused(
        manifest: Manifest, write: Callable[..., Path], change: Callable[[dict[str, Any]], Any],
        expected: str) -> None:
    stack = _retried(manifest)
    change(stack)
    bad = document(manifest, stack)
    with pytest.raises(ResultsError, match=expected):  # the writer refuses to write it
        write("bad.json", bad)
    hand_written = write("good.json", document(manifest, _retried(manifest)))
    hand_written.write_text(json.dumps(bad))
    with pytest.raises(ResultsError, match=expected):  # and the reader, if one is edited
        results.load(hand_written)


def _model(manifest: Manifest, write: Callable[..., Path]) -> merge.Compatibility:
    paths = [write("slurm-22.05.json", document(manifest, _retried(manifest))),
             *lane_files(manifest, write, ["slurm-26.05", "htcondor-23.9"])]
    return merge.merge(loaded(paths), manifest=manifest,
                       expected=merge.expected_from_lane(manifest, "pr"))


def test_the_report_never_shows_a_retried_pass_as_a_clean_one(
        manifest: Manifest, write: Callable[..., Path]) -> None:
    model = _model(manifest, write)
    assert model.green, "a retried pass costs a retry, not a red build"
    text = render.markdown(model)
    assert "3 stack(s) (3 pass), 1 after an infra retry" in render.overall(model)
    assert "✅ pass after 1 infra retry" in text
    assert "### Infra retries (each a stack broken and brought up fresh)" in text
    assert f"- slurm-22.05: attempt 1: {FAULT} (hit 1 test(s)" in text
    page = render.html_page(model)
    assert "pass after 1 infra retry" in page and "is paused" in page
    [row] = [r for r in render.to_dict(model)["rows"] if r["stack"] == "slurm-22.05"]
    assert row["verdict"] == "pass" and len(row["infra_retries"]) == 1
    clean = [r for r in render.to_dict(model)["rows"] if r["stack"] == "htcondor-23.9"]
    assert clean[0]["infra_retries"] == []
