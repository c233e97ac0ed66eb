"""The public surface (issue 56): what ``__all__`` promises exists, ``import pytest_stacks``
stays cheap, and every import line the docs show a user works as written."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

import pytest_stacks
from pytest_stacks import contract, errors

REPO = Path(__file__).resolve().parents[2]
REFERENCE = REPO / "docs" / "getting-started.md"
PYTHON_BLOCK = re.compile(r"^```python\n(.*?)^```", re.M | re.S)


@pytest.mark.parametrize("module", [pytest_stacks, contract], ids=lambda m: m.__name__)
def test_every_exported_name_exists(module: ModuleType) -> None:
    missing = [name for name in module.__all__ if not hasattr(module, name)]
    assert not missing, f"{module.__name__}.__all__ names what it does not have: {missing}"
    assert len(set(module.__all__)) == len(module.__all__), "a name listed twice"


def test_the_package_exports_the_contracts_own_objects() -> None:
    """A lazily loaded name is the object of its module, not a copy that isinstance misses."""
    for name in pytest_stacks.__all__:
        if name == "__version__":
            continue
        home = contract if name in contract.__all__ else errors
        assert getattr(pytest_stacks, name) is getattr(home, name), name


def test_contract_names_everything_public_it_defines() -> None:
    """A class or function added to the contract is exported, or named private."""
    tree = ast.parse(Path(contract.__file__).read_text())
    defined = {node.name for node in tree.body
               if isinstance(node, ast.ClassDef | ast.FunctionDef)
               and not node.name.startswith("_")}
    assert defined <= set(contract.__all__), sorted(defined - set(contract.__all__))


def test_an_unknown_name_is_an_attribute_error_and_submodules_still_import() -> None:
    with pytest.raises(AttributeError, match="no attribute 'JobSpecs'"):
        _ = pytest_stacks.JobSpecs  # type: ignore[attr-defined]
    from pytest_stacks import places  # a submodule, not one of the lazy names

    assert places.__name__ == "pytest_stacks.places"


def test_importing_the_package_does_not_import_the_contract() -> None:
    """`import pytest_stacks` (every module reading __version__ does it) stays cheap."""
    probe = ("import sys, pytest_stacks; "
             "print(sorted(m for m in sys.modules if m.startswith('pytest_stacks')))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True,
                          check=True, cwd=REPO)
    assert done.stdout.strip() == "['pytest_stacks']", done.stdout


def _documented_imports() -> list[tuple[str, str]]:
    """(where, statement) for every import of pytest_stacks in a python block of the docs."""
    found = []
    for page in sorted([*(REPO / "docs").glob("*.md"), REPO / "README.md",
                        REPO / "examples" / "user-project" / "README.md"]):
        for block in PYTHON_BLOCK.finditer(page.read_text()):
            try:
                nodes = ast.walk(ast.parse(block.group(1)))
            except SyntaxError:  # a fragment: its one-line imports still count
                lines = [ln.strip() for ln in block.group(1).splitlines()]
                nodes = (node for ln in lines if ln.startswith(("from ", "import "))
                         for node in ast.walk(ast.parse(ln)))
            for node in nodes:
                if isinstance(node, ast.Import | ast.ImportFrom):
                    statement = ast.unparse(node)
                    if "pytest_stacks" in statement:
                        found.append((page.name, statement))
    return list(dict.fromkeys(found))


DOCUMENTED = _documented_imports()


def test_the_docs_show_imports() -> None:
    assert ("getting-started.md", "from pytest_stacks import JobSpec, JobState, submitted, "
            "wait_for") in DOCUMENTED


@pytest.mark.parametrize(("page", "statement"), DOCUMENTED,
                         ids=[f"{p}:{s}" for p, s in DOCUMENTED])
def test_a_documented_import_works(page: str, statement: str) -> None:
    exec(compile(statement, page, "exec"), {})  # an ImportError names the missing name


def test_the_reference_lists_every_exported_name() -> None:
    section = REFERENCE.read_text().split("### What to import\n", 1)[1].split("\n### ", 1)[0]
    listed = set(re.findall(r"`(\w+)`", section))
    for module in (pytest_stacks, contract):
        unlisted = set(module.__all__) - listed
        assert not unlisted, f"{REFERENCE.name} 'What to import' omits {sorted(unlisted)}"
