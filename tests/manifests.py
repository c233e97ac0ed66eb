"""Small manifests the tests share (one place instead of a copy in every file that needs a
stack): stack entries and the manifest around them for pytester projects, the fake Slurm
trio the plugin's tests run on, and a compose Slurm for the lifecycle's units.

:class:`Project` is a pytester project made of one: a test module says what its project holds
(``PROJECT = Project(MANIFEST, pyfiles={"test_user": TESTS})``) and asks for the ``project``
fixture of ``tests/conftest.py``, which makes it in the test's pytester folder.

The text is block YAML, one ``  - name: NAME`` line per stack, so a test can still cut a
manifest at a stack (``text.split("  - name: broken-slurm")[0]``) or append an entry to it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pytest

#: The capabilities the tests' manifests declare, in the order they declare them (the value is
#: the description, which no test reads).
CAPABILITIES = {"submit": "s", "status": "t", "outputs": "o", "outputs.repeatable": "r",
                "logs": "l", "mpi": "m"}

#: The window of versions of each backend in the repository's manifest, most tests' default.
SLURM_WINDOW = ("22.05", "26.05")


def stack(name: str, version: str = "24.11.5", *, capabilities: Iterable[str] = ("submit",),
          lanes: Iterable[str] = ("pr",), backend: str = "slurm", provider: str = "fake",
          transport: str = "local", configuration: str = "single-node", description: str = "",
          options: str = "", timeouts: str = "", compose: str = "") -> str:
    """One stack entry of a manifest's ``stacks:`` list; ``options``, ``timeouts`` and
    ``compose`` are flow YAML (``{slots: 0}``), left out when empty."""
    lines = [f"  - name: {name}"]
    if description:
        lines.append(f"    description: {description}")
    lines += [f"    backend: {backend}", f'    version: "{version}"', f"    provider: {provider}",
              f"    transport: {transport}", f"    configuration: {configuration}",
              f"    capabilities: [{', '.join(capabilities)}]", f"    lanes: [{', '.join(lanes)}]"]
    lines += [f"    {key}: {value}" for key, value in
              (("compose", compose), ("options", options), ("timeouts", timeouts)) if value]
    return "\n".join(lines) + "\n"


def manifest_of(*stacks: str, windows: Mapping[str, tuple[str, str]] | None = None) -> str:
    """A manifest of these stack entries; its capabilities are those the stacks offer (in
    :data:`CAPABILITIES` order), its backends' windows ``windows`` (default: Slurm's)."""
    offered = {cap for entry in stacks for cap in _capabilities_of(entry)}
    unknown = offered - set(CAPABILITIES)
    if unknown:
        raise ValueError(f"tests/manifests.py: add {sorted(unknown)} to CAPABILITIES")
    caps = "".join(f"  {cap}: {letter}\n" for cap, letter in CAPABILITIES.items()
                   if cap in offered)
    backends = "".join(f'  {backend}:\n    window: {{anchor: "{anchor}", leading_edge: "{edge}"}}\n'
                       for backend, (anchor, edge) in (windows or {"slurm": SLURM_WINDOW}).items())
    return f"\nversion: 1\ncapabilities:\n{caps}backends:\n{backends}stacks:\n{''.join(stacks)}"


def _capabilities_of(entry: str) -> list[str]:
    [line] = [ln for ln in entry.splitlines() if ln.startswith("    capabilities: [")]
    return [c.strip() for c in line.split("[", 1)[1].rstrip("]").split(",") if c.strip()]


def fake_slurm(anchor: str = "22.05", leading_edge: str = "26.05") -> str:
    """One fake Slurm 24.11 stack, ``fake-slurm``, offering ``submit``."""
    return manifest_of(stack("fake-slurm"), windows={"slurm": (anchor, leading_edge)})


#: The fake Slurm 20.11 (an old release in the window), offering submit and status.
FAKE_SLURM_20_11 = stack("fake-slurm-20.11", "20.11.4", capabilities=("submit", "status"),
                         lanes=("full",))

#: A fake Slurm no job ever finishes on: its probe times out, so the stack is an infra error.
BROKEN_SLURM = stack("broken-slurm", description="No slot to run on, so its probe job never "
                     "finishes.", configuration="default",
                     capabilities=("submit", "status", "mpi"), lanes=("full",),
                     options="{slots: 0}", timeouts="{job: 0.5}")


def slurm_trio(capabilities: Iterable[str] = ("submit", "status", "outputs"), *,
               keep_jobs: bool = True, mpi_operator: bool = True) -> str:
    """``fake-slurm`` (pr lane, ``capabilities``), ``fake-slurm-20.11`` and ``broken-slurm``
    (full lane): a working stack, an old one and one that never comes up.

    ``keep_jobs``: finished jobs stay in fake-slurm's queue as long as a real slurmctld's
    default MinJobAge (300 s): a test that reads the scheduler view after the test needs it
    (a loaded machine took more than the fake's default second to get there, "Invalid job id").
    ``mpi_operator``: the manifest also has the MPI Operator's window (no stack of it).
    """
    windows = {"slurm": SLURM_WINDOW, **({"mpi-operator": ("0.8", "0.8")} if mpi_operator
                                          else {})}
    fake = stack("fake-slurm", capabilities=capabilities,
                 options="{min_job_age: 300}" if keep_jobs else "")
    return manifest_of(fake, FAKE_SLURM_20_11, BROKEN_SLURM, windows=windows)


def compose_slurm(name: str, version: str, capabilities: Iterable[str] = ("submit", "status"),
                  ) -> str:
    """A compose Slurm entry of ``stacks/slurm`` (its folder must exist beside the manifest),
    built from the Debian package of ``version``."""
    return stack(name, version, capabilities=capabilities, provider="compose",
                 compose=f'{{directory: stacks/slurm, service: slurm, '
                         f'build_args: {{SLURM_VERSION: "{version}-1"}}}}')


#: One compose Slurm 24.11 stack (its folder ``stacks/slurm`` must exist beside the manifest).
COMPOSE_SLURM = """
version: 1
capabilities: {submit: s}
backends: {slurm: {window: {anchor: "22.05", leading_edge: "26.05"}}}
stacks:
  - name: slurm-24.11
    backend: slurm
    version: "24.11.5"
    provider: compose
    transport: local
    configuration: single-node
    capabilities: [submit]
    lanes: [pr]
    compose: {directory: stacks/slurm, service: slurm, build_args: {SLURM_VERSION: "24.11.5-1"}}
    canary: {build_args: {SLURM_VERSION: ""}}
"""


@dataclass(frozen=True)
class Project:
    """What a test module's pytester project holds; ``tests/conftest.py``'s ``project`` fixture
    makes it (:meth:`make`) from the module's ``PROJECT``.

    ``manifest``: the text of ``manifest.yaml`` (None: no manifest). ``ini``: the lines under
    ``[pytest]`` of ``tox.ini`` (None: no ini file, as a new project has). ``pyfiles``: test
    modules at the top, by name without ``.py``, written as pytester does (dedented, stripped);
    ``files``: any other file by relative path, written as given.
    """

    manifest: str | None = None
    ini: str | None = "stacks_manifest = manifest.yaml\n"
    pyfiles: Mapping[str, str] = field(default_factory=dict)
    files: Mapping[str, str] = field(default_factory=dict)

    def make(self, pytester: pytest.Pytester) -> pytest.Pytester:
        if self.manifest is not None:
            pytester.makefile(".yaml", manifest=self.manifest)
        if self.ini is not None:
            pytester.makeini("[pytest]\n" + self.ini)
        if self.pyfiles:
            pytester.makepyfile(**self.pyfiles)
        for relative, text in self.files.items():
            path = pytester.path / relative
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        return pytester
