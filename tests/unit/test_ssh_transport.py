"""The ssh transport's pure parts: quoting, sudo for another user, per-run credentials."""

from __future__ import annotations

import shlex
import stat
import time
from pathlib import Path

import paramiko
import pytest

from pytest_stacks.errors import BackendCallError
from pytest_stacks.transports.ssh import Hop, SshTransport
from pytest_stacks.transports.ssh_keys import client_key_pair, write_known_hosts


def _transport(tmp_path: Path, *hops: Hop) -> SshTransport:
    return SshTransport(hops or (Hop("127.0.0.1", 2222, "submitter"),), tmp_path / "key",
                        tmp_path / "known_hosts", connect_timeout=2)


@pytest.mark.parametrize("argv", [
    ["echo", "a b", "c'd", '"e"', "$HOME", "`id`", "; rm -rf /", "x\ny"],
    ["sbatch", "--job-name=it's mine", "--wrap", "echo $((1+1)) > out"],
])
def test_arguments_arrive_as_given_never_resplit(tmp_path: Path, argv: list[str]) -> None:
    line = _transport(tmp_path).command_line(argv, None, timeout=30)
    assert shlex.split(line) == ["timeout", "--kill-after=5", "30", *argv]


def test_another_user_goes_through_sudo_without_a_password(tmp_path: Path) -> None:
    line = _transport(tmp_path).command_line(["cat", "/var/log/x"], "slurm", timeout=0)
    assert shlex.split(line) == ["sudo", "-n", "-u", "slurm", "--", "cat", "/var/log/x"]
    same = _transport(tmp_path).command_line(["id"], "submitter", timeout=0)
    assert shlex.split(same) == ["id"]


def test_known_hosts_names_follow_openssh() -> None:
    assert Hop("127.0.0.1", 2222, "u").known_hosts_name == "[127.0.0.1]:2222"
    assert Hop("login", 22, "u").known_hosts_name == "login"


def test_client_key_is_private_and_loadable(tmp_path: Path) -> None:
    path, public = client_key_pair(tmp_path / "creds", "pytest-stacks-run")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    key = paramiko.Ed25519Key.from_private_key_file(str(path))
    assert public.split()[:2] == [key.get_name(), key.get_base64()]
    assert public.endswith(" pytest-stacks-run")
    other, _ = client_key_pair(tmp_path / "again", "x")
    assert other.read_bytes() != path.read_bytes(), "every run gets its own key"


def test_known_hosts_file_pins_each_hop(tmp_path: Path) -> None:
    _, public = client_key_pair(tmp_path / "k", "c")
    target = tmp_path / "known_hosts"
    write_known_hosts(target, [("[127.0.0.1]:2222", public), ("login", public)])
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    keys = paramiko.HostKeys(str(target))
    assert set(keys.keys()) == {"[127.0.0.1]:2222", "login"}


def test_an_unreachable_first_hop_is_a_clear_backend_error(tmp_path: Path) -> None:
    key, _ = client_key_pair(tmp_path, "c")
    write_known_hosts(tmp_path / "known_hosts", [])
    transport = SshTransport([Hop("127.0.0.1", 1, "submitter")], key,
                             tmp_path / "known_hosts", connect_timeout=2)
    with pytest.raises(BackendCallError, match=r"cannot connect \(hop 1 of 1: \[127.0.0.1\]:1\)"):
        transport.run(["true"])


def test_no_hops_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="at least one hop"):
        SshTransport([], tmp_path / "k", tmp_path / "kh")


class _SilentChannel:
    """A command in flight on a host that went away: no output, no EOF, ever."""

    eof_received = False

    def recv_ready(self) -> bool:
        return False

    def recv_stderr_ready(self) -> bool:
        return False


def test_a_call_in_flight_to_a_host_that_went_away_ends_at_the_keepalive() -> None:
    """ServerAliveInterval's equivalent: after the interval of silence the far side is asked;
    no answer ends the call long before the command's own deadline."""
    from pytest_stacks.transports import ssh

    asked: list[float] = []

    def gone() -> None:
        asked.append(time.monotonic())
        raise paramiko.SSHException("the far side stopped answering")

    started = time.monotonic()
    with pytest.raises(paramiko.SSHException, match="stopped answering"):
        ssh._drain(_SilentChannel(), started + 600, 0.2, gone)  # type: ignore[arg-type]
    assert len(asked) == 1 and asked[0] - started >= 0.2


def test_a_quiet_command_on_a_live_host_is_asked_again_and_runs_on() -> None:
    from pytest_stacks.transports import ssh

    class Ends(_SilentChannel):
        def __init__(self) -> None:
            self.after = time.monotonic() + 0.5

        @property
        def eof_received(self) -> bool:  # type: ignore[override]
            return time.monotonic() > self.after

    asked: list[float] = []
    out = ssh._drain(Ends(), time.monotonic() + 600, 0.1,  # type: ignore[arg-type]
                     lambda: asked.append(time.monotonic()))
    assert out == (b"", b"") and len(asked) >= 2


def test_the_keepalive_probe_names_the_silence_when_no_answer_comes(tmp_path: Path) -> None:
    class NoAnswer:
        def open_session(self, timeout: float) -> None:
            assert timeout == 3
            raise paramiko.SSHException("Timeout opening channel.")

    transport = SshTransport((Hop("127.0.0.1", 2222, "u"),), tmp_path / "k",
                             tmp_path / "kh", alive_interval=4, answer_timeout=3)
    with pytest.raises(paramiko.SSHException, match=r"no reply to a keepalive within 3 s "
                       r"after 4 s of silence: Timeout opening channel"):
        transport._still_there(NoAnswer())  # type: ignore[arg-type]
