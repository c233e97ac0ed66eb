"""A failure is the product's only when the stack is healthy right after it: the questions a
compose stack is asked (containers, route, the backend's liveness), and the lifecycle's
verdict from them and from the backend's own words in the failure."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from pytest_stacks.backends.htcondor.adapter import HTCondorComposeAdapter
from pytest_stacks.backends.kubernetes.adapter import ControlPlaneAdapter
from pytest_stacks.backends.slurm.adapter import SlurmComposeAdapter
from pytest_stacks.errors import BackendCallError
from pytest_stacks.lifecycle.rundir import StackFiles, StackRecord
from pytest_stacks.lifecycle.stack_run import StackRun
from pytest_stacks.manifest import loads
from pytest_stacks.providers import stack_health
from pytest_stacks.providers.base import RunContext, StackInfo
from pytest_stacks.transports import CommandResult


def _container(status: str = "running", *, paused: bool = False, mode: str = "p_default",
               networks: Sequence[str] = ("p_default",)) -> Any:
    return SimpleNamespace(
        name="p-slurm-1", status=status, labels={"com.docker.compose.service": "slurm"},
        attrs={"State": {"Paused": paused, "ExitCode": 137 if status == "exited" else 0},
               "HostConfig": {"NetworkMode": mode},
               "NetworkSettings": {"Networks": {n: {} for n in networks}}},
        logs=lambda tail: b"slurmctld: last words\n")


def test_a_running_container_on_its_network_can_serve() -> None:
    assert stack_health.container_fault(_container()) == ("", "")
    assert stack_health.container_fault(_container(mode="host", networks=())) == ("", "")


def test_a_paused_container_is_named_paused() -> None:
    fault, _ = stack_health.container_fault(_container("paused", paused=True))
    assert fault == "the stack's container p-slurm-1 (service slurm) is paused (its " \
                    "processes are frozen)"


def test_a_container_cut_off_its_network_is_named_with_the_network() -> None:
    fault, _ = stack_health.container_fault(_container(networks=()))
    assert "is cut off its network p_default (network gone: attached to none)" in fault


def test_a_dead_container_keeps_its_exit_code_and_last_logs() -> None:
    fault, logs = stack_health.container_fault(_container("exited"))
    assert "is exited (exit code 137)" in fault and "last words" in logs


class Scripted:
    """A transport answering each command by its first word."""

    def __init__(self, answers: dict[str, tuple[int, str, str]]) -> None:
        self.answers = answers
        self.asked: list[tuple[str, ...]] = []
        self.closed = False

    def run(self, argv: Sequence[str], *, user: str | None = None,
            timeout: float = 60.0) -> CommandResult:
        assert timeout <= 20, "every liveness question is bounded"
        self.asked.append(tuple(argv))
        code, out, err = self.answers[argv[0]]
        return CommandResult(tuple(argv), code, out, err)

    def close(self) -> None:
        self.closed = True


def test_slurm_liveness_is_scontrol_ping_and_no_node_down() -> None:
    adapter = SlurmComposeAdapter()
    up = (0, "Slurmctld(primary) at slurm is UP\n", "")
    fine = Scripted({"scontrol": up, "sinfo": (0, "n1 idle none\nn2 mixed none\n", "")})
    assert adapter.liveness(fine) == ""
    assert fine.asked[1] == ("sinfo", "-N", "-h", "-o", "%N %T %E")
    down = adapter.liveness(Scripted({"scontrol": (1, "Slurmctld(primary) at slurm is DOWN\n",
                                                   ""), "sinfo": (0, "", "")}))
    assert down == "slurmctld not responding (scontrol ping: Slurmctld(primary) at slurm is DOWN)"


def test_slurm_liveness_names_a_node_down_with_slurms_reason() -> None:
    adapter = SlurmComposeAdapter()
    up = (0, "Slurmctld(primary) at ctld is UP\n", "")
    # As sinfo 26.05 prints a cluster whose node1 container was killed (once per partition).
    sinfo = "node1 down* Not responding\nnode1 down* Not responding\nnode2 idle none\n"
    node = adapter.liveness(Scripted({"scontrol": up, "sinfo": (0, sinfo, "")}))
    assert node == ("node node1 is DOWN, not responding (sinfo state down*; Slurm's reason: "
                    "Not responding)")
    quiet = adapter.liveness(Scripted({"scontrol": up, "sinfo": (0, "n1 idle* none\n", "")}))
    assert quiet == "node n1 is not responding (sinfo state idle*)", "a trailing * is a node " \
        "not responding"
    drained = adapter.liveness(Scripted({"scontrol": up, "sinfo": (
        0, "n1 drained Kill task failed\nn2 allocated none\n", "")}))
    assert drained == "node n1 is DRAINED (sinfo state drained; Slurm's reason: Kill task failed)"


def test_slurm_liveness_fails_closed_when_sinfo_cannot_say() -> None:
    adapter = SlurmComposeAdapter()
    up = (0, "Slurmctld(primary) at ctld is UP\n", "")
    refused = adapter.liveness(Scripted({"scontrol": up, "sinfo": (
        1, "", "slurm_load_node: Socket timed out on send/recv operation\n")}))
    assert refused == ("sinfo cannot list the nodes (slurm_load_node: Socket timed out on "
                       "send/recv operation)")
    empty = adapter.liveness(Scripted({"scontrol": up, "sinfo": (0, "", "")}))
    assert empty.startswith("sinfo lists no node")


def test_htcondor_liveness_asks_the_schedd_then_the_collector() -> None:
    adapter = HTCondorComposeAdapter()
    fine = {"condor_q": (0, "Total for query: 0 jobs", ""), "condor_status": (0, "schedd@x\n", "")}
    assert adapter.liveness(Scripted(fine)) == ""
    gone = adapter.liveness(Scripted({**fine, "condor_q": (
        1, "", "-- Failed to fetch ads from: <172.18.0.2:9618> : x\nCEDAR:6001:Failed to "
               "connect to <172.18.0.2:9618>\n")}))
    assert gone.startswith("schedd unreachable (condor_q: -- Failed to fetch ads") and \
        "CEDAR:6001" in gone
    no_ad = adapter.liveness(Scripted({**fine, "condor_status": (0, "", "")}))
    assert no_ad.startswith("collector unreachable or no schedd ad")


def test_kubernetes_liveness_is_the_stack_s_readiness_answer() -> None:
    adapter = ControlPlaneAdapter()
    ok = "readyz=ok crd=True lease=x node=True"
    assert adapter.liveness(Scripted({"/opt/pytest-stacks/ready.sh": (0, ok, "")})) == ""
    said = adapter.liveness(Scripted({"/opt/pytest-stacks/ready.sh": (
        1, "readyz=none crd=False lease=none node=False", "")}))
    assert said == "control plane not ready (readyz=none crd=False lease=none node=False)"


def test_a_route_that_does_not_answer_is_the_fault_and_is_closed() -> None:
    class Gone(Scripted):
        def run(self, argv: Sequence[str], *, user: str | None = None,
                timeout: float = 60.0) -> CommandResult:
            raise BackendCallError("ssh submitter@[127.0.0.1]:2222: cannot connect")

    route = Gone({})
    assert stack_health.route_fault(route) == ("the route to the stack does not answer (ssh "
                                               "submitter@[127.0.0.1]:2222: cannot connect)")
    assert route.closed
    assert stack_health.route_fault(None) == ""
    assert stack_health.route_fault(Scripted({"true": (0, "", "")})) == ""


def test_a_liveness_question_that_raises_is_a_fault_not_a_pass() -> None:
    def broken(transport: Any) -> str:
        raise BackendCallError("cannot run 'scontrol' in the stack: Container x is paused")

    fault = stack_health.backend_fault(SimpleNamespace(liveness=broken), Scripted({}))
    assert fault.startswith("the backend does not answer its liveness question")
    assert stack_health.backend_fault(SimpleNamespace(), Scripted({})) == "", \
        "an adapter that declares no liveness question is not asked"


MANIFEST = """
version: 1
capabilities: {submit: s}
backends: {htcondor: {window: {anchor: "23.0", leading_edge: "25.0"}}}
stacks:
  - name: htcondor-25
    backend: htcondor
    version: "25.0.1"
    provider: compose
    transport: bindings
    configuration: single-node
    capabilities: [submit]
    lanes: [pr]
    compose: {directory: stacks/htcondor, service: htcondor}
