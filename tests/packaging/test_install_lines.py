"""The install lines the user's guide gives, run as a user runs them (issue 58): the wheel
alone, which must be enough for the fakes and pull nothing of Docker, SSH, Kubernetes or
crypto; and ``pip install 'pytest-stacks @ git+URL'`` from a clone of this repository.

Slow (wheel builds and pip installs into fresh virtual environments) and needing no engine:
scripts/test.sh runs tests/packaging as its own stage, with or without Docker.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from pytest_stacks import extras

REPO = Path(__file__).resolve().parents[2]

#: What a fakes-only install may hold besides pytest-stacks: pytest and its own dependencies,
#: pyyaml, jsonschema (and its referencing stack), packaging, filelock, rich (and its markdown
#: and pygments). Measured 2026-12-07: 17 distributions (pytest-stacks and 16 others), pip and
#: setuptools excluded; 40 before the extras.
FAKES_ONLY_AT_MOST = 20

USER_TEST = '''
from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for


def test_a_job_runs(backend, stack):
    [job] = submitted(backend.submit([JobSpec(script="exit 0\\n")]))
    [status] = wait_for(backend, [job], timeout=stack.timeouts.job)
    assert status.state is JobState.COMPLETED
'''


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}


def _venv(root: Path, *install: str) -> Path:
    venv = root / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=300)
    pip = subprocess.run([str(venv / "bin/python"), "-m", "pip", "install", "-q",
                          "--disable-pip-version-check", *install], capture_output=True,
                         text=True, check=False, timeout=900, env=_env())
    assert pip.returncode == 0, pip.stderr[-3000:]
    return venv


def _run(venv: Path, *argv: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = _env()
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    return subprocess.run([str(venv / "bin" / argv[0]), *argv[1:]], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600, check=False)


def _project(root: Path) -> Path:
    project = root / "project"
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_mine.py").write_text(USER_TEST)
    return project


@pytest.fixture(scope="module")
def wheel_alone(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    root = tmp_path_factory.mktemp("wheel-alone")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                            str(root / "dist"), str(REPO)], capture_output=True, text=True,
                           check=False, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = (root / "dist").glob("pytest_stacks-*.whl")
    yield _venv(root, str(wheel))


def test_a_fakes_only_install_pulls_no_extra(wheel_alone: Path, tmp_path: Path) -> None:
    listed = _run(wheel_alone, "python", "-m", "pip", "list", "--format=json",
                  "--disable-pip-version-check", cwd=tmp_path)
    names = {d["name"].lower() for d in json.loads(listed.stdout)} - {"pip", "setuptools"}
    for extra, modules in extras.EXTRAS.items():
        for module in modules:
            probe = _run(wheel_alone, "python", "-c", f"import {module}", cwd=tmp_path)
            assert probe.returncode != 0, f"{module} (extra {extra}) came with the wheel alone"
    assert not names & {"docker", "paramiko", "cryptography", "lightkube", "htcondor",
                        "requests", "httpx"}, sorted(names)
    assert len(names) <= FAKES_ONLY_AT_MOST, sorted(names)


def test_the_fakes_and_the_cli_run_without_extras(wheel_alone: Path, tmp_path: Path) -> None:
    project = _project(tmp_path)
    listed = _run(wheel_alone, "pytest-stacks", "list", cwd=project)
    assert listed.returncode == 0, listed.stderr
    assert "fake-slurm" in listed.stdout
    ran = _run(wheel_alone, "pytest", "--stack=fake-slurm", "--stack=fake-htcondor",
               "--stack=fake-mpi-operator", "-q", "-p", "no:cacheprovider", cwd=project)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "3 passed" in ran.stdout
    # A real stack without its extras: a usage error before anything starts, with the line.
    real = _run(wheel_alone, "pytest", "--stack=slurm-24.11", "-q", "-p", "no:cacheprovider",
                cwd=project)
    assert real.returncode == 4, real.stdout[-3000:] + real.stderr[-2000:]
    assert "pip install 'pytest-stacks[docker]'" in real.stderr, real.stderr
    doctor = _run(wheel_alone, "pytest-stacks", "doctor", "htcondor-23.9", cwd=project)
    assert doctor.returncode == 1
    assert "[FAIL] extra htcondor" in doctor.stdout
    assert "pip install 'pytest-stacks[htcondor]'" in doctor.stdout
    down = _run(wheel_alone, "pytest-stacks", "down", cwd=project)
    assert "Traceback" not in down.stderr
    assert "pip install 'pytest-stacks[docker]'" in down.stderr, down.stderr


def test_the_git_url_install_line(tmp_path: Path) -> None:
    """``pip install 'pytest-stacks @ git+URL'`` as the user's guide says, from a clone of
    this repository's committed state (a git+file:// URL stands for the public one, which this
    machine cannot reach)."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(clone)], check=True,
                   timeout=300, capture_output=True)
    # file://localhost/...: pip before 24 refuses a URL without a host after `name @`.
    venv = _venv(tmp_path, f"pytest-stacks @ git+file://localhost{clone}")
    project = _project(tmp_path)
    shown = _run(venv, "pytest-stacks", "--version", cwd=project)
    assert shown.returncode == 0 and shown.stdout.startswith("pytest-stacks "), shown.stderr
    ran = _run(venv, "pytest", "--stack=fake-slurm", "-q", "-p", "no:cacheprovider",
               cwd=project)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "1 passed" in ran.stdout
