"""Slurm's container jobs, pure parts: which bundle a job's image maps to, what a stack's
``oci_runtime`` option turns into (build arg, security options, bundle files), and the script
a container job runs. The real runs are ``tests/backend/test_slurm_containers.py`` and the
contract's ``test_container.py``."""

from __future__ import annotations

import dataclasses
import io
import tarfile
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.backends.slurm import containers
from pytest_stacks.backends.slurm.driver import _wrap_script
from pytest_stacks.contract import JobSpec
from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import Stack, load
from pytest_stacks.providers import oci_bundles, preflight
from pytest_stacks.providers.base import RunContext
from pytest_stacks.providers.compose import ComposeProvider

REPO = Path(__file__).resolve().parents[2]
PROBE = "pytest-stacks/container-probe:1"
BUNDLE = f"{containers.BUNDLES}/container-probe"


def _stack(**options: Any) -> Stack:
    stack = load(REPO / "manifest.yaml").get("slurm-24.11")
    return dataclasses.replace(stack, options=options)


def test_the_repository_stacks_that_run_containers_keep_a_bundle_of_the_probe() -> None:
    manifest = load(REPO / "manifest.yaml")
    running = {s.name for s in manifest.stacks
               if s.backend == "slurm" and "container" in s.capabilities}
    assert running == {"slurm-22.05", "slurm-24.11", "slurm-26.05"}
    for name in running:
        assert containers.stack_bundles(manifest.get(name)) == {PROBE: BUNDLE}, name
    assert containers.stack_bundles(manifest.get("slurm-20.11")) == {}


def test_a_stack_without_a_runtime_keeps_no_bundle_and_changes_nothing() -> None:
    stack = _stack(container_probe=PROBE)
    assert containers.stack_bundles(stack) == {}
    assert oci_bundles.build_args(stack) == {} and oci_bundles.override(stack) == {}


def test_an_unknown_runtime_names_the_field_and_the_choices() -> None:
    with pytest.raises(StacksError, match=r"slurm-24\.11: options\.oci_runtime must be one of "
                                          r"crun .*got 'runc'"):
        containers.runtime_of(_stack(oci_runtime="runc"))


def test_a_runtime_is_built_in_and_unconfined_only_as_far_as_a_rootless_runtime_needs() -> None:
    stack = _stack(oci_runtime="crun", container_probe=PROBE)
    assert oci_bundles.build_args(stack) == {"OCI_RUNTIME": "crun"}
    assert oci_bundles.override(stack) == {"services": {"slurm": {"security_opt": [
        "seccomp=unconfined", "apparmor=unconfined", "systempaths=unconfined"]}}}


def test_an_image_maps_to_its_bundle_and_any_other_image_is_refused_with_the_kept_ones() -> None:
    kept = {PROBE: BUNDLE}
    assert containers.container_option(PROBE, "24.11.5", "/etc/slurm/oci.conf", True,
                                       bundles=kept) == [f"--container={BUNDLE}"]
    with pytest.raises(ValueError, match=r"no bundle for container 'other:1' \(it has bundles "
                                         r"for: pytest-stacks/container-probe:1\)"):
        containers.container_option("other:1", "24.11.5", "/etc/slurm/oci.conf", True,
                                    bundles=kept)
    with pytest.raises(ValueError, match=r"oci\.conf configures an OCI runtime"):
        containers.container_option(PROBE, "24.11.5", "/etc/slurm/oci.conf", False,
                                    bundles=kept)


def test_the_bundle_holds_its_config_and_mount_points_open_where_the_runtime_makes_folders(
        ) -> None:
    config = (REPO / "stacks/slurm" / oci_bundles.TEMPLATE).read_bytes()
    with tarfile.open(fileobj=io.BytesIO(oci_bundles._bundle_files(config))) as tar:
        members = {m.name: m for m in tar.getmembers()}
        handle = tar.extractfile(members["config.json"])
        assert handle is not None and handle.read() == config
    assert members["rootfs/var/lib/slurm/slurmd"].mode == 0o1777
    assert members["rootfs/var/run/slurm"].mode == 0o1777
    assert members["rootfs/tmp"].mode == 0o1777
    assert members["rootfs/var"].mode == members["rootfs/work/jobs"].mode == 0o755
    assert all(m.isdir() for name, m in members.items() if name != "config.json")


