"""pytest-stacks as its users get it: a wheel built from this repository, installed into a
fresh virtual environment outside it, used by a project that has only its own tests.

Slow (a wheel build and a pip install), so not in the default test paths: scripts/test.sh runs
it as its own stage. With a Docker engine (PYTEST_STACKS_REQUIRE_DOCKER=1 in CI) the same
installation also brings up real stacks from the packaged catalogue.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "user-project"
USER_TEST = '''
from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for


def test_a_job_runs(backend, stack):
    [job] = submitted(backend.submit([JobSpec(script="exit 0\\n")]))
    [status] = wait_for(backend, [job], timeout=stack.timeouts.job)
    assert status.state is JobState.COMPLETED
'''


@dataclass
class Installed:
    venv: Path
    root: Path

    def run(self, *argv: str, cwd: Path, timeout: float = 900,
            extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("VIRTUAL_ENV", "PYTHONPATH")}
        env.update(extra_env or {})
        env["PATH"] = f"{self.venv / 'bin'}:{env.get('PATH', '')}"
        return subprocess.run([str(self.venv / "bin" / argv[0]), *argv[1:]], cwd=cwd, env=env,
                              capture_output=True, text=True, timeout=timeout, check=False)


def _docker() -> bool:
    if os.environ.get("PYTEST_STACKS_REQUIRE_DOCKER") == "1":
        return True
    return shutil.which("docker") is not None and subprocess.run(
        ["docker", "info"], capture_output=True, check=False).returncode == 0


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Installed]:
    root = tmp_path_factory.mktemp("wheel")
    built = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w",
                            str(root / "dist"), str(REPO)], capture_output=True, text=True,
                           check=False, timeout=600)
    assert built.returncode == 0, built.stderr[-3000:]
    [wheel] = (root / "dist").glob("pytest_stacks-*.whl")
    subprocess.run([sys.executable, "-m", "venv", str(root / "venv")], check=True, timeout=300)
    # With the extras the real stacks below need (a Slurm in containers, one over SSH); the
    # wheel without extras is tests/packaging/test_install_lines.py's.
    pip = subprocess.run([str(root / "venv/bin/python"), "-m", "pip", "install", "-q",
                          "--disable-pip-version-check", f"{wheel}[docker,ssh]"],
                         capture_output=True, text=True, check=False, timeout=900)
    assert pip.returncode == 0, pip.stderr[-3000:]
    yield Installed(root / "venv", root)


def _user_project(installed: Installed, name: str) -> Path:
    project = installed.root / name
    (project / "tests").mkdir(parents=True)
    (project / "tests" / "test_mine.py").write_text(USER_TEST)
    return project


def _example(installed: Installed) -> Path:
    project = installed.root / "example"
    if not project.exists():
        shutil.copytree(EXAMPLE, project)
    return project


def test_the_wheel_carries_the_catalogue(installed: Installed) -> None:
    packaged = list(installed.venv.glob("lib/python*/site-packages/pytest_stacks/catalogue"))
    assert len(packaged) == 1
    catalogue = packaged[0]
    assert (catalogue / "manifest.yaml").read_text() == (REPO / "manifest.yaml").read_text()
    for folder in ("stacks/slurm", "stacks/htcondor", "stacks/htcondor-mini"):
        assert (catalogue / folder / "compose.yaml").is_file(), folder


def test_a_project_without_a_manifest_uses_the_catalogue(installed: Installed) -> None:
    project = _user_project(installed, "plain")
    listed = installed.run("pytest-stacks", "list", cwd=project)
    assert listed.returncode == 0, listed.stderr
    assert "site-packages/pytest_stacks/catalogue/manifest.yaml" in listed.stdout
    assert "slurm-24.11" in listed.stdout
    ran = installed.run("pytest", "--stack=fake-slurm", "--stack=fake-htcondor", "-q",
                        "-p", "no:cacheprovider", "--stack-unproven=warn", cwd=project)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "2 passed" in ran.stdout
    assert "fake-slurm (slurm 24.11.5, fake): fake, claims 24.11.5" in ran.stdout


def test_an_extending_manifest_on_the_fake_lane(installed: Installed) -> None:
    project = _example(installed)
    shown = installed.run("pytest-stacks", "show", "site-slurm", cwd=project)
    assert shown.returncode == 0, shown.stderr
    assert "(catalogue, via extends: slurm-24.11)" in shown.stdout
    assert f"{project / 'manifest.yaml'}:" in shown.stdout
    # As its workflow runs it: every capability the stack declares proven by its own tests.
    ran = installed.run("pytest", "--stack=fake-slurm", "-q", "-p", "no:cacheprovider",
                        "--stack-unproven=fail", cwd=project)
    assert ran.returncode == 0, ran.stdout[-3000:] + ran.stderr[-2000:]
    assert "9 passed, 1 skipped" in ran.stdout  # the site-only test needs site.accounting


@pytest.mark.skipif(not _docker(), reason="no Docker engine: real stacks from the wheel not run")
def test_real_stacks_from_the_packaged_catalogue(installed: Installed) -> None:
    plain = _user_project(installed, "plain-real")
    ran = installed.run("pytest", "--stack=slurm-24.11", "-q", "-p", "no:cacheprovider",
                        "--stack-unproven=warn",
                        cwd=plain)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert "slurm-24.11 (slurm 24.11.5, compose): daemon 24.11.5" in ran.stdout
    example = _example(installed)
    ran = installed.run("pytest", "--stack=site-slurm", "-q", "-p", "no:cacheprovider",
                        "--stack-unproven=fail", cwd=example)
    assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
    assert "9 passed" in ran.stdout
    assert "site-slurm (slurm 24.11.5, compose): daemon 24.11.5" in ran.stdout


SITE_MANIFEST = """
version: 1
catalogue: {version: "0.1", use: []}
stacks:
  - name: our-site
    backend: slurm
    version: "26.05.5"
    provider: existing
    transport: ssh
    configuration: site
    capabilities: [submit, status, execution]
    lanes: [site]
    existing:
      versions: ">=24.11"
      job_root: /work/jobs
      ssh:
        login: {host: 127.0.0.1, port: {env: SITE_PORT}, user: submitter}
        key: {env: SITE_SSH_KEY}
        known_hosts: {env: SITE_KNOWN_HOSTS}
