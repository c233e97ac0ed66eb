"""Every PYTEST_STACKS_* variable the code reads is checked where it enters, naming the
variable, the value (cut short) and the fix (issue 59, item 2). The CI variables, which land
in the results file, are checked by its schema: tests/unit/test_state_files.py and
tests/plugin/test_evidence_refused.py."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_stacks.errors import StacksError
from pytest_stacks.providers import images, kind_docker


@pytest.mark.parametrize("value", ["--no-check-gpg", "ftp://mirror/debian",
                                   "http://deb.debian.org/debian; rm -rf /", "x" * 5000])
def test_a_debian_mirror_that_is_no_url_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                   value: str) -> None:
    monkeypatch.setenv(images.MIRROR_ENV, value)
    with pytest.raises(StacksError) as caught:
        images.debian_mirror()
    said = str(caught.value)
    assert images.MIRROR_ENV in said and "http://" in said and len(said) < 400


def test_a_debian_mirror_url_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(images.MIRROR_ENV, "https://mirror.example:8443/debian/")
    assert images.debian_mirror() == "https://mirror.example:8443/debian/"
    monkeypatch.delenv(images.MIRROR_ENV)
    assert images.debian_mirror() == images.DEFAULT_MIRROR


@pytest.mark.parametrize("value", ["registry host", "-evil", "a" * 300, "host:443"])
def test_a_registry_host_that_is_no_host_name_is_refused(monkeypatch: pytest.MonkeyPatch,
                                                         value: str) -> None:
    monkeypatch.setenv(images.REGISTRY_ENV, value)
    with pytest.raises(StacksError, match=images.REGISTRY_ENV):
        images.registry_host()


def test_a_registry_host_name_is_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(images.REGISTRY_ENV, "registry.example.org")
    assert images.registry_host() == "registry.example.org"


@pytest.mark.parametrize("real", ["docker", "/nonexistent/docker", "a-text-file", "a-folder"])
def test_the_kind_shim_refuses_a_docker_that_is_no_executable(tmp_path: Path,
                                                              real: str) -> None:
    if real == "a-text-file":
        real = str(tmp_path / "docker")
        Path(real).write_text("not a program\n")
        Path(real).chmod(0o644)
    elif real == "a-folder":
        real = str(tmp_path)
    env = {**os.environ, kind_docker.REAL_DOCKER: real}
    done = subprocess.run([sys.executable, "-m", "pytest_stacks.providers.kind_docker", "ps"],
                          env=env, capture_output=True, text=True, timeout=60)
    assert done.returncode == 125 and kind_docker.REAL_DOCKER in done.stderr
