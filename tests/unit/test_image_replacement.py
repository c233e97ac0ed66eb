"""An image rebuilt under the same name does not leave the old one on the disk: removed where
nothing names or runs it any more, kept otherwise (an engine stand-in, no Docker)."""

from __future__ import annotations

import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pytest_stacks import dockerutil


@dataclass
class _Image:
    id: str
    labels: dict[str, str]
    tags: list[str] = field(default_factory=list)


class _Engine:
    def __init__(self) -> None:
        self.images: dict[str, _Image] = {}
        self.running: set[str] = set()  # ids a container runs
        self.built = 0

    # the docker SDK's client().images
    def get(self, name: str) -> _Image:
        for image in self.images.values():
            if name == image.id or name in image.tags:
                return image
        raise LookupError(name)

    def remove(self, image: str) -> None:
        if image in self.running:
            raise RuntimeError("409 conflict: image is being used by a running container")
        del self.images[image]

    def build(self, args: list[str], **_: object) -> subprocess.CompletedProcess[str]:
        reference = args[args.index("-t") + 1]
        label = next(a for a in args if a.startswith("--label="))[len("--label="):]
        key, value = label.split("=", 1)
        for image in self.images.values():
            if reference in image.tags:
                image.tags.remove(reference)
        self.built += 1
        new = _Image(f"sha256:{self.built}", {key: value}, [reference])
        self.images[new.id] = new
        return subprocess.CompletedProcess(args, 0, "", "")


@pytest.fixture
def engine(monkeypatch: pytest.MonkeyPatch) -> _Engine:
    stand_in = _Engine()
    client = type("Client", (), {"images": stand_in})()
    monkeypatch.setattr(dockerutil, "client", lambda: client)
    monkeypatch.setattr(dockerutil, "run_cli", stand_in.build)
    return stand_in


def _rebuild(context: Path, text: str) -> bool:
    (context / "Dockerfile").write_text(text)
    return dockerutil.ensure_built_image("pytest-stacks/x:1", context, {}, "", timeout=5)


def test_the_image_a_rebuild_replaces_is_removed(engine: _Engine, tmp_path: Path) -> None:
    assert _rebuild(tmp_path, "FROM scratch\n")
    assert not _rebuild(tmp_path, "FROM scratch\n"), "same inputs: nothing built"
    assert _rebuild(tmp_path, "FROM scratch\nLABEL changed=1\n")
    assert list(engine.images) == ["sha256:2"]


def test_a_replaced_image_still_named_or_running_stays(engine: _Engine, tmp_path: Path) -> None:
    _rebuild(tmp_path, "FROM scratch\n")
    engine.images["sha256:1"].tags.append("pytest-stacks/x:kept")
    _rebuild(tmp_path, "FROM scratch\nLABEL changed=1\n")
    engine.running.add("sha256:2")
    engine.images["sha256:2"].tags.clear()
    engine.images["sha256:2"].tags.append("pytest-stacks/x:1")
    _rebuild(tmp_path, "FROM scratch\nLABEL changed=2\n")
    assert sorted(engine.images) == ["sha256:1", "sha256:2", "sha256:3"]
