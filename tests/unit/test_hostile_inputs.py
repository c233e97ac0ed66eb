"""Files and arguments a person (or a crash, or a hostile neighbour) can put in front of the
command line: each is refused naming the file, the field and the fix, with a non-zero exit and
no traceback, and nothing outside the project's own folders is ever touched (issue 49).

The cases: a kept-run record whose ``run_dir`` leaves the runs root (``down``), a report whose
``--output`` is one of its inputs, a corrupt ``owner.json`` of a dead run, a kubeconfig whose
secrets could be echoed, a kind owner record naming a program to run, a timings "file" that is
a FIFO, a ``record`` that recorded nothing, a mistyped stack name for ``down``, and a results
file with a number JSON cannot hold.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import subprocess
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks import ci, cli, gobuild, places
from pytest_stacks.lifecycle import rundir
from pytest_stacks.manifest import load
from pytest_stacks.providers import kind_owners, reaper
from pytest_stacks.providers.base import RunContext
from pytest_stacks.verdicts import merge, render, results
from tests.unit.results_docs import derived, document

REPO = Path(__file__).resolve().parents[2]
SECRET = "SUPERSECRET-0123456789"


pytestmark = pytest.mark.usefixtures("private_places")  # tests/unit/conftest.py


def _run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = cli.main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


class Recorder:
    """A runner that records every command and runs none."""

    def __init__(self) -> None:
        self.calls: list[list[str]] = []

    def __call__(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        return subprocess.CompletedProcess(list(argv), 0, "", "")


# ---------------------------------------------------------------- 1. down's run_dir


def _victim(tmp_path: Path) -> Path:
    victim = tmp_path / "victim"
    victim.mkdir(exist_ok=True)
    (victim / "precious").write_text("keep me")
    return victim


def _no_engine(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    swept: list[str] = []

    def sweep_run(run_id: str) -> list[str]:
        swept.append(run_id)
        return []

    monkeypatch.setattr(reaper, "sweep_run", sweep_run)
    monkeypatch.setattr(kind_owners, "reap", lambda *a, **k: [])
    monkeypatch.setattr(reaper, "inventory", lambda *a, **k: {})  # an engine holding nothing
    return swept


@pytest.mark.parametrize("where", ["dot-dot", "the root", "the up root", "a symlink out",
                                   "elsewhere"])
def test_down_never_removes_a_folder_outside_the_runs_root(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        where: str) -> None:
    root = places.runs_root()
    victim = _victim(tmp_path)
    other = root / "20260101000000-aaaaaaaa"  # another run's folder: every run's is at stake
    other.mkdir()
    (other / "token").write_text("t")
    places.up_root().mkdir()
    run_dir = {"dot-dot": f"{root}/../../victim", "the root": str(root),
               "the up root": str(places.up_root()), "a symlink out": str(root / "evil"),
               "elsewhere": str(victim)}[where]
    if where == "a symlink out":
        (root / "evil").symlink_to(victim)
    places.mark_kept("bad-run", Path(run_dir), ["slurm-24.11"], "pytest-stacks up")
    _no_engine(monkeypatch)
    code, _, err = _run(capsys, "down")
    assert code != 0
    assert (victim / "precious").read_text() == "keep me"
    assert (other / "token").exists() and places.up_root().is_dir()
    record = places.state_root() / places.MARKS_FOLDER / "bad-run.json"
    assert str(record) in err and "run_dir" in err and "Traceback" not in err
    assert "bad-run" in places.kept_runs(), "a refused record stays (it still keeps its run)"


def test_down_still_ends_a_run_kept_in_its_own_folder(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    run_dir = places.up_root() / "20260101000000-bbbbbbbb"
    run_dir.mkdir(parents=True)
    places.mark_kept(run_dir.name, run_dir, ["slurm-24.11"], "pytest-stacks up")
    assert _no_engine(monkeypatch) == []
    code, out, _ = _run(capsys, "down")
    assert code == 0 and f"ended run {run_dir.name}" in out
    assert not run_dir.exists() and places.kept_runs() == {}


# ---------------------------------------------------------------- 2. report --output


def _results_doc(startup: Any = 1.5) -> dict[str, Any]:
    """A valid results document of this checkout: one fake stack whose one test was skipped."""
    manifest = load(REPO / "manifest.yaml")
    stack = derived(manifest.get("fake-slurm"), manifest, [
        {"nodeid": "tests/contract/test_job_contract.py::test_job_runs_to_completion"
                   "[fake-slurm]", "outcome": "skipped", "duration_s": 0.1,
         "requires": ["submit"], "identities": [], "message": "skipped",
         "infra_retries": 0}])
    stack["startup_s"] = startup
    return document(manifest, stack, ci_lane=None)


@pytest.mark.parametrize("same", ["as given", "another spelling", "a hard link",
                                  "a symlink", "the matrix"])
def test_report_refuses_to_write_over_one_of_its_inputs(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], same: str) -> None:
    source = tmp_path / "results.json"
    results.dump(_results_doc(), source)
    matrix = tmp_path / "matrix.json"
    matrix.write_text(json.dumps(ci.matrix(load(REPO / "manifest.yaml"), "pr")))
    before = {p: p.read_bytes() for p in (source, matrix)}
    output = {"as given": source, "another spelling": tmp_path / "." / "x" / ".." /
              "results.json", "a hard link": tmp_path / "hard.json",
              "a symlink": tmp_path / "soft.json", "the matrix": matrix}[same]
    (tmp_path / "x").mkdir()
    if same == "a hard link":
        os.link(source, output)
    if same == "a symlink":
        output.symlink_to(source)
    mode = ["--matrix", str(matrix)] if same == "the matrix" else ["--single"]
    code, _, err = _run(capsys, "--manifest", str(REPO / "manifest.yaml"), "report",
                        str(source), *mode, "--output", str(output))
    assert code != 0 and "Traceback" not in err
    assert "--output" in err and str(output) in err
    assert {p: p.read_bytes() for p in (source, matrix)} == before


# ---------------------------------------------------------------- 3. a corrupt owner.json


@pytest.mark.parametrize(("content", "said"), [
    ('[4242, "3"]', "not a JSON object"),
    ("{not json", "not valid JSON"),
    ('{"pid": "abc", "start": "1"}', "'pid'"),
    ('{"pid": 4242, "start": 3}', "'start'"),
    ('{"pid": true, "start": "1"}', "'pid'"),
    ('{"start": "1"}', "'pid'"),
])
def test_a_corrupt_owner_record_is_named_and_breaks_no_other_run(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        content: str, said: str) -> None:
    root = places.runs_root()
    broken = root / "20260101000000-cccccccc"
    broken.mkdir()
    (broken / rundir.OWNER_FILE).write_text(content)
    dead = root / "20260101000000-dddddddd"  # a dead run beside it is still reaped
    dead.mkdir()
    (dead / rundir.OWNER_FILE).write_text(json.dumps({"pid": 2 ** 22 + 7, "start": "1"}))
    removed, problems = rundir.reap_dead_run_dirs()
    assert removed == [dead] and broken.is_dir()
    [problem] = problems
    owner = broken / rundir.OWNER_FILE
    assert str(owner) in problem and said in problem and "remove" in problem
    # A later run is not broken by it.
    ctx = RunContext.for_this_process("20260101000000-eeeeeeee", root / "20260101000000-eeeeeeee")
    rundir.RunDirectory(ctx).ensure()
    assert (ctx.run_dir / rundir.OWNER_FILE).is_file()
    # And `reap` names the file, not an exception's type.
    monkeypatch.setattr(reaper, "reap_dead", lambda **_: ({}, []))
    code, _, err = _run(capsys, "reap")
    assert code == 1 and str(owner) in err and said in err
    assert "AttributeError" not in err and "Traceback" not in err


def test_kind_owner_records_are_not_an_old_run_directory() -> None:
    """The folder of kind's owner records has no owner.json, as the folders of runs cut short
    have; reaping it after a day would lose every live cluster's record."""
    records = places.runs_root() / "kind-clusters"
    records.mkdir()
    (records / "pst-live-x.json").write_text("{}")
    os.utime(records, (1, 1))
    assert rundir.reap_dead_run_dirs() == ([], []) and records.is_dir()


