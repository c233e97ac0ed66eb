"""Each driver's declared words for "the service is not there" (infrastructure) and "the
request was refused" (the product's), checked against what the real daemons said: the
recordings in tests/data/outages, made by scripts/record_outages.py on the pinned stacks with
the fault each names (provenance in each file)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks import registry
from pytest_stacks.backends.outages import NOTHING, OutageWords, Phrase
from pytest_stacks.manifest import load
from pytest_stacks.providers import outage_words

REPO = Path(__file__).resolve().parents[2]
RECORDINGS = sorted((REPO / "tests" / "data" / "outages").glob("*.json"))
PROVENANCE = ("stack", "backend", "observed_version", "fault", "recorded_at", "commit",
              "made_by", "calls")


def _recording(path: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(path.read_text())
    return data


def test_every_backend_that_runs_real_daemons_here_has_recordings() -> None:
    backends = {_recording(p)["backend"] for p in RECORDINGS}
    assert {"slurm", "htcondor"} <= backends, backends


@pytest.mark.parametrize("path", RECORDINGS, ids=lambda p: p.stem)
def test_a_recording_says_where_it_came_from(path: Path) -> None:
    data = _recording(path)
    assert all(data.get(k) for k in PROVENANCE), [k for k in PROVENANCE if not data.get(k)]
    stack = load(REPO / "manifest.yaml").get(data["stack"])
    assert stack.backend == data["backend"] and not stack.is_fake
    assert data["observed_version"] == stack.version, "recorded from the pinned daemon"
    assert path.stem == f"{data['stack']}--{data['fault']}"


CASES = [(p.stem, c) for p in RECORDINGS for c in _recording(p)["calls"]]


@pytest.mark.parametrize(("recording", "call"), CASES,
                         ids=[f"{r}:{c['expected']}:{c['call']}" for r, c in CASES])
def test_the_driver_reads_the_daemon_s_real_words_as_recorded(recording: str,
                                                              call: dict[str, Any]) -> None:
    backend = recording.split("-")[0]
    words = registry.resolve(str(registry.BACKENDS[backend].outages))
    reading = words.read(call["said"])
    if call["expected"] == "gone":
        assert reading.meaning == "gone", call["said"]
        assert reading.words and reading.words in call["said"], "the daemon's line is kept"
    elif call["expected"] == "silent":  # ended at its deadline: health decides, not words
        assert call["said"].endswith("(exit 124)") and reading.meaning != "refused"
    else:
        assert reading.meaning != "gone", (reading, call["said"])


def test_gone_is_read_before_refused_and_unknown_is_neither() -> None:
    words = OutageWords("x", (Phrase("controller unreachable", "ctl down"),),
                        (Phrase("submission failed", "refused"),))
    gone = words.read("x\nsubmission failed: controller unreachable (connect failure)\n")
    assert (gone.meaning, gone.fault) == ("gone", "ctl down")
    assert str(gone) == ("ctl down (the daemon said: submission failed: controller "
                         "unreachable (connect failure))")
    assert words.read("submission failed: bad option").meaning == "refused"
    assert words.read("AssertionError: 1 != 2").meaning == "unknown"
    assert NOTHING.read("Unable to contact slurm controller").meaning == "unknown"


@pytest.mark.parametrize("backend", sorted(registry.BACKENDS))
def test_every_backend_declares_its_words(backend: str) -> None:
    target = registry.BACKENDS[backend].outages
    assert target is not None
    words = registry.resolve(target)
    assert isinstance(words, OutageWords) and words.gone and words.refused
    assert words.backend == backend


def test_a_stack_finds_its_backend_s_words() -> None:
    stack = load(REPO / "manifest.yaml").get("slurm-24.11")
    assert outage_words(stack).backend == "slurm"
