"""The fake lane holds a fake only to a real daemon's recording (issue 49): the repository's
parity test, run on fake-slurm against a recording that a fake made, that says nothing of where
it came from, that is of a fake stack, or that another scenario made, fails and says how to
record it again; the committed recording passes.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
COMMITTED = ROOT / "tests/parity/recordings/slurm-24.11.json"
FIX = "re-record with `pytest-stacks record slurm-24.11`"


def _provenance(data: dict[str, Any], **changed: str) -> None:
    data["provenance"] = {**data.get("provenance", {}), **changed}


def _unchanged(data: dict[str, Any]) -> None:
    pass


VARIANTS: dict[str, tuple[Callable[[dict[str, Any]], None], str]] = {
    "a fake's own answers": (lambda d: _provenance(d, provider="fake"),
                             "was recorded from a fake (provider fake)"),
    "no provenance": (lambda d: d.pop("provenance", None),
                      "does not say which provider made it"),
    "a fake stack's": (lambda d: d.update(stack="fake-slurm"),
                       "fake-slurm is a fake stack, not a real one"),
    "another scenario's": (lambda d: _provenance(d, scenario="sha256:0000000000000000"),
                           "was made by another scenario (digest sha256:0000000000000000"),
}


def _lane(pytester: pytest.Pytester, change: Callable[[dict[str, Any]], None]) -> Any:
    parity = pytester.path / "parity"
    (parity / "recordings").mkdir(parents=True)
    for name in ("test_fake_parity.py", "parity.yaml"):
        shutil.copy(ROOT / "tests/parity" / name, parity / name)
    data = json.loads(COMMITTED.read_text(encoding="utf-8"))
    change(data)
    (parity / "recordings/slurm-24.11.json").write_text(json.dumps(data), encoding="utf-8")
    return pytester.runpytest(str(parity), "--stack=fake-slurm", "-p", "no:randomly",
                              f"--stack-manifest={ROOT / 'manifest.yaml'}")


@pytest.mark.parametrize("variant", sorted(VARIANTS))
def test_a_recording_no_real_daemon_made_is_refused(
        pytester: pytest.Pytester, variant: str) -> None:
    change, said = VARIANTS[variant]
    result = _lane(pytester, change)
    result.assert_outcomes(failed=1)
    out = result.stdout.str()
    assert said in out
    assert FIX in out


def test_the_committed_recording_is_accepted(pytester: pytest.Pytester) -> None:
    _lane(pytester, _unchanged).assert_outcomes(passed=1)
