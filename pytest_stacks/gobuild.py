"""Pinned Go programs a stack needs, built from their modules and cached by their inputs.

There is no registry for binaries here (and no downloading of release archives): a stack that
needs kube-apiserver or the MPI Operator builds it with the Go toolchain through the module
proxy, from a go.mod of ours generated from the manifest's pins, version-stamped with
``-ldflags -X`` so the program reports the pinned version. A build is done once per set of
inputs (module versions, packages, flags, Go version) and kept under the user's cache; a
missing toolchain or an unreachable proxy is a clear error, never a hang.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from pytest_stacks import cancellation, environ, progress
from pytest_stacks.errors import StacksError

GO_CANDIDATES = ("/usr/local/go/bin/go",)
COMPLETE = ".complete"
MODULE = "pytest-stacks.invalid/build"  # the path of the go.mod of ours


class GoBuildError(StacksError):
    """The toolchain is missing, the proxy refused a module, or a build failed."""


@dataclass(frozen=True)
class GoModuleBuild:
    """One go.mod of ours: the modules it requires, the main packages it builds.

    ``stage_replacements_of`` names a module (k8s.io/kubernetes) whose own go.mod requires
    its staging modules at v0.0.0 with replace directives that ``go install`` refuses; each is
    replaced here with the published v0.<minor>.<patch> of the same release.

    ``sources`` are Go files of ours (path in our module -> text), for a main package that
    builds a program from its modules' packages differently than their own main does (CoreDNS
    with only the plugins a test cluster uses); a program names it as ``MODULE + "/" + dir``.

    ``patch_align`` = (module, version): that module's ``k8s.io/*`` requirements of the same
    minor as ``version`` are required at ``version`` (kwok v0.8.0 asks for v0.36.1, the
    stack's Kubernetes is v0.36.3): one patch release of the same API, so Go's build cache
    compiles client-go and its siblings once for the stack's version, not twice.

    ``after``: builds whose compiled packages this one shares (the same module versions: a
    version's kubelet and its kube-apiserver, kwok aligned to it), built first. Go's build
    cache serves a package compiled by an earlier process, never by one still running: two
    such builds at once compile the shared part twice (seen on a new machine: the kubelet of
    v1.37 beside that version's control plane, ten minutes of a core for nothing).
    """

    name: str
    requires: Mapping[str, str]
    programs: Mapping[str, str]  # output name -> main package
    ldflags: tuple[str, ...] = ()
    stage_replacements_of: str | None = None
    files: Mapping[str, str] = field(default_factory=dict)  # out name -> "module:path in zip"
    sources: Mapping[str, str] = field(default_factory=dict)
    patch_align: tuple[str, str] | None = None
    after: tuple[GoModuleBuild, ...] = ()

    def digest(self, go_version: str) -> str:
        text = json.dumps([self.requires, self.programs, self.ldflags, self.stage_replacements_of,
                           self.files, self.sources, self.patch_align, go_version],
                          sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:16]


def go_binary() -> str:
    found = shutil.which("go") or next((c for c in GO_CANDIDATES if Path(c).exists()), None)
    if found is None:
        raise GoBuildError(
            "the Go toolchain is not installed; it builds the pinned Kubernetes components. "
            "Install Go 1.2x (https://go.dev/dl, or your distribution's golang package) and "
            "make `go` available on PATH")
    return found


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "pytest-stacks" / "go"


def ensure_built(build: GoModuleBuild, *, timeout: float = 3600) -> Path:
    """The folder holding ``build``'s programs (and files), building them on first use."""
    for first in build.after:  # their packages, compiled once, are then this build's too
        ensure_built(first, timeout=timeout)
    go = go_binary()
    version = _run([go, "env", "GOVERSION"], Path.cwd(), 60).strip()
    target = cache_root() / f"{build.name}-{build.digest(version)}"
    if (target / COMPLETE).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with progress.step(f"Go build {build.name}"), \
            cancellation.file_lock(str(target) + ".lock"):  # one session builds, others wait
        if (target / COMPLETE).exists():
            return target
        shutil.rmtree(target, ignore_errors=True)
        _build(go, build, target, time.monotonic() + timeout)
        (target / COMPLETE).write_text(version + "\n")
    return target


def _build(go: str, build: GoModuleBuild, target: Path, deadline: float) -> None:
    tmp = target / "tmp"
    tmp.mkdir(parents=True)
    try:
        _build_in(go, build, target, deadline, tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _build_in(go: str, build: GoModuleBuild, target: Path, deadline: float, tmp: Path) -> None:
    work = target / "module"
    work.mkdir(parents=True)
    (work / "go.mod").write_text(_go_mod(go, build, work, deadline))
    for path, text in build.sources.items():
        (work / path).parent.mkdir(parents=True, exist_ok=True)
        (work / path).write_text(text)
    imports = "\n".join(f'\t_ "{pkg}"' for pkg in build.programs.values()
                        if not pkg.startswith(MODULE + "/"))  # ours: tidy sees their imports
    (work / "tools.go").write_text(f"//go:build tools\n\npackage tools\n\nimport (\n{imports}\n)\n")
    _run([go, "mod", "tidy"], work, _left(deadline), tmp)
    # Programs named as `go build` names them are built by one invocation: one package graph,
    # and one program links while the next compiles (two cores stay busy); the others alone.
    together = [p for n, p in build.programs.items() if n == default_name(p)]
    alone = {n: p for n, p in build.programs.items() if n != default_name(p)}
    flags = ["-trimpath", "-ldflags", " ".join(build.ldflags)]
    (target / "bin").mkdir(parents=True, exist_ok=True)
    if together:
        _run([go, "build", *flags, "-o", str(target / "bin") + "/", *together], work,
             _left(deadline), tmp)
    for name, package in alone.items():
        _run([go, "build", *flags, "-o", str(target / "bin" / name), package], work,
             _left(deadline), tmp)
    for out, source in build.files.items():
        module, _, inside = source.partition(":")
        directory = Path(_download(go, module, build.requires[module], work, deadline)["Dir"])
        (target / "files").mkdir(exist_ok=True)
        shutil.copyfile(directory / inside, target / "files" / out)


def default_name(package: str) -> str:
    """The file name ``go build -o DIR/`` gives a main package's program: its last path
    element, a major-version suffix (``/v3``) skipped."""
    parts = package.rstrip("/").split("/")
    if len(parts) > 1 and re.fullmatch(r"v\d+", parts[-1]):
        return parts[-2]
    return parts[-1]


def _go_mod(go: str, build: GoModuleBuild, work: Path, deadline: float) -> str:
    lines = [f"module {MODULE}", "", "go 1.24", ""]
    lines += [f"require {module} {version}" for module, version in sorted(build.requires.items())]
    if build.stage_replacements_of:
        version = build.requires[build.stage_replacements_of]
        info = _download(go, build.stage_replacements_of, version, work, deadline)
        go_mod = Path(info["GoMod"]).read_text()
        staging = re.findall(r"^\s*(k8s\.io/[\w.-]+) v0\.0\.0\s*$", go_mod, re.MULTILINE)
        published = "v0." + version.lstrip("v").split(".", 1)[1]  # v1.36.3 -> v0.36.3
        lines += ["", "replace ("] + [f"\t{m} => {m} {published}" for m in sorted(set(staging))]
        lines += [")"]
    if build.patch_align:
        module, target = build.patch_align
        info = _download(go, module, build.requires[module], work, deadline)
        lines += [f"require {m} {target}"
                  for m in aligned_requirements(Path(info["GoMod"]).read_text(), target)]
    return "\n".join(lines) + "\n"


def aligned_requirements(go_mod: str, target: str) -> list[str]:
    """The ``k8s.io/*`` modules a go.mod requires at another patch of ``target``'s minor."""
    minor = ".".join(target.split(".")[:2]) + "."  # v0.36.3 -> v0.36.
    found = re.findall(rf"^\s*(?:require\s+)?(k8s\.io/[\w.-]+)\s+({re.escape(minor)}\d+)\b",
                       go_mod, re.MULTILINE)
    return sorted({module for module, version in found if version != target})


def _download(go: str, module: str, version: str, work: Path, deadline: float) -> dict[str, str]:
    out = _run([go, "mod", "download", "-json", f"{module}@{version}"], work, _left(deadline))
    info: dict[str, str] = json.loads(out)
    if info.get("Error"):
        raise GoBuildError(f"the Go module proxy refused {module}@{version}: {info['Error']}")
    return info


_EXACT = re.compile(r"^v\d+\.\d+\.\d+(?:-[0-9A-Za-z.-]+)?$")
_resolved: dict[tuple[str, str], str] = {}
_resolving = threading.Lock()


def resolve_version(module: str, query: str, *, timeout: float = 120) -> str:
    """An exact module version for a pin: an exact ``vX.Y.Z`` as it is; a Go version query
    (``latest``, ``v1.37``: the newest release of that minor) as the module proxy answers it
    now, asked once per process. The canary lane floats its pins with queries; what it
    resolved to is what the build stamps and the stack must report."""
    if _EXACT.match(query):
        return query
    key = (module, query)
    with _resolving:  # one answer per process and query, whichever thread asks first
        return _resolved.get(key) or _resolve(key, timeout)


def _resolve(key: tuple[str, str], timeout: float) -> str:
    module, query = key
    if key not in _resolved:
        go = go_binary()
        where = cache_root()  # outside any go.mod (a user's project must not change it)
        where.mkdir(parents=True, exist_ok=True)
        out = _run([go, "list", "-m", "-json", f"{module}@{query}"], where, timeout)
        version = str(json.loads(out).get("Version", ""))
        if not _EXACT.match(version):
            raise GoBuildError(f"the Go module proxy answered {module}@{query} with "
                               f"{version or 'no version'!r}")
        progress.say(f"{module}@{query} is {version}")
        _resolved[key] = version
    return _resolved[key]


def _left(deadline: float) -> float:
    left = deadline - time.monotonic()
    if left <= 0:
        raise GoBuildError("the Go build ran out of time")
    return left


#: The compiler's collector runs four times less often than Go's default (GOGC=100): measured
#: here on etcd's server (565 packages, empty cache, two runs each), 15-22% less CPU, the same
#: peak memory; a GOGC the user set wins. Not an input of a compiled package: caches stay valid.
COMPILER_GOGC = "400"
#: Builds yield the CPU to everything else a session runs (daemons under test, the pytest
#: workers): a build nobody waits on only fills idle time, one a stack waits on loses nothing
#: to an idle machine.
NICE = ("nice", "-n", "10")


def command_environment() -> dict[str, str]:
    """What every ``go`` command here runs with (a pure static build, no VCS stamping)."""
    env = environ.snapshot({"GOFLAGS": "-buildvcs=false", "CGO_ENABLED": "0"})
    env.setdefault("GOGC", COMPILER_GOGC)
    return env


def _run(argv: Sequence[str], cwd: Path, timeout: float, tmp: Path | None = None) -> str:
    """``tmp``: the go command's GOTMPDIR, inside the build's own folder. A stopped or killed
    `go build` leaves its work folder (gigabytes for Kubernetes) behind; in /tmp those
    piled up run after run, here the next attempt at the build removes them with the rest."""
    niced = [*NICE, *argv] if shutil.which(NICE[0]) else list(argv)
    env = command_environment() | ({"GOTMPDIR": str(tmp)} if tmp else {})
    done = cancellation.run(niced, cwd=str(cwd), env=env, timeout=timeout)
    if done.returncode == 124 and "timed out after" in done.stderr:
        raise GoBuildError(f"`{' '.join(argv[:4])}` did not finish in {timeout:.0f}s")
    if done.returncode != 0:
        tail = "\n".join((done.stderr or done.stdout).strip().splitlines()[-15:])
        raise GoBuildError(f"`{' '.join(argv[:4])} ...` failed (exit {done.returncode}):\n{tail}")
    return done.stdout


def local_digest(source: Path, go_version: str) -> str:
    """The inputs of a local main package: every file of its folder (name and bytes) and Go."""
    digest = hashlib.sha256(go_version.encode())
    for path in sorted(p for p in source.rglob("*") if p.is_file()):
        digest.update(str(path.relative_to(source)).encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()[:16]


def ensure_local_built(name: str, source: Path, *, timeout: float = 600) -> Path:
    """A tiny main package of ours (``source``: a go.mod without requirements and its .go
    files) built once per content into ``<cache>/<name>-<digest>/bin/<name>``; no module is
    fetched. The Kubernetes node's pause program is one."""
    go = go_binary()
    version = _run([go, "env", "GOVERSION"], Path.cwd(), 60).strip()
    target = cache_root() / f"{name}-{local_digest(source, version)}"
    if (target / COMPLETE).exists():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with progress.step(f"Go build {name}"), cancellation.file_lock(str(target) + ".lock"):
        if (target / COMPLETE).exists():
            return target
        shutil.rmtree(target, ignore_errors=True)
        shutil.copytree(source, target / "module")
        _run([go, "build", "-trimpath", "-ldflags", "-s -w", "-o", str(target / "bin" / name),
              "."], target / "module", timeout)
        (target / COMPLETE).write_text(version + "\n")
    return target