class _Unblocker:
    """Lets a reader that waits on ``fifo`` for a writer go after ``after`` seconds, and says
    whether one was waiting: a write-side open without blocking succeeds only while a reader
    has the FIFO open. So a command that must not read it fails the test (``waited``) instead
    of hanging, and no wall-clock bound decides it."""

    def __init__(self, fifo: Path, after: float = 10.0) -> None:
        self.waited = False
        self._fifo, self._after = fifo, after
        threading.Thread(target=self._unblock, daemon=True).start()

    def _unblock(self) -> None:
        time.sleep(self._after)
        with contextlib.suppress(OSError):  # ENXIO: nobody reads it, as it should be
            writer = os.open(self._fifo, os.O_WRONLY | os.O_NONBLOCK)
            self.waited = True  # before the reader is let go, so it sees this
            os.close(writer)


def _unblock_later(fifo: Path, after: float = 10.0) -> _Unblocker:
    return _Unblocker(fifo, after)


def test_the_unblocker_sees_a_reader_that_waited(tmp_path: Path) -> None:
    fifo = tmp_path / "f"
    os.mkfifo(fifo)
    unblocker = _unblock_later(fifo, after=0.2)
    with open(fifo, "rb") as reader:  # blocks until the unblocker opens the write side
        reader.read()
    assert unblocker.waited


