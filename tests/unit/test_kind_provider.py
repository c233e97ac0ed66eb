"""The kind provider's command sequence (recorded, no kind run), its reaper, and its refusal
on a host without a registry (for real: no node image can be had here)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import threading
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

import pytest

from pytest_stacks import dockerutil, gobuild
from pytest_stacks.errors import InfrastructureError
from pytest_stacks.manifest import Stack, loads
from pytest_stacks.providers import images, kind, kind_owners, preflight
from pytest_stacks.providers.base import RunContext
from pytest_stacks.providers.labels import process_start_time

REPO = Path(__file__).resolve().parents[2]
DIGEST = "sha256:" + "0" * 64
MANIFEST = f"""
version: 1
capabilities: {{submit: s, mpi: m}}
backends: {{mpi-operator: {{window: {{anchor: "0.8", leading_edge: "0.8"}}}}}}
stacks:
  - name: kind-mpi
    backend: mpi-operator
    version: "0.8.2"
    provider: kind
    transport: kubernetes
    configuration: kind
    capabilities: [submit, mpi]
    lanes: [pr]
    requires: [docker, kind, registry]
    kind:
      kind_version: v0.33.0
      node_image: {{name: kindest/node, tag: v1.36.4, digest: "{DIGEST}"}}
      operator_version: "0.8.2"
      operator_image: {{name: mpioperator/mpi-operator, tag: "0.8.2", digest: "{DIGEST}"}}
      worker_image: {{name: pytest-stacks/mpi-worker, tag: openmpi-5}}
