"""Small manifests the tests share (one place instead of a copy in every file that needs a
stack): a fake Slurm for pytester projects, and a compose Slurm for the lifecycle's units."""

from __future__ import annotations


def fake_slurm(anchor: str = "22.05", leading_edge: str = "26.05") -> str:
    """One fake Slurm 24.11 stack, ``fake-slurm``, offering ``submit``."""
    return f"""
version: 1
capabilities:
  submit: s
backends:
  slurm:
    window: {{anchor: "{anchor}", leading_edge: "{leading_edge}"}}
stacks:
  - name: fake-slurm
    backend: slurm
    version: "24.11.5"
    provider: fake
    transport: local
    configuration: single-node
    capabilities: [submit]
    lanes: [pr]
"""


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
