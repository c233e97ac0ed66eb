"""The architecture, checked: registry entries satisfy their protocols, modules and functions
stay small, and the import contracts run and fail when broken."""

from __future__ import annotations

import ast
import json
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks import registry
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.manifest import loads
from pytest_stacks.providers import fake_factory, provider_for, site_adapter, stack_adapter
from pytest_stacks.providers.base import Provider, SiteAdapter, StackAdapter

REPO = Path(__file__).resolve().parents[2]
PACKAGE = REPO / "pytest_stacks"
MAX_MODULE_LINES = 400
MAX_FUNCTION_LINES = 60
WHY_LONG = "Long because"  # a docstring that says why a function or module is longer


def _stack(backend: str, provider: str, transport: str) -> object:
    if provider == "existing":
        return _site(backend, "ssh")
    text = f"""
version: 1
capabilities: {{submit: s}}
backends: {{{backend}: {{window: {{anchor: "1.0", leading_edge: "9.0"}}}}}}
stacks:
  - {{name: x, backend: {backend}, version: "1.0", provider: {provider},
      transport: {transport}, capabilities: [submit], configuration: c, lanes: [pr],
      kind: {{kind_version: v0.31.0, node_image: {{name: n, tag: t}}, operator_version: "0.8.2"}},
      compose: {{directory: stacks/slurm, service: slurm}}}}
"""
    return loads(text, REPO / "manifest.yaml").stacks[0]


def _site(backend: str, transport: str) -> object:
    route = ("kubeconfig: {env: KUBECONFIG}" if transport == "kubernetes" else
             "job_root: /srv/pst, ssh: {login: {host: h, user: u}, key: {env: K}, "
             "known_hosts: {env: H}}")
    text = f"""
version: 1
capabilities: {{submit: s}}
backends: {{{backend}: {{window: {{anchor: "1.0", leading_edge: "9.0"}}}}}}
stacks:
  - {{name: x, backend: {backend}, version: "1.0", provider: existing,
      transport: {transport}, capabilities: [submit], configuration: c, lanes: [site],
      existing: {{{route}}}}}
"""
    return loads(text, REPO / "manifest.yaml").stacks[0]


@pytest.mark.parametrize("name", sorted(registry.PROVIDERS))
def test_every_provider_satisfies_the_protocol(name: str) -> None:
    backend = "mpi-operator" if name == "kind" else "slurm"
    transport = "kubernetes" if name == "kind" else "local"
    assert isinstance(provider_for(_stack(backend, name, transport)), Provider)  # type: ignore[arg-type]


@pytest.mark.parametrize("spec", [s for s in registry.BACKENDS.values() if s.implemented],
                         ids=lambda s: s.name)
def test_every_backend_entry_resolves(spec: registry.BackendSpec) -> None:
    """Every entry a backend declares resolves; one it leaves out (None: arc has no fake and
    no site yet) is refused with the clear error the plugin shows, never an import error."""
    stack = _stack(spec.name, "fake", spec.transports[0])
    assert isinstance(stack_adapter(stack), StackAdapter)  # type: ignore[arg-type]
    if spec.fake is None:
        with pytest.raises(InfrastructureError, match=f"no fake exists for backend '{spec.name}'"):
            fake_factory(stack)  # type: ignore[arg-type]
    else:
        assert callable(fake_factory(stack))  # type: ignore[arg-type]
    if spec.site_adapter is None:
        return
    site = _site(spec.name, "kubernetes" if "kubernetes" in spec.transports else "ssh")
    assert isinstance(site_adapter(site), SiteAdapter)  # type: ignore[arg-type]


