"""Kubernetes as a window of its own beside the MPI Operator's: a stack's component version
from its pin, roles per component, the reference checks, markers, the pr lane, the window
table and which window moves a pin."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from pytest_stacks.ci.lanes import pr_lane_problems, row
from pytest_stacks.ci.pins import pin_problems
from pytest_stacks.ci.window import window_markdown
from pytest_stacks.errors import ManifestError
from pytest_stacks.manifest import load
from pytest_stacks.selection import version_matches

REPO = Path(__file__).resolve().parents[2]


def _stack(name: str, operator: str, k8s: str, lanes: list[str]) -> dict[str, Any]:
    return {"name": name, "backend": "mpi-operator", "version": operator,
            "provider": "compose", "transport": "kubernetes",
            "capabilities": ["submit", "status"], "configuration": "controlplane-kwok",
            "lanes": lanes, "requires": ["docker", "go"],
            "compose": {"directory": "stacks/k8s", "service": "controlplane",
                        "build_args": {"K8S_VERSION": f"v{k8s}",
                                       "MPI_OPERATOR_VERSION": f"v{operator}"}}}


BASE: dict[str, Any] = {
    "version": 1,
    "capabilities": {"submit": "s", "status": "t"},
    "backends": {"mpi-operator": {
        "window": {"anchor": "0.7", "leading_edge": "0.8"},
        "components": {"kubernetes": {"anchor": "1.34", "leading_edge": "1.37"}}}},
    "stacks": [
        {"name": "fake-k8s", "backend": "mpi-operator", "version": "0.8.2", "provider": "fake",
         "transport": "kubernetes", "capabilities": ["submit"],
         "configuration": "controlplane-kwok", "lanes": ["pr"],
         "components": {"kubernetes": "1.36.3"}},
        _stack("k8s-1.34", "0.7.0", "1.34.4", ["pr", "full"]),
        _stack("k8s-1.36", "0.8.2", "1.36.3", ["full"]),
        _stack("k8s-1.37", "0.8.2", "1.37.2", ["pr", "full"]),
    ],
}


def _load(tmp_path: Path, data: dict[str, Any]) -> Any:
    (tmp_path / "stacks/k8s").mkdir(parents=True, exist_ok=True)
    (tmp_path / "stacks/k8s/compose.yaml").write_text("services: {controlplane: {image: x}}\n")
    path = tmp_path / "manifest.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return load(path)


def test_a_stacks_kubernetes_comes_from_its_pin_with_its_role(tmp_path: Path) -> None:
    manifest = _load(tmp_path, BASE)
    roles = {s.name: (s.components, s.component_roles) for s in manifest.stacks}
    assert roles["k8s-1.34"] == ({"kubernetes": "1.34.4"}, {"kubernetes": "anchor"})
    assert roles["k8s-1.36"] == ({"kubernetes": "1.36.3"}, {"kubernetes": "supported"})
    assert roles["k8s-1.37"] == ({"kubernetes": "1.37.2"}, {"kubernetes": "leading-edge"})
    assert roles["fake-k8s"][0] == {"kubernetes": "1.36.3"}  # written: a fake has no pin
    assert manifest.get("k8s-1.34").role == "anchor"  # the operator's own window


def test_a_kubernetes_pin_is_no_component_where_the_backend_has_no_window(
        tmp_path: Path) -> None:
    data = copy.deepcopy(BASE)
    del data["backends"]["mpi-operator"]["components"]
    data["stacks"] = data["stacks"][1:]
    assert all(not s.components for s in _load(tmp_path, data).stacks)


@pytest.mark.parametrize("change, message", [
    (lambda d: d["stacks"][1].update(components={"kubernetes": "1.35.0"}),
     "stacks[1] (k8s-1.34).components.kubernetes: '1.35.0' contradicts the stack's own pin "
     "'1.34.4'"),
    (lambda d: d["stacks"][0].update(components={"kubelet": "1.36.3"}),
     "has no 'kubelet' window"),
    (lambda d: d["stacks"][3]["compose"]["build_args"].update(K8S_VERSION="v1.38.0"),
     "kubernetes '1.38.0' is newer than the window's leading_edge '1.37'. Move "
     "backends.mpi-operator.components.kubernetes.leading_edge"),
    (lambda d: d["backends"]["mpi-operator"]["components"]["kubernetes"].update(anchor="1.38"),
     "components.kubernetes.anchor: anchor '1.38' is newer than leading_edge '1.37'"),
])
def test_bad_components_are_named(tmp_path: Path, change: Any, message: str) -> None:
    data = copy.deepcopy(BASE)
    change(data)
    with pytest.raises(ManifestError) as caught:
        _load(tmp_path, data)
    assert message in str(caught.value)
    assert "manifest.yaml:" in str(caught.value)


def test_stack_version_can_select_on_kubernetes(tmp_path: Path) -> None:
    manifest = _load(tmp_path, BASE)
    chosen = [s.name for s in manifest.stacks
              if version_matches(s, ">=1.35", component="kubernetes")]
    assert chosen == ["fake-k8s", "k8s-1.36", "k8s-1.37"]
    assert [s.name for s in manifest.stacks if version_matches(s, "<0.8")] == ["k8s-1.34"]
    assert not version_matches(manifest.get("k8s-1.37"), ">=1", component="etcd")


def test_the_pr_lane_must_hold_both_kubernetes_edges(tmp_path: Path) -> None:
    assert pr_lane_problems(_load(tmp_path, BASE)) == []
    data = copy.deepcopy(BASE)
    data["stacks"][3]["lanes"] = ["full"]
    problems = pr_lane_problems(_load(tmp_path, data))
    assert ("the pr lane misses the kubernetes leading edge 1.37 of backend 'mpi-operator': "
            "add 'pr' to the lanes of one of: k8s-1.37.") in problems
    assert len(problems) == 2  # and the operator's leading edge 0.8, which only it held


def test_the_window_table_and_matrix_rows_show_kubernetes(tmp_path: Path) -> None:
    manifest = _load(tmp_path, BASE)
    table = window_markdown(manifest)
    assert ("| mpi-operator · kubernetes | 1.34 .. 1.37 | 1.34.4 | anchor | `k8s-1.34` "
            "(kubernetes, controlplane-kwok) | pr, full |") in table
    assert "| mpi-operator | 0.7 .. 0.8 | 0.7.0 | anchor | `k8s-1.34`" in table
    assert row(manifest.get("k8s-1.37"), "pr")["components"] == {
        "kubernetes": {"version": "1.37.2", "role": "leading-edge"}}


def test_a_kubernetes_pin_moves_with_the_kubernetes_window(tmp_path: Path) -> None:
    """The 1.36 stack is the operator's leading edge but not Kubernetes': its K8S_VERSION stays
    on its release line while its operator pin follows upstream."""
    text = (REPO / "manifest.yaml").read_text()
    assert pin_problems(load(REPO / "manifest.yaml"), text) == []
    wrong = text.replace(
        "# renovate: datasource=go depName=k8s.io/kubernetes\n        K8S_VERSION: v1.36.3",
        "# renovate: datasource=go depName=k8s.io/kubernetes depType=leading-edge\n"
        "        K8S_VERSION: v1.36.3", 1)
    assert wrong != text
    problems = pin_problems(load(REPO / "manifest.yaml"), wrong)
    assert any("K8S_VERSION: marked depType=leading-edge, but the stack's role is supported "
               "(mpi-operator kubernetes)" in p for p in problems), problems


def test_the_canary_floats_a_kubernetes_pin_and_the_pins_checks_follow(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from pytest_stacks import gobuild
    from pytest_stacks.backends.kubernetes import adapter

    stack = load(Path(__file__).resolve().parents[2] / "manifest.yaml").get("k8s-1.37-mpi-0.8")
    assert stack.canary is not None and stack.canary.build_args == {"K8S_VERSION": "latest"}
    monkeypatch.setattr(gobuild, "_resolved", {("k8s.io/kubernetes", "latest"): "v1.38.0"})
    floating = stack.floating()
    assert floating.compose is not None and stack.compose is not None
    assert floating.compose.build_args["K8S_VERSION"] == "latest"
    assert stack.compose.build_args["K8S_VERSION"] == "v1.37.2"  # the pin itself is untouched
    builds = adapter.control_plane_builds(floating)
    assert builds["kubernetes"].requires == {"k8s.io/kubernetes": "v1.38.0"}
    assert adapter.control_plane_builds(stack)["kubernetes"].requires == {
        "k8s.io/kubernetes": "v1.37.2"}


def test_the_summary_line_says_the_kubernetes_the_stack_reported() -> None:
    from pytest_stacks.lifecycle import StackRecord
    from pytest_stacks.plugin.summary import _components
    from pytest_stacks.providers.base import StackInfo

    stack = load(Path(__file__).resolve().parents[2] / "manifest.yaml").get("k8s-1.37-mpi-0.8")
    as_pinned = StackRecord(stack.name, StackInfo("compose", endpoints={
        "kubernetes_version": "1.37.2"}))
    floated = StackRecord(stack.name, StackInfo("compose", endpoints={
        "kubernetes_version": "1.38.0"}))
    assert _components(stack, as_pinned) == ", kubernetes 1.37.2"
    assert _components(stack, floated) == ", kubernetes 1.38.0 (pinned 1.37.2)"
    assert _components(stack, StackRecord(stack.name, StackInfo("compose"))) == ""
