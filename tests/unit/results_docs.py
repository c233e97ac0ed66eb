"""Results documents as the plugin writes them, built by hand for the report's tests
(test_results_report, test_results_binding): a small manifest, a project folder with its
stack folders and test files, and builders that derive everything with the same rules and the
same binding (commit, digests, plan) a real run records, so each test can break one thing."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_stacks import ci
from pytest_stacks.ci import binding
from pytest_stacks.ci.scope import Scope
from pytest_stacks.manifest import Manifest, Stack
from pytest_stacks.verdicts import results
from pytest_stacks.verdicts.results import capability_status, stack_verdict

ROOT = Path(__file__).resolve().parents[2]
DEB = "https://deb.debian.org/debian?suite=bookworm&components=main&binaryArch=amd64"

MANIFEST = """\
version: 1
capabilities:
  submit: Submit jobs.
  status: Report states.
  outputs: Outputs come back.
  outputs.repeatable: Outputs can be fetched twice.
backends:
  slurm: {window: {anchor: "22.05", leading_edge: "26.05"}}
  htcondor: {window: {anchor: "23.9", leading_edge: "23.9"}}
stacks:
  - name: htcondor-23.9
    backend: htcondor
    version: "23.9.6"
    provider: compose
    transport: bindings
    configuration: single-node
    capabilities: [submit, status, outputs]
    lanes: [pr, full]
    compose: {directory: stacks/htcondor, service: htcondor,
               build_args: {HTCONDOR_VERSION: "23.9.6+dfsg-2.1"}}
  - name: fake-slurm
    backend: slurm
    version: "24.11.5"
    provider: fake
    transport: local
    configuration: single-node
    capabilities: [submit, status, outputs, outputs.repeatable]
    lanes: [pr, full]
"""


def slurm(name: str, version: str, deb: str, lanes: str) -> str:
    return f"""\
  - name: {name}
    backend: slurm
    version: "{version}"
    provider: compose
    transport: local
    configuration: single-node
    capabilities: [submit, status, outputs, outputs.repeatable]
    lanes: {lanes}
    base_image: {{name: debian, tag: bookworm-slim, seed: bookworm}}
    compose:
      directory: stacks/slurm
      service: slurm
      build_args:
        # renovate: datasource=deb depName=slurm-wlm registryUrl={DEB}
        SLURM_VERSION: "{deb}"
    canary: {{build_args: {{SLURM_VERSION: ""}}}}
