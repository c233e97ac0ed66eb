"""Manifest loading and validation: a corpus of broken manifests, each with its message."""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_stacks.errors import ManifestError
from pytest_stacks.manifest import load, loads

REPO = Path(__file__).resolve().parents[2]

BASE: dict[str, Any] = {
    "version": 1,
    "capabilities": {"submit": "s", "status": "t", "outputs": "o", "outputs.repeatable": "r"},
    "backends": {
        "slurm": {"window": {"anchor": "22.05", "leading_edge": "26.05"}},
        "htcondor": {"window": {"anchor": "23.9", "leading_edge": "25.14"}},
    },
    "stacks": [
        {"name": "fake-slurm", "backend": "slurm", "version": "24.11.5", "provider": "fake",
         "transport": "local", "capabilities": ["submit", "status"],
         "configuration": "single-node", "lanes": ["pr"]},
        {"name": "slurm-24.11", "backend": "slurm", "version": "24.11.5", "provider": "compose",
         "transport": "local", "capabilities": ["submit", "status", "outputs"],
         "configuration": "single-node", "lanes": ["full"],
         "base_image": {"name": "debian", "tag": "trixie-slim", "seed": "trixie"},
         "compose": {"directory": "stacks/slurm", "service": "slurm",
                     "build_args": {"SLURM_VERSION": "24.11.5-4+deb13u1"}}},
    ],
}


def _write(tmp_path: Path, data: Any) -> Path:
    (tmp_path / "stacks/slurm").mkdir(parents=True, exist_ok=True)
    (tmp_path / "stacks/slurm/compose.yaml").write_text("services: {slurm: {image: x}}\n")
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