"""


class Provider:
    def __init__(self, answer: tuple[str, str]) -> None:
        self.answer = answer

    def health(self, stack: Any, info: StackInfo) -> tuple[str, str]:
        return self.answer


def _run(tmp_path: Path, answer: tuple[str, str]) -> StackRun:
    (tmp_path / "stacks" / "htcondor").mkdir(parents=True, exist_ok=True)
    (tmp_path / "stacks" / "htcondor" / "compose.yaml").write_text("services: {}\n")
    stack = loads(MANIFEST, tmp_path / "manifest.yaml").stacks[0]
    files = StackFiles(tmp_path, stack.name)
    files.write(StackRecord(stack.name, StackInfo(provider="compose")))
    ctx = RunContext.for_this_process("20260101000000-abcdef12", tmp_path / "run")
    return StackRun(stack, Provider(answer), files, ctx)  # type: ignore[arg-type]


SCHEDD_GONE = ("BackendCallError: HTCondor query failed: query: Failed to connect to schedd, "
               "errmsg=CEDAR:6001:Failed to connect to <172.18.0.3:9618?addrs=172.18.0.3-9618>")


def test_the_backend_s_words_for_a_gone_service_break_a_healthy_looking_stack(
        tmp_path: Path) -> None:
    run = _run(tmp_path, ("", ""))
    error = run.health(SCHEDD_GONE)
    assert error is not None
    assert error.message.startswith("the stack died during the run: schedd unreachable (the "
                                    "daemon said: BackendCallError: HTCondor query failed")
    saved = run.files.error()
    assert saved is not None and saved.message == error.message, \
        "recorded: every later test on the stack ends at once"


@pytest.mark.parametrize("failure", [
    "AssertionError: assert 'failed' == 'completed'",
    "BackendCallError: HTCondor submit failed: Submit failed: Parse error in expression",
    "",
])
def test_a_product_failure_on_a_healthy_stack_stays_the_product_s(tmp_path: Path,
                                                                   failure: str) -> None:
    run = _run(tmp_path, ("", ""))
    assert run.health(failure) is None
    assert run.files.error() is None


def test_a_fault_found_keeps_the_daemon_s_words_from_the_failure(tmp_path: Path) -> None:
    run = _run(tmp_path, ("the stack's container p-htcondor-1 (service htcondor) is cut off "
                          "its network p_default (network gone: attached to none)", ""))
    error = run.health(SCHEDD_GONE)
    assert error is not None and "is cut off its network p_default" in error.message
    assert "; the failed call said: BackendCallError: HTCondor query failed" in error.message
