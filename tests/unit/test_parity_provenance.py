"""Recordings say where they came from, and a fake is held only to a real daemon's (issue 49)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks import __version__, cli
from pytest_stacks.manifest import load
from pytest_stacks.parity.admission import refusals
from pytest_stacks.parity.provenance import Provenance, scenario_digest, source_digest
from pytest_stacks.parity.recording_run import record
from pytest_stacks.parity.store import Recording, read_parity_file
from pytest_stacks.providers import fake_factory

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = load(ROOT / "manifest.yaml")
PARITY = read_parity_file(ROOT / "tests/parity/parity.yaml")
SLURM = PARITY.recording_path("slurm-24.11")


def test_the_committed_recordings_are_real_daemons_at_their_pins_by_this_scenario() -> None:
    against = {p.against for p in PARITY.pairings.values()}
    # The command-line corpus's recordings (*.corpus.json) are checked by their own test.
    assert against == {p.stem for p in (ROOT / "tests/parity/recordings").glob("*.json")
                       if not p.name.endswith(".corpus.json")}
    for name in sorted(against):
        recording = Recording.read(PARITY.recording_path(name))
        assert recording.provenance.provider == MANIFEST.get(name).provider == "compose"
        assert recording.provenance.scenario == scenario_digest()
        # Made by `pytest-stacks record`: the run that recorded it is named.
        assert re.fullmatch(r"\d{14}-[0-9a-f]{8}", str(recording.provenance.run_id)), name
        assert refusals(recording, PARITY.recording_path(name), name, MANIFEST) == []


def _refused(against: str = "slurm-24.11", **changed: Any) -> list[str]:
    recording = Recording.read(SLURM)
    provenance = {k: v for k, v in changed.items() if k in {"provider", "scenario"}}
    rest = {k: v for k, v in changed.items() if k not in provenance}
    recording = dataclasses.replace(
        recording, provenance=dataclasses.replace(recording.provenance, **provenance), **rest)
    return refusals(recording, SLURM, against, MANIFEST)


@pytest.mark.parametrize(("changed", "said"), [
    ({"provider": "fake"}, "was recorded from a fake (provider fake)"),
    ({"provider": ""}, "does not say which provider made it (provenance.provider)"),
    ({"provider": "docker"}, "provenance.provider 'docker' is none of compose, existing, kind"),
    ({"stack": "fake-slurm"}, "fake-slurm is a fake stack, not a real one"),
    ({"stack": "slurm-99"}, "slurm-99 is no stack of the manifest"),
    ({"stack": "slurm-20.11"}, "is a recording of slurm-20.11, not of slurm-24.11"),
    ({"versions": {"daemon": "24.11.4"}},
     "is of daemon 24.11.4, but slurm-24.11 is pinned at 24.11.5: the recording is stale"),
    ({"scenario": "sha256:0000000000000000"}, "was made by another scenario"),
    ({"scenario": ""}, "was made by another scenario (digest missing"),
])
def test_a_recording_that_is_not_a_real_daemons_at_its_pin_is_refused(
        changed: dict[str, Any], said: str) -> None:
    found = _refused(**changed)
    assert len(found) == 1, found
    assert found[0].startswith(str(SLURM))
    assert said in found[0]
    assert found[0].endswith("re-record with `pytest-stacks record slurm-24.11`")


def test_a_fake_paired_with_a_fake_is_refused() -> None:
    [found, *_] = _refused(against="fake-slurm", stack="fake-slurm")
    assert "fake-slurm is a fake stack" in found


def test_a_recording_says_what_made_it(tmp_path: Path) -> None:
    stack = MANIFEST.get("fake-slurm")
    client, _logs, close = fake_factory(stack)(stack, tmp_path)
    try:
        made = record(client, stack=stack.name, backend=stack.backend, run_dir=tmp_path,
                      timeout=30, provider=stack.provider, run_id="20261206000000-0123abcd")
    finally:
        close()
    assert made.provenance == Provenance("fake", scenario_digest(), __version__,
                                         "20261206000000-0123abcd")
    again = Recording.read(made.write(tmp_path / "slurm-24.11.json"))
    assert again.provenance == made.provenance
    # A fake's own answers, relabelled as the real stack's, are still a fake's.
    relabelled = dataclasses.replace(again, stack="slurm-24.11")
    assert any("recorded from a fake" in p for p in refusals(
        relabelled, tmp_path / "slurm-24.11.json", "slurm-24.11", MANIFEST))


SCENARIO = '''"""Doc."""
def run(client):
    # a comment
    client.submit("a")
'''


def test_the_scenario_digest_follows_the_code_not_its_comments_or_layout() -> None:
    digest = source_digest({"scenario.py": SCENARIO})
    assert digest.startswith("sha256:") and len(digest) == len("sha256:") + 16
    reworded = SCENARIO.replace('"""Doc."""', '"""Other words."""').replace(
        "# a comment", "# another comment\n\n")
    assert source_digest({"scenario.py": reworded}) == digest
    assert source_digest({"scenario.py": SCENARIO.replace('"a"', '"b"')}) != digest
    assert source_digest({"other.py": SCENARIO}) != digest


def test_record_refuses_a_fake_stack_before_anything_starts(
        monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    def started(*args: object, **kwargs: object) -> int:
        raise AssertionError(f"pytest was started for a fake stack: {args}")

    monkeypatch.setattr(subprocess, "call", started)
    code = cli.main(["--manifest", str(ROOT / "manifest.yaml"), "record", "fake-slurm",
                     "--tests", str(ROOT / "tests/parity")])
    err = capsys.readouterr().err
    assert code == 2
    assert "fake-slurm is a fake stack" in err and "nothing was started" in err
    code = cli.main(["--manifest", str(ROOT / "manifest.yaml"), "record", "slurm-24.12",
                     "--tests", str(ROOT / "tests/parity")])
    assert code == 4
    assert "unknown stack 'slurm-24.12'" in capsys.readouterr().err