def mutate(fn: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
    data = copy.deepcopy(BASE)
    fn(data)
    return data


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def apply(data: dict[str, Any]) -> None:
        target: Any = data
        parts = path.split("/")
        for part in parts[:-1]:
            target = target[int(part)] if part.isdigit() else target[part]
        last = parts[-1]
        if value is _DELETE:
            del target[int(last) if last.isdigit() else last]
        elif last.isdigit():
            target[int(last)] = value
        else:
            target[last] = value
    return apply


_DELETE = object()


def _declare_backend_and_use(name: str) -> Callable[[dict[str, Any]], None]:
    def apply(data: dict[str, Any]) -> None:
        data["backends"][name] = {"window": {"anchor": "1.0", "leading_edge": "2.0"}}
        data["stacks"][0]["backend"] = name
        data["stacks"][0]["version"] = "1.0"
    return apply

# (id, mutation, substrings the message must contain)
CORPUS: list[tuple[str, Callable[[dict[str, Any]], None], list[str]]] = [
    ("unknown-top-key", _set("stackz", []), ["stackz: unknown key", "Did you mean 'stacks'"]),
    ("misspelt-stack-key", _set("stacks/1/capabilitiez", ["submit"]),
     ["stacks[1] (slurm-24.11).capabilitiez: unknown key", "Did you mean 'capabilities'"]),
    ("missing-version", _set("version", _DELETE), ["missing required key(s): version"]),
    ("wrong-format-version", _set("version", 2), ["version: 2 is not supported. Expected 1"]),
    ("missing-stacks", _set("stacks", _DELETE), ["missing required key(s): stacks"]),
    ("empty-stacks", _set("stacks", []), ["stacks: must not be empty"]),
    ("stacks-not-list", _set("stacks", {"a": 1}), ["stacks: expected a list, got mapping"]),
    ("missing-backend", _set("stacks/0/backend", _DELETE),
     ["stacks[0] (fake-slurm): missing required key(s): backend"]),
    ("bad-provider", _set("stacks/0/provider", "docker"),
     ["provider: 'docker' is not allowed", "compose, kind, fake"]),
    ("provider-typo", _set("stacks/0/provider", "fak"), ["Did you mean 'fake'"]),
    ("bad-transport", _set("stacks/0/transport", "telnet"), ["transport: 'telnet' is not allowed"]),
    ("version-not-string", _set("stacks/0/version", 24.11),
     ["stacks[0] (fake-slurm).version: expected a string, got number"]),
    ("version-garbage", _set("stacks/0/version", "latest"),
     ["'latest' is not valid: expected a dotted version"]),
    ("bad-stack-name", _set("stacks/0/name", "Fake Slurm"),
     ["name: 'Fake Slurm' is not valid: expected a lowercase name"]),
    ("duplicate-stack-name", _set("stacks/1/name", "fake-slurm"),
     ["duplicate stack name 'fake-slurm'"]),
    ("dangling-backend", _set("stacks/0/backend", "slurn"),
     ["backend 'slurn' is not declared under 'backends'", "Did you mean 'slurm'"]),
    ("dangling-capability", _set("stacks/0/capabilities", ["submit", "outputz"]),
     ["unknown capability 'outputz'", "Did you mean 'outputs'"]),
    ("duplicate-capability", _set("stacks/0/capabilities", ["submit", "submit"]),
     ["capabilities: contains duplicates"]),
    ("bad-lane", _set("stacks/0/lanes", ["nightly"]), ["'nightly' is not allowed", "pr, full"]),
    ("canary-is-not-a-lane", _set("stacks/0/lanes", ["canary"]), ["'canary' is not allowed"]),
    ("anchor-after-edge", _set("backends/slurm/window/anchor", "27.05"),
     ["anchor '27.05' is newer than leading_edge '26.05'"]),
    ("window-missing-edge", _set("backends/slurm/window/leading_edge", _DELETE),
     ["missing required key(s): leading_edge"]),
    ("backend-without-window", _set("backends/slurm/window", _DELETE),
     ["backends.slurm: missing required key(s): window"]),
    ("stack-beyond-edge", _set("stacks/1/version", "27.05.1"),
     ["'27.05.1' is newer than the slurm window's leading_edge '26.05'"]),
    ("compose-without-compose", _set("stacks/1/compose", _DELETE),
     ["missing required key(s): compose"]),
    ("compose-dir-missing", _set("stacks/1/compose/directory", "stacks/nope"),
     ["has no compose.yaml", "Point 'directory'"]),
    ("bad-digest", _set("stacks/1/base_image/digest", "sha256:abc"),
     ["'sha256:abc' is not valid: expected a digest"]),
    ("bad-seed-suite", _set("stacks/1/base_image/seed", "buster"),
     ["seed: 'buster' is not allowed"]),
    ("build-arg-not-string", _set("stacks/1/compose/build_args/SLURM_VERSION", 24),
     ["SLURM_VERSION: expected a string, got integer"]),
    ("bad-port-name", _set("stacks/1/compose/ports", ["condor port"]),
     ["'condor port' is not valid: expected an UPPER_CASE environment variable name"]),
    ("kind-without-kind", _set("stacks/0/provider", "kind"), ["missing required key(s): kind"]),
    ("negative-timeout", _set("stacks/0/timeouts", {"up": -1}), ["up: -1 is too small"]),
    ("unknown-timeout", _set("stacks/0/timeouts", {"upp": 3}),
     ["timeouts.upp: unknown key", "Did you mean 'up'"]),
    ("capabilities-empty", _set("capabilities", {}), ["capabilities: must not be empty"]),
    ("bad-capability-name", _set("capabilities", {"Submit Jobs": "x"}),
     ["'Submit Jobs' is not valid: expected a capability name"]),
    ("canary-empty", _set("stacks/1/canary", {}), ["canary: must not be empty"]),
    ("stack-not-mapping", _set("stacks/0", "fake-slurm"),
     ["stacks[0]: expected a mapping, got string"]),
    ("transport-not-implemented", _set("stacks/1/transport", "kubernetes"),
     ["stacks[1] (slurm-24.11).transport: the slurm driver does not support transport "
      "'kubernetes'", "Supported for slurm: local, ssh"]),
    ("transport-of-another-backend", _set("stacks/0/transport", "bindings"),
     ["stacks[0] (fake-slurm).transport", "does not support transport 'bindings'"]),
    ("backend-without-driver", _declare_backend_and_use("pbs"),
     ["stacks[0] (fake-slurm).backend: pytest-stacks has no driver for backend 'pbs'",
      "Drivers exist for: slurm, htcondor"]),
]


@pytest.mark.parametrize(("mutation", "expected"), [(m, e) for _, m, e in CORPUS],
                         ids=[i for i, _, _ in CORPUS])
def test_broken_manifest_is_explained(tmp_path: Path, mutation: Callable[[dict[str, Any]], None],
                                      expected: list[str]) -> None:
    path = _write(tmp_path, mutate(mutation))
    with pytest.raises(ManifestError) as caught:
        load(path)
    message = str(caught.value)
    for fragment in expected:
        assert fragment in message, message
    for line in caught.value.problems:
        assert re.match(rf"{re.escape(str(path))}:\d+: ", line), line
    assert "Traceback" not in message


def test_corpus_is_large_enough() -> None:
    assert len(CORPUS) + len(RAW_CORPUS) >= 30


RAW_CORPUS = [
    ("not-yaml", "version: 1\nstacks: [\n", ["not valid YAML", "manifest.yaml:"]),
    ("empty", "", ["the manifest is empty"]),
    ("duplicate-key", "version: 1\nversion: 1\n", ["manifest.yaml:2: version: duplicate key",
                                                   "line 1"]),
    ("top-level-list", "- a\n- b\n", ["(top level): expected a mapping, got list"]),
]


@pytest.mark.parametrize(("text", "expected"), [(t, e) for _, t, e in RAW_CORPUS],
                         ids=[i for i, _, _ in RAW_CORPUS])
def test_broken_manifest_text(text: str, expected: list[str]) -> None:
    with pytest.raises(ManifestError) as caught:
        loads(text, "manifest.yaml")
    for fragment in expected:
        assert fragment in str(caught.value)


def test_error_points_at_the_offending_line(tmp_path: Path) -> None:
    data = mutate(_set("stacks/1/capabilitiez", ["submit"]))
    path = _write(tmp_path, data)
    lines = path.read_text().splitlines()
    expected_line = next(i for i, line in enumerate(lines, 1) if "capabilitiez" in line)
    with pytest.raises(ManifestError) as caught:
        load(path)
    assert f"{path}:{expected_line}:" in str(caught.value)


def test_every_problem_is_reported_at_once(tmp_path: Path) -> None:
    def two(data: dict[str, Any]) -> None:
        data["stacks"][0]["provider"] = "nope"
        data["stacks"][1]["lanes"] = ["weekly"]
    with pytest.raises(ManifestError) as caught:
        load(_write(tmp_path, mutate(two)))
    assert len(caught.value.problems) == 2


def test_missing_file_says_what_to_do(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match=r"no such manifest.*--stack-manifest"):
        load(tmp_path / "absent.yaml")


def test_valid_manifest_is_typed(tmp_path: Path) -> None:
    manifest = load(_write(tmp_path, BASE))
    stack = manifest.get("slurm-24.11")
    assert stack.compose is not None and stack.compose.service == "slurm"
    assert stack.role == "supported"
    assert stack.capabilities == frozenset({"submit", "status", "outputs"})
    assert stack.requires == ("docker",)
    assert manifest.get("fake-slurm").requires == ()


@pytest.mark.parametrize(("version", "role"), [("20.11.4", "legacy"), ("22.05.8", "anchor"),
                                               ("24.11.5", "supported"),
                                               ("26.05.5", "leading-edge")])
def test_window_roles(tmp_path: Path, version: str, role: str) -> None:
    manifest = load(_write(tmp_path, mutate(_set("stacks/1/version", version))))
    assert manifest.get("slurm-24.11").role == role


def test_repository_manifest_is_valid() -> None:
    manifest = load(REPO / "manifest.yaml")
    assert {s.provider for s in manifest.stacks} >= {"fake", "compose"}
    for stack in manifest.stacks:
        if stack.provider == "compose":
            assert stack.compose is not None
            assert (stack.compose.directory / "compose.yaml").is_file()
