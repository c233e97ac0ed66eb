"""What binds a results file to what produced it, and a plan to the checkout it was made on.

A results file is JSON anyone can write: one written from the manifest alone, or a fake's file
relabelled as a real stack, would otherwise merge green. So a run records, and every matrix row
carries, what the report recomputes on the checkout the jobs tested:

- the git commit (``unknown`` outside a repository, said as such, never guessed);
- the manifest: its typed content, whichever file (or catalogue it extends) it came from;
- each stack's inputs: its manifest entry with every option and timeout, and the content of its
  stack folders and of the ``stacks/`` folder they lie in (a build also reads shared folders
  such as ``object-store``), so an edited Dockerfile or entrypoint is another stack, not the
  pinned one;
- the code that ran: the ``pytest_stacks`` package and the project's Python code and pytest
  settings (every test path a run can take lies in the project);
- the plan: one digest of the lane's rows, which each job carries into its results, so a file
  answers one row of one plan.

None of this is a signature: whoever recomputes the digests can still forge a file. It makes
every honest mistake and every lazy forgery (another commit, another lane, another stack, an
edited matrix, a file written without a run) fail by name instead of passing.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import hashlib
import json
import os
import re
import stat
import subprocess
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import cache
from pathlib import Path
from typing import Any

from pytest_stacks.manifest import Manifest, Stack

UNKNOWN = "unknown"
#: The row keys this module adds; ``plan`` is the digest of the rows without it.
ROW_KEYS = ("commit", "manifest_digest", "inputs_digest", "code_digest", "plan")
#: Folders no test is collected from (pytest's default ``norecursedirs``) and build output.
SKIPPED_DIRS = ("*.egg", "*.egg-info", ".*", "_darcs", "build", "CVS", "dist", "node_modules",
                "venv", "{arch}", "__pycache__")
#: The project's files that decide what pytest runs besides its Python code.
SETTINGS_FILES = ("pytest.ini", ".pytest.ini", "pyproject.toml", "tox.ini", "setup.cfg")
_COMMIT = re.compile(r"[0-9a-f]{40}([0-9a-f]{24})?")


def commit(project: Path) -> str:
    """The commit checked out at ``project``; :data:`UNKNOWN` outside a git repository (or
    without git), never a guess."""
    try:
        done = subprocess.run(["git", "rev-parse", "--verify", "--quiet", "HEAD"], cwd=project,
                              capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.SubprocessError):
        return UNKNOWN
    found = done.stdout.strip()
    return found if done.returncode == 0 and _COMMIT.fullmatch(found) else UNKNOWN


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _plain(value: Any, root: Path) -> Any:
    """``value`` as JSON data that is the same on every machine: paths relative to the
    manifest's folder, sets sorted."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name), root) for f in dataclasses.fields(value)}
    if isinstance(value, Path):
        try:
            return value.resolve().relative_to(root.resolve()).as_posix()
        except ValueError:
            return value.name
    if isinstance(value, Mapping):
        return {str(k): _plain(v, root) for k, v in value.items()}
    if isinstance(value, frozenset | set):
        return sorted(_plain(v, root) for v in value)
    if isinstance(value, list | tuple):
        return [_plain(v, root) for v in value]
    return value


def _canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False,
                      default=str).encode()


def manifest_digest(manifest: Manifest) -> str:
    """The manifest's typed content: capabilities, backends and every stack entry."""
    root = manifest.root
    return _sha(_canonical({"capabilities": _plain(manifest.capabilities, root),
                            "backends": _plain(manifest.backends, root),
                            "stacks": [_plain(s, root) for s in manifest.stacks]}))


def stack_folders(stack: Stack, root: Path | None = None) -> list[Path]:
    """The folders a stack is built from: its own (``compose``'s, a kind node build's) or, for
    one under a ``stacks/`` folder of the manifest's (``root``: the manifest's folder), that
    whole folder, since a build also reads the shared ones beside its own (an object store's,
    a stager's); never a ``stacks`` folder above the manifest's. None for a fake or an
    existing site."""
    own = [stack.compose.directory] if stack.compose is not None else []
    if stack.kind is not None and stack.kind.node_build is not None:
        own.append(stack.kind.node_build.directory)
    return sorted({_stacks_root(folder, root) for folder in own})


def _stacks_root(folder: Path, root: Path | None) -> Path:
    within = root.resolve() if root is not None else None
    return next((p for p in folder.parents if p.name == "stacks"
                 and (within is None or p.resolve().is_relative_to(within))), folder)