"""


class Recorder:
    def __init__(self, fail: str = "") -> None:
        self.calls: list[list[str]] = []
        self.fail = fail

    def __call__(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        # The control plane's API is never ready to an early apply here (tested on its own).
        failed = (bool(self.fail) and self.fail in " ".join(argv)) or "--raw=/readyz" in argv
        return subprocess.CompletedProcess(list(argv), 1 if failed else 0, "",
                                           "boom" if failed else "")


@pytest.fixture
def kind_stack() -> Stack:
    return loads(MANIFEST, REPO / "kind-test.yaml").stacks[0]


@pytest.fixture
def offline_tools(monkeypatch: pytest.MonkeyPatch, kind_tools: Path) -> Path:
    monkeypatch.setattr(images, "ensure_image", lambda *a, **k: None)
    return kind_tools


def test_up_runs_kind_and_installs_the_pinned_operator(kind_stack: Stack, ctx: RunContext,
                                                       offline_tools: Path) -> None:
    runner = Recorder()
    info = kind.KindProvider(runner).up(kind_stack, ctx)
    name = info.project
    assert name == "pst-abcdef12-kind-mpi"
    commands = [" ".join(c) for c in runner.calls]
    create = next(c for c in commands if " create cluster " in c)
    assert f"--name {name}" in create and f"--image kindest/node:v1.36.4@{DIGEST}" in create
    assert any(f"load docker-image pytest-stacks/mpi-worker:openmpi-5 --name {name}" in c
               for c in commands)
    apply = next(c for c in commands if "apply --server-side" in c)
    pinned = Path(apply.split(" -f ")[1])
    assert f"mpioperator/mpi-operator:0.8.2@{DIGEST}" in pinned.read_text()
    assert commands.index(create) < commands.index(apply)
    assert any("rollout status deployment/mpi-operator" in c for c in commands)
    assert (ctx.run_dir.parent / "kind-clusters" / f"{name}.json").exists()
    assert (ctx.run_dir / "kind-mpi.kubeconfig").stat().st_mode & 0o777 == 0o600
    # What users see is how to reach the cluster, not the tools the provider drives it with.
    shown = info.public()
    assert shown["kubeconfig"] and "kind" not in shown and "kubectl" not in shown


class ReadyWhileKindRuns(Recorder):
    """kind's create returns only once the operator's manifest was applied in the node (as
    on a real host, where the API is ready seconds before kind is done)."""

    def __init__(self) -> None:
        super().__init__()
        self.applied_early = threading.Event()

    def __call__(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        line = " ".join(argv)
        if " create cluster " in line:
            assert self.applied_early.wait(10)
        if line.startswith("docker exec") and " apply --server-side " in line:
            self.calls.append(list(argv))
            self.applied_early.set()
            return subprocess.CompletedProcess(list(argv), 0, "", "")
        if "--raw=/readyz" in argv:
            self.calls.append(list(argv))
            return subprocess.CompletedProcess(list(argv), 0, "ok", "")
        return super().__call__(argv, timeout)


def test_the_operator_applied_while_kind_ran_is_not_applied_again(
        kind_stack: Stack, ctx: RunContext, offline_tools: Path) -> None:
    runner = ReadyWhileKindRuns()
    kind.KindProvider(runner).up(kind_stack, ctx)
    commands = [" ".join(c) for c in runner.calls]
    early = next(c for c in commands if c.startswith("docker exec") and " apply " in c)
    copy = next(c for c in commands if c.startswith("docker cp "))
    pinned = Path(copy.split()[2])
    assert f"mpioperator/mpi-operator:0.8.2@{DIGEST}" in pinned.read_text()
    assert commands.index(copy) < commands.index(early)
    assert [c for c in commands if " apply " in c] == [early]  # not again from the host
    assert any("rollout status deployment/mpi-operator" in c for c in commands)


def test_a_failing_step_is_an_infrastructure_error_naming_it(
        kind_stack: Stack, ctx: RunContext, offline_tools: Path) -> None:
    with pytest.raises(InfrastructureError, match=r"kind create cluster.*failed"):
        kind.KindProvider(Recorder(fail="create cluster")).up(kind_stack, ctx)


class KubeadmFailsOnce(Recorder):
    """kubeadm's init times out the first time (a loaded host), then the cluster comes up."""

    def __call__(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        done = super().__call__(argv, timeout)
        creates = [c for c in self.calls if " create cluster " in " ".join(c)]
        if " create cluster " in " ".join(argv) and len(creates) == 1:
            return subprocess.CompletedProcess(list(argv), 1, "", "ERROR: failed to create "
                                               "cluster: failed to init node with kubeadm")
        return done


def test_kubeadm_failing_once_is_retried_once_and_said(
        kind_stack: Stack, ctx: RunContext, offline_tools: Path) -> None:
    runner = KubeadmFailsOnce()
    kind.KindProvider(runner).up(kind_stack, ctx)
    assert sum(" create cluster " in " ".join(c) for c in runner.calls) == 2


def test_a_second_failure_is_infrastructure_with_both_reasons(
        kind_stack: Stack, ctx: RunContext, offline_tools: Path) -> None:
    runner = Recorder(fail="create cluster")
    runner_said = "failed to init node with kubeadm"

    def failing(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        done = runner(argv, timeout)
        return (subprocess.CompletedProcess(list(argv), 1, "", runner_said)
                if done.returncode else done)
    with pytest.raises(InfrastructureError, match=r"(?s)failed.*kubeadm.*first attempt"):
        kind.KindProvider(failing).up(kind_stack, ctx)
    assert sum(" create cluster " in " ".join(c) for c in runner.calls) == 2


def test_down_deletes_the_cluster_and_proves_it(kind_stack: Stack, ctx: RunContext,
                                                offline_tools: Path) -> None:
    runner = Recorder()
    provider = kind.KindProvider(runner)
    info = provider.up(kind_stack, ctx)
    provider.down(kind_stack, info, ctx)
    kind_run = ctx.run_dir / "kind-kind-mpi" / "kind"
    assert [str(kind_run), "delete", "cluster", "--name", info.project] in runner.calls
    assert ["docker", "network", "rm", info.project] in runner.calls
    assert f"KIND_EXPERIMENTAL_DOCKER_NETWORK={info.project}" in kind_run.read_text()
    assert any("label=io.x-k8s.kind.cluster=" + info.project in " ".join(c)
               for c in runner.calls)
    assert not (ctx.run_dir.parent / "kind-clusters" / f"{info.project}.json").exists()


@pytest.fixture
def built_kind(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    """kind as pytest-stacks builds it (in this test's own cache): the only program an owner
    record may name for the reaper to run."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    build = gobuild.cache_root() / "kind-v0.33.0-mpi-operator-0.8.2-abc"
    (build / "bin").mkdir(parents=True)
    (build / "bin" / "kind").write_text("#!/bin/sh\n")
    (build / gobuild.COMPLETE).write_text("go1.24\n")
    return str(build / "bin" / "kind")


def test_the_reaper_deletes_only_dead_runs_clusters(tmp_path: Path, built_kind: str) -> None:
    records = tmp_path / "kind-clusters"
    records.mkdir()
    me = {"run": "live", "pid": os.getpid(), "start": process_start_time(os.getpid())}
    dead = {"run": "dead", "pid": 999_999_999, "start": "1", "kind": built_kind}
    (records / "pst-live-x.json").write_text(json.dumps(me))
    (records / "pst-dead-x.json").write_text(json.dumps(dead))
    (records / "someone-else.json").write_text(json.dumps(dead))
    runner = Recorder()
    assert kind_owners.reap(runner, tmp_path) == []
    deleted = [c[-1] for c in runner.calls if "cluster" in c]
    assert deleted == ["pst-dead-x"]
    assert not (records / "pst-dead-x.json").exists() and (records / "pst-live-x.json").exists()
    # The dead cluster's own network goes with it; kind's shared network is never touched.
    networks = [c[-1] for c in runner.calls if c[:3] == ["docker", "network", "rm"]]
    assert networks == ["pst-dead-x"]


class Engine(Recorder):
    """A runner whose docker answers as scripted: ``ps`` (exit, output), ``ls`` output."""

    def __init__(self, ps: tuple[int, str] = (0, ""), networks: str = "") -> None:
        super().__init__()
        self.ps, self.networks = ps, networks

    def __call__(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        if list(argv[:2]) == ["docker", "ps"]:
            return subprocess.CompletedProcess(list(argv), self.ps[0],
                                               self.ps[1] if self.ps[0] == 0 else "",
                                               "" if self.ps[0] == 0 else self.ps[1])
        if list(argv[:3]) == ["docker", "network", "ls"]:
            return subprocess.CompletedProcess(list(argv), 0, self.networks, "")
        return subprocess.CompletedProcess(list(argv), 0, "", "")


@pytest.mark.parametrize(("engine", "says"), [
    (Engine(ps=(1, "Cannot connect to the Docker daemon")),
     "cannot list its node containers to prove them gone: Cannot connect to the Docker daemon"),
    (Engine(ps=(0, "abc123\n")), "containers remain after delete: ['abc123']"),
    (Engine(networks="f00d\n"), "its docker network remains after removal"),
])
def test_a_removal_is_proven_by_looking_again(kind_stack: Stack, ctx: RunContext,
                                              offline_tools: Path, engine: Engine,
                                              says: str, built_kind: str) -> None:
    """An engine error never reads as "nothing remains", and what remains is named."""
    info = kind.KindProvider(Recorder()).up(kind_stack, ctx)
    with pytest.raises(InfrastructureError, match=re.escape(says)):
        kind.KindProvider(engine).down(kind_stack, info, ctx)
    dead = {"run": "dead", "pid": 999_999_999, "start": "1", "kind": built_kind}
    (ctx.run_dir.parent / "kind-clusters" / "pst-dead-y.json").write_text(json.dumps(dead))
    problems = kind_owners.reap(engine, ctx.run_dir.parent)
    assert problems and says in problems[0], problems
    assert (ctx.run_dir.parent / "kind-clusters" / "pst-dead-y.json").exists()


def test_an_unreadable_owner_record_is_reported_not_skipped(tmp_path: Path) -> None:
    records = tmp_path / "kind-clusters"
    records.mkdir()
    (records / "pst-broken-x.json").write_text("{not json")
    problems = kind_owners.reap(Recorder(), tmp_path)
    assert len(problems) == 1 and "pst-broken-x" in problems[0] and "cannot be read" in problems[0]


def test_here_without_a_registry_it_refuses_before_building_anything(
        kind_stack: Stack, ctx: RunContext, monkeypatch: pytest.MonkeyPatch) -> None:
    """For real, on this machine: no node image can be pulled, so `up` refuses before any Go
    build, image build or seed is started (on a new machine those take minutes)."""
    if images.registry_reachable():
        pytest.skip("a registry answers here: kind would really start")
    slow: list[str] = []
    monkeypatch.setattr(gobuild, "ensure_built", lambda build, **_: slow.append(build.name))
    monkeypatch.setattr(images, "ensure_base_image", lambda base: slow.append(base.seed))
    monkeypatch.setattr(images, "seed_debian", lambda suite: slow.append(suite))
    monkeypatch.setattr(preflight, "engine", lambda *_: None)  # the unit lane needs no engine
    monkeypatch.setattr(dockerutil, "image_exists", lambda reference: False)
    runner = Recorder()
    with pytest.raises(InfrastructureError) as caught:
        kind.KindProvider(runner).up(kind_stack, ctx)
    assert "kindest/node:v1.36.4" in str(caught.value) and "registry" in str(caught.value)
    assert slow == [] and runner.calls == []
    assert not (ctx.run_dir.parent / "kind-clusters").exists()


def test_without_go_it_refuses_before_building_anything(
        kind_stack: Stack, ctx: RunContext, monkeypatch: pytest.MonkeyPatch) -> None:
    slow: list[str] = []
    monkeypatch.setattr(gobuild, "ensure_built", lambda build, **_: slow.append(build.name))
    monkeypatch.setattr(preflight, "engine", lambda *_: None)
    monkeypatch.setattr(dockerutil, "image_exists", lambda reference: True)
    monkeypatch.setattr(gobuild, "go_binary", lambda: (_ for _ in ()).throw(
        gobuild.GoBuildError("the Go toolchain is not installed")))
    with pytest.raises(InfrastructureError, match="Go toolchain"):
        kind.KindProvider(Recorder()).up(kind_stack, ctx)
    assert slow == []


@pytest.mark.parametrize(("ps", "ready", "says", "replicas"), [
    ("pst-x-control-plane running\n", 0, "", "1"),
    ("pst-x-control-plane exited\n", 0, "node container pst-x-control-plane of kind cluster",
     "1"),
    ("", 0, "has no node container any more", "1"),
    ("pst-x-control-plane running\n", 1, "does not answer /readyz", "1"),
    ("pst-x-control-plane running\n", 0, "the MPI Operator's deployment in kind cluster", "0"),
])
def test_health_looks_at_the_nodes_the_api_server_and_the_operator(
        kind_stack: Stack, ctx: RunContext, offline_tools: Path, ps: str, ready: int,
        says: str, replicas: str) -> None:
    info = kind.KindProvider(Recorder()).up(kind_stack, ctx)

    def runner(argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        if list(argv[:2]) == ["docker", "ps"]:
            return subprocess.CompletedProcess(list(argv), 0, ps, "")
        if "/readyz" in argv:
            return subprocess.CompletedProcess(list(argv), ready, "ok" if not ready else "",
                                               "connection refused" if ready else "")
        if "deployment/mpi-operator" in argv:
            return subprocess.CompletedProcess(list(argv), 0, replicas, "")
        return subprocess.CompletedProcess(list(argv), 0, "", "")

    why, _ = kind.KindProvider(runner).health(kind_stack, info)
    assert (says in why) if says else why == "", why


class Listing(Recorder):
    """A runner whose ``docker ps -a`` lists the given node containers (id, cluster, state,
    created), and whose other docker commands succeed with nothing left."""

    def __init__(self, rows: list[tuple[str, str, str, str]]) -> None:
        super().__init__()
        self.rows = rows

    def __call__(self, argv: Sequence[str], timeout: float) -> subprocess.CompletedProcess[str]:
        self.calls.append(list(argv))
        if list(argv[:3]) == ["docker", "ps", "-a"] and "--format" in argv:
            text = "".join("\t".join(r) + "\n" for r in self.rows)
            return subprocess.CompletedProcess(list(argv), 0, text, "")
        return subprocess.CompletedProcess(list(argv), 0, "", "")


def test_node_containers_a_killed_creation_left_without_a_record_are_removed() -> None:
    old, young = "2026-12-07 11:48:48 +0000 UTC", "2026-12-07 12:30:00 +0000 UTC"
    now = datetime(2026, 12, 7, 12, 35, tzinfo=UTC).timestamp()
    engine = Listing([
        ("a1", "pst-48c7e3b9-kind-1-36", "created", old),   # orphan: old, never ran
        ("a2", "pst-48c7e3b9-kind-1-36", "exited", old),    # orphan: its other node
        ("b1", "pst-live0001-kind-1-36", "created", old),   # recorded: its run's to judge
        ("c1", "pst-other002-kind-1-36", "running", old),   # running: someone's live run
        ("d1", "pst-fresh003-kind-1-36", "created", young),  # a creation still under way
        ("e1", "kind", "created", old),                      # not ours
    ])
    assert kind_owners.remove_orphans(engine, {"pst-live0001-kind-1-36"}, now=now) == []
    removed = [c for c in engine.calls if c[:2] == ["docker", "rm"]]
    assert removed == [["docker", "rm", "-f", "-v", "a1", "a2"]]
    assert ["docker", "network", "rm", "pst-48c7e3b9-kind-1-36"] in engine.calls


def test_an_engine_that_cannot_list_is_said_never_read_as_no_orphans() -> None:
    engine = Engine(ps=(1, "Cannot connect to the Docker daemon"))
    [problem] = kind_owners.remove_orphans(engine, set())
    assert "cannot list kind node containers to find orphans" in problem