def test_an_owner_record_that_is_a_fifo_is_refused_without_reading_it() -> None:
    folder = places.runs_root() / "20260101000000-ffffffff"
    folder.mkdir()
    os.mkfifo(folder / rundir.OWNER_FILE)
    unblocker = _unblock_later(folder / rundir.OWNER_FILE)
    removed, problems = rundir.reap_dead_run_dirs()
    assert not unblocker.waited, "it waited on the FIFO"
    assert removed == [] and len(problems) == 1 and "not a regular file" in problems[0]


# ---------------------------------------------------------------- 4. kubeconfig secrets

SITE = """
version: 1
capabilities: {submit: s}
backends: {mpi-operator: {window: {anchor: "0.1", leading_edge: "9.0"}}}
stacks:
  - {name: site, backend: mpi-operator, version: "0.8.2", provider: existing,
     transport: kubernetes, capabilities: [submit], configuration: c, lanes: [site],
     existing: {kubeconfig: KUBECONFIG}}
"""
ONE_LINE = json.dumps({
    "apiVersion": "v1", "kind": "Config",
    "clusters": [{"name": "c", "cluster": {"server": "https://127.0.0.1:1"}}],
    "users": [{"name": "u", "user": {"token": SECRET, "client-key-data": SECRET + "K",
                                     "password": SECRET + "P"}}],
    "contexts": [{"name": "x", "context": {"cluster": "c", "user": "u"}}],
    "current-context": "x"})


@pytest.mark.parametrize("how", ["inline in the manifest", "in the variable", "broken file"])
def test_doctor_never_prints_a_kubeconfigs_secrets(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        how: str) -> None:
    manifest = tmp_path / "manifest.yaml"
    if how == "inline in the manifest":
        manifest.write_text(SITE.replace("KUBECONFIG", json.dumps(json.dumps(
            json.loads(ONE_LINE)))))
    else:
        manifest.write_text(SITE.replace("KUBECONFIG", "{env: SITE_KUBECONFIG}"))
    if how == "in the variable":
        monkeypatch.setenv("SITE_KUBECONFIG", ONE_LINE)
    if how == "broken file":  # YAML's error would quote the line around the token
        broken = tmp_path / "kubeconfig"
        broken.write_text(ONE_LINE.replace(f'"token": "{SECRET}"', f'"token": "{SECRET}" "x"'))
        monkeypatch.setenv("SITE_KUBECONFIG", str(broken))
    code, out, err = _run(capsys, "--manifest", str(manifest), "doctor", "site")
    assert code != 0 and "Traceback" not in err
    assert SECRET not in out + err, out + err
    assert "kubeconfig" in out + err