def inputs_digest(manifest: Manifest, stack: Stack) -> str:
    """The stack's manifest entry (options, timeouts, canary block included) and the content
    of every file in its stack folders."""
    parts = [_canonical(_plain(stack, manifest.root))]
    parts += [_tree(folder, lambda rel: True, code=False).encode()
              for folder in stack_folders(stack, manifest.root)]
    return _sha(b"\0".join(parts))


def _skipped(name: str, path: Path, code: bool) -> bool:
    """Folders left out: caches and hidden ones (a run's own ``.pytest-stacks``) always; for
    code, also virtual environments, build output and what pytest never collects."""
    if name == "__pycache__" or name.startswith("."):
        return True
    if not code:
        return False
    return any(fnmatch.fnmatch(name, p) for p in SKIPPED_DIRS) or (path / "pyvenv.cfg").exists()


def _file_digest(path: Path) -> str:
    """A regular file's content digest; anything else (a FIFO, a socket, a dangling link) is
    named, never opened: opening a FIFO would block the run forever."""
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return "not a regular file"
        return _sha(path.read_bytes())
    except OSError as exc:
        return f"unreadable: {exc.strerror or exc}"


def _tree(folder: Path, keep: Callable[[str], bool], code: bool = True) -> str:
    """A digest of the files under ``folder`` that ``keep`` (given the path relative to it)
    accepts: their relative paths and contents, in a fixed order; a missing folder is said."""
    if not folder.is_dir():
        return _sha(f"missing {folder.name}".encode())
    entries: list[tuple[str, str]] = []
    for here, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not _skipped(d, Path(here, d), code))
        for name in files:
            path = Path(here, name)
            rel = path.relative_to(folder).as_posix()
            if name.endswith((".pyc", ".pyo")) or not keep(rel):
                continue
            entries.append((rel, _file_digest(path)))
    return _sha("\n".join(f"{rel}\0{digest}" for rel, digest in sorted(entries)).encode())


@cache
def package_digest() -> str:
    """Every file of the installed ``pytest_stacks`` package (the driver code, the fakes, the
    plugin): the same install gives the same digest on every machine."""
    return _tree(Path(__file__).resolve().parents[1], lambda rel: True)


def _project_code(rel: str) -> bool:
    return rel.endswith(".py") or rel in SETTINGS_FILES


def code_digest(project: Path) -> str:
    """The code a run executes: the ``pytest_stacks`` package, and the project's Python files
    and pytest settings (hidden folders, virtual environments and build output left out). In
    a git checkout the files are those git lists (tracked, and new ones it does not ignore),
    so a run whose rootdir is a big folder does not walk all of it at every collection."""
    listed = _git_files(project)
    tree = _tree(project, _project_code) if listed is None else _listed(project, listed)
    return _sha(f"{package_digest()}\0{tree}".encode())


def _git_files(project: Path) -> list[str] | None:
    """The files git lists under ``project`` (relative to it); None outside a checkout."""
    try:
        done = subprocess.run(["git", "ls-files", "-z", "--cached", "--others",
                               "--exclude-standard", "--", "."], cwd=project,
                              capture_output=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0:
        return None
    return [f for f in done.stdout.decode("utf-8", "surrogateescape").split("\0") if f]


def _listed(project: Path, files: Iterable[str]) -> str:
    """:func:`_tree`'s digest of the listed project files, with its choice of files."""
    entries = []
    for rel in set(files):
        parts = rel.split("/")
        if any(_skipped(part, project.joinpath(*parts[:i + 1]), True)
               for i, part in enumerate(parts[:-1])):
            continue
        if rel.endswith((".pyc", ".pyo")) or not _project_code(rel):
            continue
        path = project / rel
        if path.is_symlink() or path.exists():
            entries.append((rel, _file_digest(path)))
    return _sha("\n".join(f"{rel}\0{digest}" for rel, digest in sorted(entries)).encode())


def plan_digest(rows: Sequence[Mapping[str, Any]]) -> str:
    """The digest of a lane's rows (each without its own ``plan``)."""
    return _sha(_canonical([{k: v for k, v in r.items() if k != "plan"} for r in rows]))


def bind(rows: Iterable[dict[str, Any]], manifest: Manifest, project: Path
         ) -> list[dict[str, Any]]:
    """The rows with what binds their jobs' results: the commit, the manifest's digest, the
    stack's inputs, the code, and the plan (the digest of all of them)."""
    head, manifest_, code = commit(project), manifest_digest(manifest), code_digest(project)
    bound = [{**r, "commit": head, "manifest_digest": manifest_,
              "inputs_digest": inputs_digest(manifest, manifest.get(r["stack"])),
              "code_digest": code} for r in rows]
    plan = plan_digest(bound)
    return [{**r, "plan": plan} for r in bound]