"""


# Newest first on purpose: the table orders by release, not by manifest order.
STACKS = (slurm("slurm-26.05", "26.05.5", "26.05.5-1", "[pr, full]")
          + slurm("slurm-24.11", "24.11.5", "24.11.5-4", "[full]")
          + slurm("slurm-22.05", "22.05.8", "22.05.8-4+deb12u3", "[pr, full]"))
PR = ["slurm-26.05", "slurm-22.05", "htcondor-23.9"]


def make_project(root: Path) -> Path:
    """The project the results come from: its manifest, stack folders and the test files the
    documents' node ids name. Returns the manifest's path."""
    for folder in ("slurm", "htcondor"):
        (root / "stacks" / folder).mkdir(parents=True)
        (root / "stacks" / folder / "compose.yaml").write_text("services: {}\n")
    contract = root / "tests" / "contract"
    contract.mkdir(parents=True)
    for capability in ("submit", "status", "outputs", "outputs_repeatable"):
        (contract / f"test_{capability}.py").write_text("def test_it(stack):\n    pass\n")
    (root / "tests" / "test_x.py").write_text("def test_y(stack):\n    pass\n")
    path = root / "manifest.yaml"
    path.write_text(MANIFEST + STACKS)
    return path


def nodeid(stack: str, capability: str) -> str:
    return f"tests/contract/test_{capability.replace('.', '_')}.py::test_it[{stack}]"


def entry(stack: Stack, manifest: Manifest, *, lane: str = "pr",
          outcomes: dict[str, str] | None = None, messages: dict[str, str] | None = None,
          infra: str | None = None, problems: tuple[str, ...] = (),
          observed: str | None = None) -> dict[str, Any]:
    """A stack's results as the plugin writes them: one test per capability, passing where
    offered (skipped elsewhere) unless ``outcomes`` says otherwise; derived with the rules."""
    outcomes, messages = outcomes or {}, messages or {}
    tests: list[dict[str, Any]] = []
    for cap in manifest.capabilities:
        default = "passed" if cap in stack.capabilities else "skipped"
        outcome = outcomes.get(cap, default)
        if outcome == "absent":
            continue
        tests.append({"nodeid": nodeid(stack.name, cap), "outcome": outcome, "duration_s": 0.5,
                      "requires": [cap], "identities": [], "message": messages.get(cap, ""),
                      "infra_retries": 0})
    return derived(stack, manifest, tests, lane=lane, infra=infra, problems=problems,
                   observed=stack.version if observed is None else observed)


def derived(stack: Stack, manifest: Manifest, tests: list[dict[str, Any]], *, lane: str = "pr",
            infra: str | None = None, problems: tuple[str, ...] = (),
            observed: str = "") -> dict[str, Any]:
    """The stack entry of ``tests``: capabilities and verdict derived with the rules."""
    capabilities: dict[str, dict[str, Any]] = {}
    for cap in manifest.capabilities:
        ids = {o: [t["nodeid"] for t in tests if cap in t["requires"] and t["outcome"] == o]
               for o in ("passed", "failed", "skipped", "infra")}
        offered = cap in stack.capabilities
        capabilities[cap] = {
            "offered": offered, "passed": ids["passed"], "failed": ids["failed"],
            "skipped": ids["skipped"], "infra": ids["infra"],
            "status": capability_status(offered, len(ids["passed"]), len(ids["failed"]),
                                        len(ids["infra"]))}
    verdict = stack_verdict([t["outcome"] for t in tests],
                            [c["status"] for c in capabilities.values()], infra)
    return {"name": stack.name, "backend": stack.backend, "version": stack.version,
            "provider": stack.provider, "transport": stack.transport,
            "configuration": stack.configuration, "role": stack.role, "fake": stack.is_fake,
            "pins": ci.build_inputs(stack, lane),
            "inputs_digest": binding.inputs_digest(manifest, stack),
            "observed": {"daemon": observed, "client": ""}, "startup_s": 12.5,
            "verdict": verdict, "infra": infra, "problems": list(problems),
            "capabilities": capabilities, "tests": tests, "infra_retries": []}


AUTO: Any = object()


def plan_of(manifest: Manifest, lane: str, tests: str = "") -> str:
    """The plan digest every row of ``lane`` carries (the project: the current folder)."""
    return str(ci.matrix(manifest, lane, tests)["include"][0]["plan"])


def document(manifest: Manifest, *stacks: dict[str, Any], lane: str = "pinned",
             ci_lane: str | None = "pr", partial: tuple[str, ...] = (), exit_code: int = 0,
             scope: Scope | None = None, run_id: str | None = None, plan: Any = AUTO,
             planned_tests: str = "", deselected: int = 0) -> dict[str, Any]:
    """A run's results. The binding is this checkout's (the current folder); ``plan``: the row
    the run answers, by default its one stack's row of ``ci_lane``'s plan when it is one."""
    project = Path.cwd()
    if plan is AUTO:
        names = [s["name"] for s in stacks]
        lane_names = [] if ci_lane not in ("pr", "full", "canary") else \
            [s.name for s in ci.lane_stacks(manifest, ci_lane)]
        plan = (names[0], plan_of(manifest, ci_lane or "", planned_tests)) \
            if len(names) == 1 and names[0] in lane_names else None
    return {"schema": "pytest-stacks/results", "schema_version": results.SCHEMA_VERSION,
            "run": {"run_id": run_id or f"run-{uuid.uuid4().hex[:8]}", "lane": lane,
                    "ci_lane": ci_lane,
                    "started": "2025-06-01T10:00:00+00:00",
                    "finished": "2025-06-01T10:05:00+00:00", "manifest": "manifest.yaml",
                    "partial": bool(partial), "partial_reasons": list(partial),
                    "scope": (scope or Scope()).to_json(), "pytest_exit": exit_code,
                    "pytest_stacks_version": "0.1.0",
                    "collected": sorted({t["nodeid"] for s in stacks for t in s["tests"]}),
                    "deselected": deselected,
                    "commit": binding.commit(project),
                    "manifest_digest": binding.manifest_digest(manifest),
                    "code_digest": binding.code_digest(project),
                    "plan": None if plan is None else {
                        "stacks": [plan[0]] if isinstance(plan[0], str) else list(plan[0]),
                        "digest": plan[1]}},
            "stacks": list(stacks)}


def writer(folder: Path) -> Callable[..., Path]:
    """Write a document as a results file in ``folder`` (through ``dump``: a valid one)."""
    def _write(name: str, doc: dict[str, Any]) -> Path:
        path = folder / name
        results.dump(doc, path)
        return path
    return _write


def lane_files(manifest: Manifest, write: Callable[..., Path], names: list[str] = PR,
               overrides: dict[str, dict[str, Any]] | None = None) -> list[Path]:
    """One results file per job, as a lane's jobs upload them."""
    return [write(f"{name}.json", document(manifest, entry(manifest.get(name), manifest,
                                                           **(overrides or {}).get(name, {}))))
            for name in names]


def loaded(paths: list[Path]) -> list[results.ResultsDoc]:
    return [results.load(p) for p in paths]
