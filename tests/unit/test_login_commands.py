"""The pure parts of the commands on PATH: what a shim refuses to send, the ssh route as an
ssh config, the login user, the fake's relay and what a shim says when its stack is gone."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.errors import StacksError
from pytest_stacks.login import commands, forward, relay
from pytest_stacks.login.route import LoginRoute
from pytest_stacks.manifest import load
from pytest_stacks.manifest.catalogue import default_manifest
from pytest_stacks.providers.base import StackInfo
from pytest_stacks.transports import CommandResult

REPO = Path(__file__).resolve().parents[2]


def _route(tmp_path: Path, kind: str = "docker", target: str = "c0ffee",
           shared: str | None = None) -> LoginRoute:
    return LoginRoute("slurm-x", kind, target, "submitter",  # type: ignore[arg-type]
                      str(tmp_path / "shared") if shared is None else shared,
                      ("sbatch", "squeue"))


def test_a_file_outside_the_shared_folder_is_refused_with_the_fix(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "job.sh").write_text("#!/bin/sh\n")
    route = _route(tmp_path)
    why = forward.refusal(route, "sbatch", tmp_path, ["-J", "x", "job.sh"])
    assert str(tmp_path / "job.sh") in why and "slurm-x" in why
    assert "stack_commands.shared" in why
    # The same file passed as an option's value is caught too.
    assert forward.refusal(route, "sbatch", Path("/"), [f"--chdir={tmp_path}"])


def test_files_the_login_host_sees_and_plain_words_pass(tmp_path: Path) -> None:
    shared = tmp_path / "shared"
    shared.mkdir()
    (shared / "job.sh").write_text("#!/bin/sh\n")
    route = _route(tmp_path)
    assert forward.refusal(route, "sbatch", shared, ["job.sh", "--wrap=echo hi"]) == ""
    # A system program exists here and there alike: not a file of the user's.
    assert forward.refusal(route, "srun", shared, ["/bin/true", "-J", "name"]) == ""
    assert forward.refusal(route, "squeue", tmp_path, ["-j", "12"]) == ""


def test_a_site_without_a_shared_folder_says_so(tmp_path: Path) -> None:
    (tmp_path / "job.sh").write_text("x")
    why = forward.refusal(_route(tmp_path, shared=""), "sbatch", tmp_path, ["job.sh"])
    assert "has no folder shared" in why


def test_a_refused_command_is_not_sent_and_exits_2(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "job.sh").write_text("x")
    monkeypatch.chdir(tmp_path)
    sent: list[Any] = []
    monkeypatch.setattr(subprocess, "run", lambda *a, **k: sent.append(a))
    assert forward.run(_route(tmp_path), ["sbatch", "job.sh"]) == forward.REFUSED
    assert sent == []
    assert "pytest-stacks: sbatch:" in capsys.readouterr().err


def test_the_ssh_route_becomes_an_ssh_config_through_every_hop(tmp_path: Path) -> None:
    endpoint = json.dumps({"hops": [{"host": "127.0.0.1", "port": 2201, "user": "submitter"},
                                    {"host": "login", "port": 22, "user": "submitter"}],
                           "key": "/k/id_ed25519", "known_hosts": "/k/known_hosts"})
    path = tmp_path / "ssh_config"
    commands.write_ssh_config(path, endpoint)
    text = path.read_text()
    assert "Host hop0\n  HostName 127.0.0.1\n  Port 2201\n" in text
    login = text[text.index("Host login"):]
    assert "HostName login" in login and "ProxyJump hop0" in login
    assert text.count("StrictHostKeyChecking yes") == 2
    assert text.count("UserKnownHostsFile /k/known_hosts") == 2
    assert oct(path.stat().st_mode & 0o777) == "0o600"
    # ssh itself reads it: the login host's settings as ssh resolves them.
    if shutil.which("ssh"):
        shown = subprocess.run(["ssh", "-F", str(path), "-G", "login"], capture_output=True,
                               text=True, check=True).stdout
        assert "hostname login" in shown and "proxyjump hop0" in shown
        assert "stricthostkeychecking true" in shown


def test_the_login_user_is_never_root() -> None:
    manifest = load(default_manifest(REPO))
    stack = manifest.get("slurm-24.11")
    assert commands.login_user(stack, {}) == "submitter"
    assert commands.login_user(manifest.get("slurm-26.05-cluster-ssh"), {}) == "submitter"
    assert commands.login_user(stack, {"login_user": "alice"}) == "alice"
    with pytest.raises(StacksError, match="never root"):
        commands.login_user(stack, {"login_user": "root"})


def test_a_stack_without_a_login_host_is_said(tmp_path: Path) -> None:
    manifest = load(default_manifest(REPO))
    with pytest.raises(commands.NoCommands, match="kubectl is put on PATH only"):
        commands.open_commands(manifest.get("kind-1.36-mpi-0.8"),
                               StackInfo(provider="kind"), None, tmp_path / "login")


class _Front:
    def __init__(self) -> None:
        self.calls: list[dict[str, Any]] = []

    def run(self, argv: list[str], *, user: str | None = None, timeout: float = 60.0,
            stdin: str = "", cwd: str | None = None) -> CommandResult:
        self.calls.append({"argv": argv, "user": user, "stdin": stdin, "cwd": cwd})
        code = 127 if argv[0] == "nope" else 3
        return CommandResult(tuple(argv), code, "out\x01é\n", "err\n")


def test_the_relay_carries_argv_stdin_cwd_and_the_answer_byte_for_byte() -> None:
    front = _Front()
    served = relay.Relay(front, "submitter")
    try:
        code, out, err = relay.call(str(served.socket), ["sbatch", "--wrap", "a b"], "/w",
                                    b"#!/bin/sh\necho hi\n")
    finally:
        served.close()
    assert (code, out, err) == (3, "out\x01é\n".encode(), b"err\n")
    assert front.calls == [{"argv": ["sbatch", "--wrap", "a b"], "user": "submitter",
                            "stdin": "#!/bin/sh\necho hi\n", "cwd": "/w"}]
    assert not served.folder.exists(), "the relay's socket folder outlives it"


def _shim_run(tmp_path: Path, route: LoginRoute, argv: list[str]
              ) -> subprocess.CompletedProcess[str]:
    """A shim as a client runs it: its own process."""
    route_file = tmp_path / "route.json"
    route.write(route_file)
    code = (f"import sys; from pytest_stacks.login.forward import main; "
            f"sys.exit(main({str(route_file)!r}, {argv!r}))")
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          cwd=tmp_path, timeout=60, check=False,
                          env={**os.environ, "PYTHONPATH": str(REPO)})


def test_a_command_the_stack_lacks_exits_127_and_names_what_it_has(tmp_path: Path) -> None:
    served = relay.Relay(_Front(), "submitter")
    try:
        done = _shim_run(tmp_path, _route(tmp_path, "relay", str(served.socket)), ["nope"])
    finally:
        served.close()
    assert done.returncode == 127
    assert "stack slurm-x (relay) has: sbatch, squeue" in done.stderr


def test_a_fake_whose_test_process_ended_is_said(tmp_path: Path) -> None:
    done = _shim_run(tmp_path, _route(tmp_path, "relay", str(tmp_path / "gone.sock")),
                     ["squeue"])
    assert done.returncode == forward.UNREACHABLE
    assert "in-process fake" in done.stderr and "stack_commands" in done.stderr


@pytest.mark.skipif(subprocess.run(["docker", "info"], capture_output=True,
                                   check=False).returncode != 0 if shutil.which("docker")
                    else True, reason="no Docker engine here")
def test_a_login_container_that_went_away_is_said_with_the_fix(tmp_path: Path) -> None:
    route = LoginRoute("slurm-x", "docker", "pytest-stacks-no-such-container", "submitter",
                       "", ("squeue",), shutil.which("docker") or "docker")
    done = _shim_run(tmp_path, route, ["squeue"])
    assert done.returncode == forward.UNREACHABLE
    assert "login host of stack slurm-x cannot be reached" in done.stderr
    assert "pytest-stacks up slurm-x" in done.stderr


def _cached(build: Any) -> bool:
    from pytest_stacks import gobuild

    if shutil.which("go") is None and not Path("/usr/local/go/bin/go").exists():
        return False
    version = subprocess.run([str(gobuild.go_binary()), "env", "GOVERSION"],
                             capture_output=True, text=True, check=False).stdout.strip()
    return (gobuild.cache_root() / f"{build.name}-{build.digest(version)}"
            / gobuild.COMPLETE).exists()


def test_a_kubernetes_stack_gets_its_pinned_kubectl_and_kubeconfig(tmp_path: Path) -> None:
    from pytest_stacks.backends.kubernetes.adapter import control_plane_builds

    stack = load(default_manifest(REPO)).get("k8s-1.36-node-mpi-0.8")
    if not _cached(control_plane_builds(stack)["kubernetes"]):
        pytest.skip("the stack's control plane is not built on this machine yet (a cold Go "
                    "build takes minutes; `pytest-stacks build --programs-only "
                    "k8s-1.36-node-mpi-0.8` makes it)")
    info = StackInfo(provider="compose", endpoints={"kubeconfig": str(tmp_path / "kc")})
    made = commands.open_commands(stack, info, None, tmp_path / "login")
    try:
        assert made.commands == ("kubectl",) and made.shared is None
        env = made.environment()
        assert env["KUBECONFIG"] == str(tmp_path / "kc")
        shown = subprocess.run(["kubectl", "version", "--client", "-o", "json"], env=env,
                               capture_output=True, text=True, check=True, timeout=60)
        # The stack's own Kubernetes version, not whatever kubectl this machine has.
        assert json.loads(shown.stdout)["clientVersion"]["gitVersion"] == "v1.36.3"
    finally:
        made.close()
    assert not (tmp_path / "login").exists()


def test_a_fake_without_a_command_line_is_said(tmp_path: Path) -> None:
    stack = load(default_manifest(REPO)).get("fake-mpi-operator")
    with pytest.raises(commands.NoCommands, match="has no command line"):
        commands.open_commands(stack, StackInfo(provider="fake"), object(), tmp_path / "l")
    assert not (tmp_path / "l").exists()


def test_the_fake_kubernetes_stack_gets_its_kubectl_through_the_relay(tmp_path: Path) -> None:
    from pytest_stacks.backends.kubernetes.fake import FakeCluster

    stack = load(default_manifest(REPO)).get("fake-mpi-operator")
    cluster = FakeCluster()
    made = commands.open_commands(stack, StackInfo(provider="fake"), cluster,
                                  tmp_path / "login")
    try:
        assert made.commands == ("kubectl",) and made.shared is None
        assert made.route.user == ""  # kubectl has no login user, as on a real stack
        env = made.environment()
        assert "https://fake-mpi-operator.invalid" in Path(env["KUBECONFIG"]).read_text()
        # kubectl reads the caller's own files, anywhere (it runs on this machine).
        (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n"
                                          "metadata: {name: cfg}\ndata: {a: b}\n")
        applied = subprocess.run(["kubectl", "apply", "-f", "cm.yaml"], env=env, cwd=tmp_path,
                                 capture_output=True, text=True, timeout=60, check=False)
        assert (applied.returncode, applied.stdout) == (0, "configmap/cfg created\n")
        assert cluster.get("ConfigMap", "default", "cfg")["data"] == {"a": "b"}
        missing = subprocess.run(["kubectl", "get", "cm", "nope"], env=env,
                                 capture_output=True, text=True, timeout=60, check=False)
        assert missing.returncode == 1
        assert missing.stderr == 'Error from server (NotFound): configmaps "nope" not found\n'
    finally:
        made.close()
        cluster.close()
    assert not (tmp_path / "login").exists()
