"""The release workflow executed with act (issue 58): a tag's push builds the wheel and the
sdist with the catalogue inside, installs the wheel alone, and hands both to GitHub's release
(recorded by the ``gh`` stand-in). What is checked is what the run left: the uploaded artifact
installs in a fresh virtual environment and runs a fake stack, as the user's guide says.

Not in the default test paths: ``bash scripts/act-lanes.sh -k release`` runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

from tests.workflows.act import ROOT, copy_project, run_act

TAG = "v0.1.0"
PUSH_TAG = {"ref": f"refs/tags/{TAG}", "ref_name": TAG, "ref_type": "tag"}


def test_a_tag_builds_and_attaches_the_wheel_and_sdist(tmp_path: Path) -> None:
    project = copy_project(ROOT, tmp_path / "project")
    run = run_act(project, "push", PUSH_TAG, tmp_path / "work", workflow="release.yml",
                  timeout=1800)
    assert run.returncode == 0, run.log[-6000:]
    dist = run.artifact("release-dist")
    [wheel] = dist.glob("pytest_stacks-*.whl")
    [sdist] = dist.glob("pytest_stacks-*.tar.gz")
    assert "pytest_stacks/catalogue/manifest.yaml" in zipfile.ZipFile(wheel).namelist()
    root = sdist.name.removesuffix(".tar.gz")
    with tarfile.open(sdist) as archive:
        assert f"{root}/manifest.yaml" in archive.getnames()
    uploads = [c for c in run.gh_calls() if c[:2] in (["release", "upload"],
                                                       ["release", "create"])]
    assert len(uploads) == 1 and uploads[0][2] == TAG, run.gh_calls()
    assert {Path(a).name for a in uploads[0]} >= {wheel.name, sdist.name}
    # The asset as a user installs it: the wheel alone runs the fakes.
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
    pip = subprocess.run([str(venv / "bin/pip"), "install", "-q", str(wheel)], env=env,
                         capture_output=True, text=True, check=False, timeout=900)
    assert pip.returncode == 0, pip.stderr[-3000:]
    listed = subprocess.run([str(venv / "bin/pytest-stacks"), "list"], cwd=tmp_path, env=env,
                            capture_output=True, text=True, check=False, timeout=300)
    assert listed.returncode == 0 and "fake-slurm" in listed.stdout, listed.stderr
