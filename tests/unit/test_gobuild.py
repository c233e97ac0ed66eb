"""The pure parts of the Go module builds: names, cache keys, the CoreDNS main of ours."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks import gobuild
from pytest_stacks.backends.kubernetes import builds


@pytest.mark.parametrize(("package", "name"), [
    ("k8s.io/kubernetes/cmd/kube-apiserver", "kube-apiserver"),
    ("go.etcd.io/etcd/server/v3", "server"),
    ("sigs.k8s.io/kind", "kind"),
    (f"{gobuild.MODULE}/cmd/coredns", "coredns"),
])
def test_the_program_name_go_build_gives(package: str, name: str) -> None:
    assert gobuild.default_name(package) == name


def test_every_input_of_a_build_is_in_its_cache_key() -> None:
    """Another source text, ldflag or version is another build, never a stale binary."""
    base = builds.coredns("v1.14.7")
    keys = {base.digest("go1.26.8"), base.digest("go1.26.9"),
            builds.coredns("v1.14.8").digest("go1.26.8"),
            gobuild.GoModuleBuild(base.name, base.requires, base.programs, base.ldflags,
                                  sources={"cmd/coredns/main.go": "package main\n"}
                                  ).digest("go1.26.8")}
    assert len(keys) == 4


def test_coredns_is_built_with_the_plugins_the_clusters_corefiles_use() -> None:
    """kubeadm's default Corefile and stacks/k8s-node/Corefile: every directive they use is a
    plugin of the build (an unknown directive stops CoreDNS at start)."""
    main = builds.coredns("v1.14.7").sources["cmd/coredns/main.go"]
    used = {"errors", "health", "ready", "kubernetes", "prometheus", "forward", "cache",
            "loop", "reload", "loadbalance"}
    directives = {name for name, _ in builds.COREDNS_PLUGINS}
    assert used <= directives
    for _, package in builds.COREDNS_PLUGINS:
        assert f'"github.com/coredns/coredns/plugin/{package}"' in main
    assert "core/plugin\"" not in main  # CoreDNS's every-plugin import is not pulled in


def test_programs_of_several_stacks_build_once_each_the_longest_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """pytest-stacks build --programs-only over the repository's Kubernetes stacks: every Go
    build once (three stacks share the control plane), Kubernetes itself first."""
    from pathlib import Path

    from pytest_stacks.lifecycle import prepare
    from pytest_stacks.manifest import load

    started: list[str] = []
    monkeypatch.setattr(gobuild, "ensure_built",
                        lambda build, **_: started.append(build.name) or Path("/nowhere"))
    manifest = load(Path(__file__).resolve().parents[2] / "manifest.yaml")
    stacks = [s for s in manifest.stacks if s.name in (
        "k8s-1.36-mpi-0.8", "k8s-1.36-node-mpi-0.8", "kind-1.36-local-mpi-0.8")]
    assert prepare.build_programs(stacks) == {}
    assert len(started) == len(set(started)) >= 8
    assert "kubernetes-v1.36.3" in started[:3]  # three at once: submitted first
    assert {"kwok-v0.8.0-k8s-v1.36.3", "mpi-operator-v0.8.2", "coredns-v1.14.7",
            "cri-tools-v1.37.0", "kubernetes-node-v1.36.3",
            "kubernetes-kubeadm-v1.36.3"} <= set(started)


def test_an_exact_pin_is_kept_and_a_query_is_asked_once(monkeypatch: pytest.MonkeyPatch) -> None:
    asked: list[list[str]] = []

    def answer(argv: list[str], cwd: object, timeout: float) -> str:
        asked.append(argv)
        return '{"Path": "k8s.io/kubernetes", "Version": "v1.38.0", "Query": "latest"}'

    monkeypatch.setattr(gobuild, "_run", answer)
    monkeypatch.setattr(gobuild, "go_binary", lambda: "go")
    monkeypatch.setattr(gobuild, "_resolved", {})
    assert gobuild.resolve_version("k8s.io/kubernetes", "v1.37.2") == "v1.37.2"
    assert asked == []
    assert gobuild.resolve_version("k8s.io/kubernetes", "latest") == "v1.38.0"
    assert gobuild.resolve_version("k8s.io/kubernetes", "latest") == "v1.38.0"
    assert asked == [["go", "list", "-m", "-json", "k8s.io/kubernetes@latest"]]


def test_a_query_the_proxy_answers_without_a_version_is_an_error(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(gobuild, "_run", lambda argv, cwd, timeout: '{"Version": ""}')
    monkeypatch.setattr(gobuild, "go_binary", lambda: "go")
    monkeypatch.setattr(gobuild, "_resolved", {})
    with pytest.raises(gobuild.GoBuildError, match=r"k8s\.io/kubernetes@v1\.99"):
        gobuild.resolve_version("k8s.io/kubernetes", "v1.99")


def test_each_kubernetes_version_of_the_window_gets_its_own_kwok_build(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """kwok is aligned to its stack's Kubernetes release: three versions, three builds (one
    name for all three once made the early build keep only the first)."""
    from pathlib import Path

    from pytest_stacks.lifecycle import prepare
    from pytest_stacks.manifest import load

    started: list[str] = []
    monkeypatch.setattr(gobuild, "ensure_built",
                        lambda build, **_: started.append(build.name) or Path("/nowhere"))
    manifest = load(Path(__file__).resolve().parents[2] / "manifest.yaml")
    kwok_planes = [s for s in manifest.stacks if s.configuration == "controlplane-kwok"]
    assert prepare.build_programs(kwok_planes) == {}
    kwoks = sorted(name for name in started if name.startswith("kwok-"))
    assert kwoks == ["kwok-v0.8.0-k8s-v1.34.4", "kwok-v0.8.0-k8s-v1.36.3",
                     "kwok-v0.8.0-k8s-v1.37.2"]


def test_a_build_sharing_a_control_planes_packages_is_built_after_it(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A version's kubelet, kubeadm and kwok wait for its control plane (Go's cache then
    serves the packages they share) and never build it twice."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(gobuild, "go_binary", lambda: "go")
    monkeypatch.setattr(gobuild, "_run", lambda argv, cwd, timeout: "go1.26.8\n")
    built: list[str] = []

    def build(go: str, build: gobuild.GoModuleBuild, target: Path, deadline: float) -> None:
        target.mkdir(parents=True)
        built.append(build.name)

    monkeypatch.setattr(gobuild, "_build", build)
    gobuild.ensure_built(builds.node("v1.36.3"))
    assert built == ["kubernetes-v1.36.3", "kubernetes-node-v1.36.3"]
    gobuild.ensure_built(builds.kubeadm("v1.36.3"))
    gobuild.ensure_built(builds.kwok("v0.8.0", "v1.36.3"))
    assert built[2:] == ["kubernetes-kubeadm-v1.36.3", "kwok-v0.8.0-k8s-v1.36.3"]
    gobuild.ensure_built(builds.node("v1.37.2"))
    assert built[4:] == ["kubernetes-v1.37.2", "kubernetes-node-v1.37.2"]


def test_go_runs_niced_with_a_lazier_collector_unless_the_user_set_one(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    seen: list[tuple[list[str], dict[str, str]]] = []

    def run(argv: list[str], *, cwd: str, env: dict[str, str], timeout: float) -> Any:
        seen.append((list(argv), env))
        return subprocess.CompletedProcess(argv, 0, "go1.26.8\n", "")

    monkeypatch.setattr(gobuild.cancellation, "run", run)
    monkeypatch.delenv("GOGC", raising=False)
    gobuild._run(["go", "env", "GOVERSION"], tmp_path, 60)
    monkeypatch.setenv("GOGC", "off")
    gobuild._run(["go", "env", "GOVERSION"], tmp_path, 60)
    (first, env), (_, user_env) = seen
    assert first == ["nice", "-n", "10", "go", "env", "GOVERSION"]
    assert (env["GOGC"], env["CGO_ENABLED"], user_env["GOGC"]) == ("400", "0", "off")


def test_a_stopped_build_leaves_no_go_work_folder(monkeypatch: pytest.MonkeyPatch,
                                                  tmp_path: Path) -> None:
    """Go's work folder is the build's own (GOTMPDIR), removed when the build ends, also when
    it was stopped: in /tmp, killed builds had left gigabytes each."""
    seen: list[str] = []

    def run(argv: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        if "build" in argv:
            seen.append(kwargs["env"]["GOTMPDIR"])
            (Path(seen[-1]) / "go-build123").mkdir()  # what a killed `go build` leaves
            raise KeyboardInterrupt  # the session stopped mid-build
        return subprocess.CompletedProcess(argv, 0, "", "")

    monkeypatch.setattr(gobuild.cancellation, "run", run)
    monkeypatch.setattr(gobuild, "_go_mod", lambda go, build, work, deadline: "module x\n")
    target = tmp_path / "kubernetes-v1"
    with pytest.raises(KeyboardInterrupt):
        gobuild._build("go", builds.control_plane("v1.36.3"), target,
                       float("inf"))
    assert seen and Path(seen[0]).parent == target
    assert not (target / "tmp").exists()