def _long_functions(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            length = (node.end_lineno or node.lineno) - node.lineno + 1
            doc = ast.get_docstring(node) or ""
            if length > MAX_FUNCTION_LINES and WHY_LONG not in doc:
                found.append(f"{path.relative_to(REPO)}:{node.lineno} {node.name} "
                             f"({length} lines)")
    return found


def test_modules_and_functions_stay_small() -> None:
    problems = []
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = len(path.read_text().splitlines())
        doc = ast.get_docstring(ast.parse(path.read_text())) or ""
        if lines > MAX_MODULE_LINES and WHY_LONG not in doc:
            problems.append(f"{path.relative_to(REPO)}: {lines} lines")
        problems.extend(_long_functions(path))
    assert not problems, ("split these, or say why in the docstring ('Long because ...'):\n"
                          + "\n".join(problems))


def _contracts() -> list[dict[str, object]]:
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    return list(config["tool"]["importlinter"]["contracts"])


def test_every_module_but_the_plugin_is_forbidden_pytest() -> None:
    [contract] = [c for c in _contracts() if c["name"] == "Only the plugin imports pytest"]
    covered = set(contract["source_modules"])  # type: ignore[arg-type]
    top = {f"pytest_stacks.{p.stem if p.is_file() else p.name}" for p in PACKAGE.iterdir()
           if (p.suffix == ".py" and p.stem != "__init__") or (p / "__init__.py").exists()}
    assert top - covered == {"pytest_stacks.plugin"}


def _lint_imports(root: Path) -> subprocess.CompletedProcess[str]:
    linter = shutil.which("lint-imports", path=str(Path(sys.executable).parent))
    if linter is None:
        pytest.fail("lint-imports is not installed: pip install -e '.[dev]'")
    return subprocess.run([linter, "--config", str(root / "pyproject.toml"), "--no-cache"],
                          cwd=root, capture_output=True, text=True, check=False,
                          env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"})


def test_import_contracts_hold() -> None:
    result = _lint_imports(REPO)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    assert "broken" in result.stdout and "0 broken" in result.stdout


#: One forbidden import per contract: (module it is added to, the line, the contract it breaks).
BREAKAGES = [
    ("versions.py", "import pytest", "Only the plugin imports pytest"),
    ("backends/slurm/fake.py", "from pytest_stacks.backends.slurm import driver",
     "Fakes never import drivers"),
    ("ci/window.py", "from pytest_stacks import providers", "CI planning is pure"),
    ("manifest/model.py", "from pytest_stacks import lifecycle", "Layers point one way"),
    ("backends/slurm/driver.py", "from pytest_stacks.backends.htcondor import api",
     "Backends are independent of each other"),
]


def test_every_contract_has_a_breakage() -> None:
    """A contract nothing proves it can break might check nothing (a module list typo)."""
    covered = {contract for _, _, contract in BREAKAGES}
    unproven = [c["name"] for c in _contracts()
                if not any(str(c["name"]).startswith(name) for name in covered)]
    assert not unproven, f"add a row to BREAKAGES for {unproven}"


@pytest.mark.parametrize(("module", "line", "contract"), BREAKAGES)
def test_import_contracts_fail_when_broken(tmp_path: Path, module: str, line: str,
                                           contract: str) -> None:
    """A copy of the package with one forbidden import must break exactly that contract."""
    shutil.copytree(PACKAGE, tmp_path / "pytest_stacks",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "pyproject.toml", tmp_path / "pyproject.toml")
    target = tmp_path / "pytest_stacks" / module
    target.write_text(target.read_text() + f"\n{line}  # noqa\n")
    result = _lint_imports(tmp_path)
    assert result.returncode != 0, result.stdout[-3000:]
    broken = [row for row in result.stdout.splitlines() if row.endswith("BROKEN")]
    assert any(contract in row for row in broken), result.stdout[-3000:]


def _stack_schema() -> dict[str, Any]:
    schema = json.loads((PACKAGE / "schema" / "manifest.schema.json").read_text())
    found = [d for d in schema.get("$defs", {}).values()
             if isinstance(d, dict) and "transport" in d.get("properties", {})]
    assert len(found) == 1, "one stack definition in the manifest schema"
    return found[0]["properties"]  # type: ignore[no-any-return]


def test_the_manifest_schema_names_exactly_the_registrys_providers_and_transports() -> None:
    """The names live in the registry; the schema must offer exactly those (a transport added
    to one and not the other would load and then fail deep inside, or never load)."""
    props = _stack_schema()
    assert sorted(props["provider"]["enum"]) == sorted(registry.PROVIDERS)
    assert sorted(props["transport"]["enum"]) == sorted(registry.TRANSPORTS)
    spoken = {t for spec in registry.BACKENDS.values() for t in spec.transports}
    assert spoken <= set(registry.TRANSPORTS)


@pytest.mark.parametrize("name", sorted(registry.TRANSPORTS))
def test_each_transport_names_an_access_that_resolves(name: str) -> None:
    access = registry.resolve(registry.TRANSPORTS[name].access)()
    assert callable(getattr(access, "transport", None)) and callable(access.endpoints)