"""


@pytest.mark.skipif(not _docker(), reason="no Docker engine: no stack to stand for a site")
def test_an_existing_site_from_the_wheel(installed: Installed, tmp_path: Path) -> None:
    """A user project declares an existing Slurm (here the catalogue's cluster, kept by the
    installed `pytest-stacks up`) and runs its own test against it from the wheel."""
    home = tmp_path / "runs"
    home.mkdir()
    keep_env = {**os.environ, "TMPDIR": str(home)}
    cli = str(installed.venv / "bin" / "pytest-stacks")
    up = subprocess.run([cli, "up", "slurm-26.05-cluster-ssh"], capture_output=True, text=True,
                        env=keep_env, timeout=1200, check=False)
    assert up.returncode == 0, up.stderr[-3000:]
    try:
        route = json.loads(json.loads(up.stdout)["ssh"])
        project = _user_project(installed, "site-project")
        (project / "manifest.yaml").write_text(SITE_MANIFEST)
        ran = installed.run("pytest", "--stack=our-site", "-q", "-p", "no:cacheprovider",
                            "--stack-unproven=warn", cwd=project, extra_env={
                                "SITE_PORT": str(route["hops"][0]["port"]),
                                "SITE_SSH_KEY": route["key"],
                                "SITE_KNOWN_HOSTS": route["known_hosts"], "TMPDIR": str(home)})
        assert ran.returncode == 0, ran.stdout[-4000:] + ran.stderr[-2000:]
        assert "our-site (slurm 26.05.5, existing): daemon 26.05.5" in ran.stdout
        assert "1 passed" in ran.stdout
    finally:
        down = subprocess.run([cli, "down", "slurm-26.05-cluster-ssh"], capture_output=True,
                              text=True, env=keep_env, timeout=600, check=False)
        assert down.returncode == 0, down.stdout + down.stderr
