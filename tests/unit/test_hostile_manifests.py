"""Manifests that are hostile or just odd: refused fast, with the file named and no traceback,
by the loader, by pytest (plain and under xdist) and by every command that reads a manifest.
Plus a bounded fuzz run of the loader."""

from __future__ import annotations

import contextlib
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_stacks.errors import ManifestError
from pytest_stacks.manifest import load, loads
from pytest_stacks.manifest.positions import MAX_ALIASES, MAX_DEPTH, MAX_NODES
from pytest_stacks.manifest.reading import MAX_BYTES

REPO = Path(__file__).resolve().parents[2]
REAL = (REPO / "manifest.yaml").read_text()
PY = sys.executable
CLI = str(Path(PY).with_name("pytest-stacks"))


def _bomb(levels: int = 9) -> str:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    return "\n".join(lines) + "\n"


def _write(text: str | bytes) -> Callable[[Path], Path]:
    def make(tmp: Path) -> Path:
        path = tmp / "manifest.yaml"
        if isinstance(text, bytes):
            path.write_bytes(text)
        else:
            path.write_text(text)
        return path
    return make


def _directory(tmp: Path) -> Path:
    (tmp / "manifest.yaml").mkdir()
    return tmp / "manifest.yaml"


def _dangling(tmp: Path) -> Path:
    (tmp / "manifest.yaml").symlink_to(tmp / "gone.yaml")
    return tmp / "manifest.yaml"


def _loop(tmp: Path) -> Path:
    (tmp / "a.yaml").symlink_to(tmp / "manifest.yaml")
    (tmp / "manifest.yaml").symlink_to(tmp / "a.yaml")
    return tmp / "manifest.yaml"


def _fifo(tmp: Path) -> Path:
    os.mkfifo(tmp / "manifest.yaml")  # reading it would block forever
    return tmp / "manifest.yaml"


# (id, how to make the file, what the message must say)
HOSTILE: list[tuple[str, Callable[[Path], Path], str]] = [
    ("alias-bomb", _write(_bomb()), f"expands to more than {MAX_NODES:,} values"),
    ("self-alias", _write("version: &v [1, *v]\n"), "a YAML alias refers to a node that"),
    ("self-alias-mapping", _write("a: &m {b: *m}\n"), "(a loop)"),
    ("many-aliases", _write("a: &a 1\nb: [" + ", ".join(["*a"] * (MAX_ALIASES + 1)) + "]\n"),
     f"more than {MAX_ALIASES} YAML aliases"),
    ("deep-flow", _write("a: " + "[" * 200_000 + "]" * 200_000 + "\n"),
     f"nested more than {MAX_DEPTH} levels deep"),
    ("deep-block", _write("".join(" " * i + "a:\n" for i in range(60))),
     f"nested more than {MAX_DEPTH} levels deep"),
    ("several-megabytes", _write(REAL * 400), f"a manifest may be at most {MAX_BYTES:,} bytes"),
    ("not-utf8", _write(REAL.encode()[:200] + b"\xff\xfe\n"), "is not UTF-8 text (byte 0xff"),
    ("directory", _directory, "is a directory, not a manifest"),
    ("dangling-symlink", _dangling, "which does not exist"),
    ("symlink-loop", _loop, "is a symlink loop"),
    ("fifo", _fifo, "is not a regular file"),
    # Found by the fuzzer: `?` is a mapping whose only key is null.
    ("null-key", _write("?\n"), "a key that is not a string (YAML reads the key as null)"),
    ("bool-key", _write("version: 1\non: 3\n"), "YAML reads 'on' as bool"),
    ("collection-key", _write("[a]: b\n"), "YAML reads the key as a collection"),
]


@pytest.mark.parametrize(("make", "expected"), [(m, e) for _, m, e in HOSTILE],
                         ids=[i for i, _, _ in HOSTILE])
def test_loader_refuses_fast_and_clearly(tmp_path: Path, make: Callable[[Path], Path],
                                         expected: str) -> None:
    path = make(tmp_path)
    with pytest.raises(ManifestError) as caught:
        load(path)
    assert expected in str(caught.value) and str(path) in str(caught.value)


HOSTILE_BY_ID = {i: (m, e) for i, m, e in HOSTILE}
ENTRY_POINTS = [
    ("pytest", [PY, "-m", "pytest", "-p", "no:cacheprovider", "--stack-manifest", "{m}", "-q"]),
    ("pytest -n 2", [PY, "-m", "pytest", "-p", "no:cacheprovider", "-n", "2",
                     "--stack-manifest", "{m}", "-q"]),
    ("pytest --stacks", [PY, "-m", "pytest", "--stacks", "--stack-manifest", "{m}"]),
    *[(f"pytest-stacks {c}", [CLI, "--manifest", "{m}", *c.split()])
      for c in ("list", "show slurm-24.11", "doctor", "up slurm-24.11", "matrix --lane pr",
                "window")],
]


@pytest.mark.parametrize("case", ["alias-bomb", "deep-flow", "not-utf8", "symlink-loop",
                                  "fifo"])
@pytest.mark.parametrize(("name", "argv"), ENTRY_POINTS, ids=[n for n, _ in ENTRY_POINTS])
def test_every_entry_point_exits_4_without_a_traceback(tmp_path: Path, case: str, name: str,
                                                       argv: list[str]) -> None:
    make, expected = HOSTILE_BY_ID[case]
    path = make(tmp_path)
    (tmp_path / "test_x.py").write_text("def test_x():\n    pass\n")
    done = subprocess.run([a.replace("{m}", str(path)) for a in argv], cwd=tmp_path,
                          capture_output=True, text=True, timeout=60, check=False)
    out = done.stdout + done.stderr
    assert done.returncode == 4, out[-2000:]
    assert expected in out and str(path) in out
    assert "Traceback" not in out and "INTERNALERROR" not in out


# ---------------------------------------------------------------- fuzzing (bounded)

_scalars = st.one_of(st.none(), st.booleans(), st.integers(-5, 10**6),
                     st.floats(allow_nan=False), st.text(max_size=12))
_trees = st.recursive(_scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=10), inner, max_size=4)),
    max_leaves=25)


def _loads_fails_only_cleanly(text: str) -> None:
    with contextlib.suppress(ManifestError):  # the only exception allowed
        loads(text, REPO / "fuzz-manifest.yaml")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.text(max_size=400))
def test_fuzz_arbitrary_text(text: str) -> None:
    _loads_fails_only_cleanly(text)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(cut=st.integers(0, len(REAL)), junk=st.text(max_size=40), keep=st.integers(0, 400))
def test_fuzz_damaged_real_manifest(cut: int, junk: str, keep: int) -> None:
    _loads_fails_only_cleanly(REAL[:cut] + junk + REAL[cut + keep:])


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(field=st.sampled_from(["name", "backend", "version", "provider", "transport",
                              "capabilities", "lanes", "compose", "options", "timeouts",
                              "extends", "configuration"]),
       value=_trees)
def test_fuzz_stack_fields(field: str, value: object) -> None:
    import yaml

    data = yaml.safe_load(REAL)
    data["stacks"][4][field] = value
    _loads_fails_only_cleanly(yaml.safe_dump(data))