def test_a_container_job_runs_in_the_images_shell_from_its_own_directory() -> None:
    spec = JobSpec("echo in\n", container=PROBE, env={"A": "x y"})
    text = _wrap_script(spec, "/work/jobs/abc")
    assert text.splitlines()[:3] == ["#!/bin/sh", "cd /work/jobs/abc || exit 1",
                                     "export A='x y'"]
    assert text.rstrip("\n").endswith("\necho in")


def test_a_container_job_that_stages_remote_files_is_refused() -> None:
    spec = JobSpec("true\n", container=PROBE,
                   remote_inputs={"in.txt": "s3://store.example/jobs/in.txt"})
    with pytest.raises(ValueError, match="cannot stage remote files on Slurm"):
        _wrap_script(spec, "/work/jobs/abc")


class _Node:
    """A node container that refuses what it is told (exit 1, or a refused copy)."""

    def __init__(self, exit_code: int, copies: bool) -> None:
        self.exit_code, self.copies = exit_code, copies

    def exec_run(self, argv: list[str], user: str) -> Any:
        return type("Done", (), {"exit_code": self.exit_code, "output": b"Permission denied"})

    def put_archive(self, path: str, data: bytes) -> bool:
        return self.copies


@pytest.mark.parametrize(("node", "said"), [
    (_Node(1, True), "mkdir -p /srv/oci/bundles/container-probe/rootfs: Permission denied"),
    (_Node(0, False), "the engine refused the copy"),
])
def test_a_bundle_that_cannot_be_unpacked_names_the_image_the_bundle_and_why(
        monkeypatch: pytest.MonkeyPatch, node: _Node, said: str) -> None:
    monkeypatch.setattr(oci_bundles, "rootfs_of", lambda image, labels, timeout: b"")
    stack = _stack(oci_runtime="crun", container_probe=PROBE)
    with pytest.raises(StacksError) as raised:
        oci_bundles.install(stack, node, {}, 10)
    assert f"cannot unpack image {PROBE} into the bundle {BUNDLE} on stack slurm-24.11" \
        in str(raised.value) and said in str(raised.value), raised.value


def _kernel(tmp_path: Path, **knobs: str) -> Path:
    """A /proc/sys holding these knobs (dots as in sysctl names, `_` for `.`)."""
    for name, value in knobs.items():
        path = tmp_path / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(value + "\n")
    return tmp_path


def test_a_kernel_that_allows_user_namespaces_passes_the_preflight(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    preflight.user_namespaces("slurm-24.11", _kernel(
        tmp_path, user__max_user_namespaces="96362", kernel__unprivileged_userns_clone="1"))
    preflight.user_namespaces("slurm-24.11", tmp_path / "no-knobs-at-all")


@pytest.mark.parametrize(("knob", "value", "fix"), [
    ("user__max_user_namespaces", "0", "sysctl -w user.max_user_namespaces=15000"),
    ("kernel__unprivileged_userns_clone", "0", "sysctl -w kernel.unprivileged_userns_clone=1"),
    ("kernel__apparmor_restrict_unprivileged_userns", "1",
     "sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"),
])
def test_a_kernel_that_refuses_user_namespaces_is_refused_naming_the_knob_and_the_fix(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, knob: str, value: str,
        fix: str) -> None:
    monkeypatch.delenv("DOCKER_HOST", raising=False)
    sysctl = _kernel(tmp_path, **{"user__max_user_namespaces": "96362", knob: value})
    with pytest.raises(StacksError) as refused:
        preflight.user_namespaces("slurm-24.11", sysctl)
    text = str(refused.value)
    assert f"{knob.replace('__', '.')} = {value}" in text and fix in text, text
    assert "stack slurm-24.11" in text and "options.oci_runtime" in text


def test_a_remote_engine_is_not_judged_by_this_hosts_kernel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://builder.example:2376")
    preflight.user_namespaces("slurm-24.11", _kernel(tmp_path, user__max_user_namespaces="0"))


def test_the_compose_preflight_asks_for_user_namespaces_only_of_a_stack_with_a_runtime(
        monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[str] = []
    for check in ("engine", "compose", "base_obtainable", "image_obtainable", "go_toolchain"):
        monkeypatch.setattr(preflight, check, lambda *a, **k: None)
    monkeypatch.setattr(preflight, "user_namespaces", lambda name, *a: asked.append(name))
    manifest = load(REPO / "manifest.yaml")
    ctx = RunContext.for_this_process("run-1", Path("/nonexistent"))
    for name in ("slurm-24.11", "slurm-20.11"):
        ComposeProvider().preflight(manifest.get(name), ctx)
    assert asked == ["slurm-24.11"]
