"""Names that become engine and Kubernetes object names are bounded when the manifest loads,
to what every provider can carry, with the limit and the value (cut short) in the message.
The bound is checked against the providers' own name functions, not only restated. Issue 59,
item 3."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from pytest_stacks.errors import ManifestError
from pytest_stacks.manifest import Stack, load, loads, names
from pytest_stacks.providers import compose, kind, kind_owners
from pytest_stacks.providers.base import RunContext

REPO = Path(__file__).resolve().parents[2]
MANIFEST = """
version: 1
capabilities:
  submit: s
backends:
  slurm:
    window: {anchor: "20.11", leading_edge: "24.11"}
stacks:
  - name: NAME
    backend: slurm
    version: "24.11.5"
    provider: fake
    transport: local
    configuration: single-node
    capabilities: [submit]
    lanes: [pr]
"""
KUBERNETES_LABEL_VALUE_MAX = 63  # k8s.io/apimachinery validation: LabelValueMaxLength
DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")


def _with_name(name: str) -> str:
    return MANIFEST.replace("NAME", name)


def test_a_name_of_twenty_thousand_characters_is_refused_at_load(tmp_path: Path) -> None:
    path = tmp_path / "manifest.yaml"
    path.write_text(_with_name("a" * 20_000))
    with pytest.raises(ManifestError) as caught:
        load(path)
    said = str(caught.value)
    assert f"{path}:" in said and ".name:" in said  # file, line, field as other errors
    assert f"over the {names.STACK_NAME_MAX}" in said and "20000 characters" in said
    assert "Shorten the name" in said
    assert len(said) < 1_000, "the value is shown cut short"


def test_the_bound_itself_loads_and_one_more_is_refused() -> None:
    assert loads(_with_name("a" * names.STACK_NAME_MAX)).stacks[0].name == \
        "a" * names.STACK_NAME_MAX
    with pytest.raises(ManifestError, match=f"over the {names.STACK_NAME_MAX}"):
        loads(_with_name("a" * (names.STACK_NAME_MAX + 1)))


def test_an_invalid_long_name_is_shown_cut_short() -> None:
    with pytest.raises(ManifestError) as caught:
        loads(_with_name("A" * 20_000))
    assert "20002 characters" in str(caught.value) and len(str(caught.value)) < 1_000


def test_the_catalogue_fits_the_bound() -> None:
    longest = max(load(REPO / "manifest.yaml").names(), key=len)
    assert len(longest) <= names.STACK_NAME_MAX


def _stack_named(name: str) -> tuple[Stack, RunContext]:
    manifest = load(REPO / "manifest.yaml")
    stack = next(s for s in manifest.stacks if s.kind is not None)
    ctx = RunContext.for_this_process("20261207030000-0123abcd", Path("/tmp/r"), "pinned")
    return dataclasses.replace(stack, name=name), ctx


def test_the_bound_is_what_kind_can_carry() -> None:
    """A name of the bound makes a kind cluster whose first node's name (kind's
    <cluster>-control-plane: the kubelet's Node name and its kubernetes.io/hostname label
    value) is a DNS-1123 label, with nothing of the name cut off (two stacks would share a
    cluster); one character more would not fit."""
    name = ("k8s.1-" * 10)[:names.STACK_NAME_MAX - 1] + "z"
    stack, ctx = _stack_named(name)
    cluster = kind.cluster_name(stack, ctx)
    node = f"{cluster}{names.KIND_LONGEST_NODE_SUFFIX}"
    assert len(node) <= KUBERNETES_LABEL_VALUE_MAX and DNS1123_LABEL.fullmatch(node), node
    assert cluster.startswith(kind_owners.CLUSTER_PREFIX)
    assert cluster.endswith(name.replace(".", "-")), f"cut short: {cluster}"
    longer, _ = _stack_named("a" * (names.STACK_NAME_MAX + 1))
    assert len(kind.cluster_name(longer, ctx) + names.KIND_LONGEST_NODE_SUFFIX) > \
        KUBERNETES_LABEL_VALUE_MAX or not kind.cluster_name(longer, ctx).endswith(longer.name), \
        "the bound is not the tightest kind allows"


def test_the_bound_is_what_compose_can_carry() -> None:
    stack, ctx = _stack_named("a." * (names.STACK_NAME_MAX // 2))
    project = compose.project_name(stack, ctx)
    assert re.fullmatch(r"[a-z0-9][a-z0-9_-]*", project), project  # Compose's own rule
    assert len(project) <= names.DNS_LABEL_MAX


@pytest.mark.parametrize("namespace", ["Team-A", "a" * 64, "-a", "a_b"])
def test_a_literal_namespace_must_be_a_dns_label(namespace: str) -> None:
    problem = names.namespace_problem(namespace)
    assert "DNS-1123 label" in problem and str(names.DNS_LABEL_MAX) in problem
    assert names.namespace_problem("team-a") == ""


def test_a_literal_namespace_is_refused_at_load() -> None:
    text = _with_name("site-k8s").replace("provider: fake", "provider: existing").replace(
        "transport: local", "transport: kubernetes").replace(
        "backends:\n  slurm:\n    window: {anchor: \"20.11\", leading_edge: \"24.11\"}",
        "backends: {mpi-operator: {window: {anchor: \"0.6\", leading_edge: \"0.9\"}}}").replace(
        "backend: slurm", "backend: mpi-operator").replace('version: "24.11.5"',
                                                          'version: "0.8.2"')
    text += "    existing: {versions: \">=0.8,<0.9\", kubeconfig: /k, namespace: Team_A}\n"
    with pytest.raises(ManifestError) as caught:
        loads(text)
    assert "existing.namespace" in str(caught.value) and "'Team_A'" in str(caught.value)
