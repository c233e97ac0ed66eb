"""The engine's disk: a bring-up refuses in seconds, naming the space it lacks, instead of
failing half-way as "no space left on device"; `doctor --fix` gives back what is ours to give
(an engine stand-in, no Docker)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pytest_stacks import dockerutil, doctor
from pytest_stacks.errors import StacksError
from pytest_stacks.manifest import load
from pytest_stacks.providers import disk, preflight

ROOT = Path(__file__).resolve().parents[2]
MANIFEST = load(ROOT / "manifest.yaml")


def test_what_a_bring_up_asks_for_by_what_it_writes() -> None:
    assert disk.need_gib(MANIFEST.get("slurm-24.11")) == disk.NEED_GIB["compose"]
    assert disk.need_gib(MANIFEST.get("k8s-1.36-node-mpi-0.8")) == disk.NODE_STACK_NEED_GIB
    assert disk.need_gib(MANIFEST.get("kind-1.36-local-mpi-0.8")) == disk.NEED_GIB["kind"]
    assert disk.need_gib(MANIFEST.get("fake-slurm")) == 0


def test_a_short_disk_is_named_with_the_fix(monkeypatch: pytest.MonkeyPatch,
                                            tmp_path: Path) -> None:
    stacks = [MANIFEST.get("slurm-24.11"), MANIFEST.get("kind-1.36-local-mpi-0.8")]
    monkeypatch.setattr(disk, "free_gib", lambda _: 9.5)
    problem = disk.shortfall(stacks, tmp_path)
    assert "only 9.5 GiB free on " + str(tmp_path) in problem
    assert "slurm-24.11, kind-1.36-local-mpi-0.8" in problem
    assert "up to 10 GiB" in problem and "pytest-stacks doctor --fix" in problem
    monkeypatch.setattr(disk, "free_gib", lambda _: 10.0)
    assert disk.shortfall(stacks, tmp_path) == ""


def test_the_preflight_refuses_a_stack_the_disk_cannot_hold(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setattr(dockerutil, "client", lambda: object())
    monkeypatch.setattr(disk, "data_root", lambda: tmp_path)
    monkeypatch.setattr(disk, "free_gib", lambda _: 1.0)
    with pytest.raises(StacksError, match=r"only 1\.0 GiB free .* slurm-24\.11 writes up to 2"):
        preflight.engine(MANIFEST.get("slurm-24.11"))
    preflight.engine()  # asked of no stack: the engine alone
    monkeypatch.setattr(disk, "free_gib", lambda _: 2.5)
    preflight.engine(MANIFEST.get("slurm-24.11"))


def test_an_engine_elsewhere_is_not_measured_here(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DOCKER_HOST", "tcp://build-host:2376")
    assert disk.data_root() is None
    assert disk.shortfall([MANIFEST.get("slurm-24.11")]) == ""


def _image(id_: str, created: int, *tags: str, containers: int = 0) -> disk.Image:
    return disk.Image(id_, tags, created, 100, containers)


def test_superseded_node_images_are_the_oldest_beyond_the_kept_ones() -> None:
    node = "pytest-stacks/kind-node"
    images = [_image("a", 1, f"{node}:a"), _image("b", 2, f"{node}:b"),
              _image("c", 3, f"{node}:c"), _image("d", 4, f"{node}:d"),
              _image("used", 0, f"{node}:used", containers=1),
              _image("also-named", 0, f"{node}:x", "mine/elsewhere:1"),
              _image("tools", 1, "pytest-stacks/kind-node-tools:a"),
              _image("tools-new", 2, "pytest-stacks/kind-node-tools:b"),
              _image("other", 0, "debian:trixie")]
    assert [i.id for i in disk.superseded(images, keep=2)] == ["b", "a"]
    assert [i.id for i in disk.superseded(images, keep=1)] == ["c", "b", "a", "tools"]


class _Engine:
    """The docker SDK's client as reclaim uses it: build cache, dangling images, system df."""

    def __init__(self) -> None:
        node = "pytest-stacks/kind-node"
        self.listed = [
            {"Id": f"sha256:{n}", "RepoTags": [f"{node}:{n}"], "Created": n, "Size": 2 * disk.GIB,
             "SharedSize": disk.GIB, "Containers": 0} for n in range(1, 7)]
        self.calls: list[str] = []
        self.api = self
        self.images = self

    def prune_builds(self) -> dict[str, Any]:
        self.calls.append("build cache")
        return {"SpaceReclaimed": disk.GIB}

    def prune(self, filters: dict[str, Any]) -> dict[str, Any]:
        assert filters == {"dangling": True}
        self.calls.append("dangling")
        return {"SpaceReclaimed": disk.GIB // 2}

    def df(self) -> dict[str, Any]:
        return {"Images": list(self.listed)}

    def remove(self, image: str) -> None:
        self.calls.append(f"remove {image}")
        self.listed = [i for i in self.listed if i["Id"] != image]


def test_reclaim_gives_back_cache_dangling_and_superseded(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    engine = _Engine()
    monkeypatch.setattr(dockerutil, "client", lambda: engine)
    said: list[str] = []
    freed = disk.reclaim(said.append)
    assert engine.calls == ["build cache", "dangling", "remove sha256:2", "remove sha256:1"]
    assert freed == pytest.approx(1 + 0.5 + 2)  # each node image: its own 1 GiB of 2
    assert said[-1] == ("  gave back 3.5 GiB (build cache, untagged images, 2 superseded node "
                        "image(s))")


def test_doctor_checks_the_disk_for_all_the_stacks_at_once(monkeypatch: pytest.MonkeyPatch,
                                                           tmp_path: Path) -> None:
    stacks = [MANIFEST.get("slurm-24.11"), MANIFEST.get("k8s-1.36-node-mpi-0.8")]
    monkeypatch.setattr(disk, "data_root", lambda: tmp_path)
    monkeypatch.setattr(disk, "free_gib", lambda _: 6.0)
    check = doctor._disk_check(stacks)
    assert not check.ok and check.fix is disk.reclaim
    assert check.detail == f"6.0 GiB free on {tmp_path}, 7 GiB asked for by 2 stack(s) at once"
    monkeypatch.setattr(disk, "free_gib", lambda _: 7.0)
    assert doctor._disk_check(stacks).ok