@pytest.mark.parametrize("text", [
    f'{{"token":"{SECRET}"}}', f"token: {SECRET}", f"client-key-data: {SECRET}",
    f"'password': '{SECRET}'", f"Authorization: Bearer {SECRET}",
    f"https://alice:{SECRET}@kube.example:6443", f'"id-token": "{SECRET}"',
])
def test_redact_hides_the_secret_values_and_keeps_the_rest(text: str) -> None:
    from pytest_stacks.errors import redact

    shown = redact(f"before {text} after")
    assert SECRET not in shown and shown.startswith("before ") and shown.endswith(" after")


# ---------------------------------------------------------------- 5. kind owner records


def _our_kind() -> Path:
    """kind as pytest-stacks builds it, in this test's own cache."""
    build = gobuild.cache_root() / "kind-v0.31.0-mpi-operator-0.8.2-abc"
    (build / "bin").mkdir(parents=True)
    (build / "bin" / "kind").write_text("#!/bin/sh\n")
    (build / gobuild.COMPLETE).write_text("go1.24\n")
    return build / "bin" / "kind"


@pytest.mark.parametrize("named", ["/bin/touch", "relative/kind", "a kind elsewhere",
                                   "a symlink into the cache", "absent"])
def test_a_kind_owner_record_never_names_the_program_we_run(tmp_path: Path, named: str) -> None:
    ours = _our_kind()
    elsewhere = tmp_path / "elsewhere" / "bin" / "kind"
    elsewhere.parent.mkdir(parents=True)
    elsewhere.write_text("#!/bin/sh\n")
    link = gobuild.cache_root() / "kind-evil" / "bin" / "kind"
    link.parent.mkdir(parents=True)
    link.symlink_to(elsewhere)
    (link.parent.parent / gobuild.COMPLETE).write_text("")
    program = {"/bin/touch": "/bin/touch", "relative/kind": "relative/kind",
               "a kind elsewhere": str(elsewhere), "a symlink into the cache": str(link),
               "absent": None}[named]
    records = tmp_path / "runs" / "kind-clusters"
    records.mkdir(parents=True)
    record = {"run": "dead", "pid": 2 ** 22 + 7, "start": "1", "stack": "s"}
    if program is not None:
        record["kind"] = program
    (records / "pst-dead-x.json").write_text(json.dumps(record))
    (records / "pst-ours-x.json").write_text(json.dumps({**record, "kind": str(ours)}))
    runner = Recorder()
    problems = kind_owners.reap(runner, tmp_path / "runs")
    programs = {c[0] for c in runner.calls if c[0] != "docker"}
    assert programs == {str(ours)}, runner.calls
    [problem] = problems
    assert str(records / "pst-dead-x.json") in problem and "'kind'" in problem
    assert "kind delete cluster --name pst-dead-x" in problem  # the fix, by hand
    assert (records / "pst-dead-x.json").exists()
    assert not (records / "pst-ours-x.json").exists()


@pytest.mark.parametrize(("content", "said"), [
    ('[4242, "3"]', "not a JSON object"), ('{"run": "r", "pid": "1", "start": "1"}', "'pid'"),
    ('{"run": 3, "pid": 1, "start": "1"}', "'run'"), (None, "not a regular file"),
])
def test_a_corrupt_kind_owner_record_is_named_never_read_blocking(
        tmp_path: Path, content: str | None, said: str) -> None:
    records = tmp_path / "runs" / "kind-clusters"
    records.mkdir(parents=True)
    record = records / "pst-bad-x.json"
    if content is None:
        os.mkfifo(record)
        unblocker: _Unblocker | None = _unblock_later(record)
    else:
        unblocker = None
        record.write_text(content)
    problems = kind_owners.reap(Recorder(), tmp_path / "runs")
    assert unblocker is None or not unblocker.waited, "it waited on the FIFO"
    [problem] = problems
    assert str(record) in problem and said in problem and "remove the record" in problem


# ---------------------------------------------------------------- 6. timings on a FIFO


