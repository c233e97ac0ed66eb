"""A pinned Debian version that has left its suite (sid keeps one version of a package) ends
the stack's image build right after the archive's index is read, as an infrastructure error
that names the pinned version, the version the suite has now and the fix, and nothing of the
stack is left running. Built for real from Debian's archive, with a pin sid never had."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from pytest_stacks.providers.labels import LABEL_STACK
from tests.faults.sessions import NEEDS_ENGINE, run_argv

REPO = Path(__file__).resolve().parents[2]
pytestmark = NEEDS_ENGINE
GONE = "25.0.0+dfsg-0"  # no Debian suite has carried this condor version

MANIFEST = f"""\
version: 1
catalogue: {{version: "0.1", use: []}}
stacks:
  - name: my-htcondor
    extends: htcondor-25
    compose:
      build_args:
        HTCONDOR_VERSION: "{GONE}"
"""


def test_a_pin_gone_from_sid_fails_the_build_with_both_versions_and_the_fix(
        tmp_path: Path) -> None:
    manifest = tmp_path / "manifest.yaml"
    manifest.write_text(MANIFEST)
    cmd = [*run_argv(tmp_path / "p", "def test_x(backend):\n    pass\n", manifest),
           "--stack=my-htcondor"]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=900, check=False)
    out = done.stdout + done.stderr
    assert done.returncode != 0 and "1 infra" in out.strip().splitlines()[-1], out[-3000:]
    said = re.search(r"image build refused: condor (\S+) \(the pinned HTCONDOR_VERSION\) is "
                     r"not in Debian sid any more; sid has condor (\S+) now\. Fix: move "
                     r"HTCONDOR_VERSION", " ".join(out.split()))
    assert said, out[-3000:]
    assert said.group(1) == GONE and re.fullmatch(r"\d+\.\d+\.\d+\S*", said.group(2)), said
    assert "Traceback" not in out
    left = subprocess.run(["docker", "ps", "-aq", "--filter", f"label={LABEL_STACK}=my-htcondor"],
                          capture_output=True, text=True, check=True)
    assert left.stdout.split() == [], "a container of the refused stack is left"