def test_timings_refuses_a_fifo_at_once(tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str]) -> None:
    fifo = tmp_path / "timings.fifo"
    os.mkfifo(fifo)

    unblocker = _unblock_later(fifo)
    code, _, err = _run(capsys, "timings", str(fifo))
    assert not unblocker.waited, "it waited on the FIFO"
    assert code != 0 and str(fifo) in err and "not a regular file" in err


# ---------------------------------------------------------------- 7. record recorded nothing


@pytest.mark.parametrize("stale", [False, True])
def test_a_record_that_recorded_nothing_fails(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
        stale: bool) -> None:
    tests = tmp_path / "parity"
    (tests / "recordings").mkdir(parents=True)
    (tests / "parity.yaml").write_text("{}\n")
    written = tests / "recordings" / "slurm-24.11.json"
    if stale:
        written.write_text("{}")
        os.utime(written, (1, 1))
    monkeypatch.setattr(subprocess, "call", lambda *a, **k: 0)  # a run that skipped all
    code, _, err = _run(capsys, "record", "slurm-24.11", "--tests", str(tests))
    assert code != 0 and "Traceback" not in err
    assert "recorded nothing" in err and str(written) in err


# ---------------------------------------------------------------- 8. down's names


def test_down_of_a_mistyped_name_suggests_the_close_one(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _no_engine(monkeypatch)
    code, out, err = _run(capsys, "--manifest", str(REPO / "manifest.yaml"), "down",
                          "slurm-24.1")
    assert code != 0 and "Did you mean 'slurm-24.11'?" in out + err
    assert "Traceback" not in err


def test_down_suggests_among_the_kept_stacks_too(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # Kept under another TMPDIR: not ended here, but its stacks are names `down` knows.
    other = tmp_path / "other-tmp" / f"pytest-stacks-{os.getuid()}" / "kept" / "r1"
    places.mark_kept("r1", other, ["my-own-stack"], "pytest-stacks up")
    _no_engine(monkeypatch)
    code, out, err = _run(capsys, "--manifest", str(REPO / "manifest.yaml"), "down",
                          "my-own-stak")
    assert code != 0 and "Did you mean 'my-own-stack'?" in out + err


def test_down_of_a_known_stack_with_nothing_kept_is_fine(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    _no_engine(monkeypatch)
    code, out, _ = _run(capsys, "--manifest", str(REPO / "manifest.yaml"), "down",
                        "slurm-24.11")
    assert code == 0 and "nothing kept to bring down for slurm-24.11" in out


# ---------------------------------------------------------------- 9. numbers JSON cannot hold


@pytest.mark.parametrize(("text", "said"), [
    ('"startup_s": 1e999', "not a finite number"),
    ('"startup_s": -1e999', "not a finite number"),
    ('"duration_s": 1e400', "not a finite number"),
    ('"startup_s": -2.5', "negative"),
])
def test_a_results_number_json_cannot_hold_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, said: str) -> None:
    key = text.split(":")[0].strip('"')
    good = json.dumps(_results_doc())
    original = '"startup_s": 1.5' if key == "startup_s" else '"duration_s": 0.1'
    assert original in good
    path = tmp_path / "results.json"
    path.write_text(good.replace(original, text))
    with pytest.raises(results.ResultsError) as caught:
        results.load(path)
    assert str(path) in str(caught.value) and said in str(caught.value)
    assert key in str(caught.value), "the field is named"
    code, out, err = _run(capsys, "--manifest", str(REPO / "manifest.yaml"), "report",
                          str(path), "--single", "--format", "json")
    assert code == 4 and out == "" and "Infinity" not in err


def test_a_json_report_is_strict_json_or_nothing(tmp_path: Path) -> None:
    doc = results.parse(_results_doc(startup=math.inf), "results.json")  # past any reader
    model = merge.merge([doc], manifest=None, expected=None)
    with pytest.raises(ValueError):
        render.render(model, "json")


def test_the_schema_refuses_a_number_no_json_can_hold() -> None:
    with pytest.raises(results.ResultsError, match="startup_s"):
        results.validate(_results_doc(startup=math.inf), "r.json")

