"""The ``ssh`` transport: the scheduler reached as a site's users reach it, through sshd on a
login node, optionally through any number of jump hosts (``ssh -J a,b`` semantics).

paramiko rather than the OpenSSH client: the transport is a seam the driver calls hundreds of
times per run, so one authenticated connection (per hop) is kept and reused instead of a process
and a handshake per command; host keys are checked against a per-run ``known_hosts`` with a
reject policy (never trust on first use); and a jump is a ``direct-tcpip`` channel of the
previous hop, so the design has no limit of two tiers. Commands are quoted with
:func:`shlex.join` on this side and run by the login user's shell there, which is exactly where
quoting bugs live on real sites.
"""

from __future__ import annotations

import contextlib
import shlex
import stat
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import paramiko

from pytest_stacks.errors import BackendCallError
from pytest_stacks.transports import CommandResult

#: OpenSSH's ServerAliveInterval and the answer's deadline, in paramiko's terms: a
#: connection silent this long is asked whether the far side is still there (a channel opened
#: and closed); no answer within ``ANSWER_S`` ends the call in flight. A host that went away
#: (paused, cut off its network) ends a call within ``ALIVE_INTERVAL_S + ANSWER_S`` (10 s),
#: not at the command's own timeout.
ALIVE_INTERVAL_S = 5.0
ANSWER_S = 5.0


class HostKeyRefused(BackendCallError):
    """A hop's host key is not the one pinned for this run: nothing was sent to it."""


@dataclass(frozen=True)
class Hop:
    """One sshd on the way: ``host``/``port`` as the previous hop (or this machine) reaches it."""

    host: str
    port: int
    user: str

    @property
    def known_hosts_name(self) -> str:
        return self.host if self.port == 22 else f"[{self.host}]:{self.port}"

    def to_json(self) -> dict[str, Any]:
        return {"host": self.host, "port": self.port, "user": self.user}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Hop:
        return cls(str(data["host"]), int(data["port"]), str(data["user"]))


class SshTransport:
    """Commands and files on the last hop (the login node), as its login user.

    ``user`` other than the login user runs through ``sudo -n -u USER`` there (the site grants
    that, or the command fails with sudo's own message); files move over SFTP as the login user.
    """

    def __init__(self, hops: Sequence[Hop], key_file: Path, known_hosts: Path, *,
                 connect_timeout: float = 15.0, alive_interval: float = ALIVE_INTERVAL_S,
                 answer_timeout: float = ANSWER_S) -> None:
        if not hops:
            raise ValueError("an ssh transport needs at least one hop (the login node)")
        self.hops = tuple(hops)
        self._key_file = key_file
        self._known_hosts = known_hosts
        self._connect_timeout = connect_timeout
        self._alive_interval = alive_interval
        self._answer_timeout = answer_timeout
        self._clients: list[paramiko.SSHClient] = []
        self._sftp: paramiko.SFTPClient | None = None

    @property
    def login_user(self) -> str:
        return self.hops[-1].user

    def _route(self) -> str:
        return " -> ".join(f"{h.user}@{h.known_hosts_name}" for h in self.hops)

    # ---------------------------------------------------------------- connecting

    def _connected(self) -> paramiko.SSHClient:
        """The open connection, or a new one. A hop that is briefly away (sshd re-executing,
        a container restarting) is retried until ``connect_timeout`` (each attempt within
        what is left of it, so the whole is bounded); a refused host key never is."""
        if self._clients and self._alive():
            return self._clients[-1]
        deadline = time.monotonic() + self._connect_timeout
        while True:
            try:
                return self._connect(max(1.0, deadline - time.monotonic()))
            except HostKeyRefused:
                raise
            except BackendCallError:
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.5)

    def _connect(self, timeout: float) -> paramiko.SSHClient:
        self.close()
        key = paramiko.Ed25519Key.from_private_key_file(str(self._key_file))
        sock: Any = None
        try:
            for hop in self.hops:
                client = paramiko.SSHClient()
                client.load_host_keys(str(self._known_hosts))
                client.set_missing_host_key_policy(paramiko.RejectPolicy())
                if self._clients:
                    previous = self._clients[-1].get_transport()
                    assert previous is not None
                    sock = previous.open_channel("direct-tcpip", (hop.host, hop.port),
                                                 ("127.0.0.1", 0),
                                                 timeout=timeout)
                client.connect(hop.host, hop.port, username=hop.user, pkey=key, sock=sock,
                               allow_agent=False, look_for_keys=False,
                               timeout=timeout,
                               banner_timeout=timeout,
                               auth_timeout=timeout)
                self._clients.append(client)
                hop_transport = client.get_transport()
                if hop_transport is not None:  # ServerAliveInterval: NAT and firewalls
                    hop_transport.set_keepalive(max(1, int(self._alive_interval)))
        except paramiko.BadHostKeyException as exc:
            at = len(self._clients)
            self.close()
            raise HostKeyRefused(
                f"the host key of {self.hops[at].known_hosts_name} (hop {at + 1} of "
                f"{len(self.hops)}) is not the one pinned for this run "
                f"(expected {exc.expected_key.get_name()} "
                f"{exc.expected_key.fingerprint}, got {exc.key.get_name()} "
                f"{exc.key.fingerprint}; known_hosts: {self._known_hosts}). Refusing to "
                f"connect: nothing was run there.") from None
        except paramiko.SSHException as exc:
            self.close()
            if "not found in known_hosts" in str(exc):
                raise HostKeyRefused(f"{exc}: no host key is pinned for it in "
                                     f"{self._known_hosts}; nothing was run there.") from None
            raise BackendCallError(f"ssh {self._route()}: {exc}") from None
        except (TimeoutError, OSError, EOFError) as exc:
            self.close()
            raise BackendCallError(f"ssh {self._route()}: cannot connect "
                                   f"(hop {len(self._clients) + 1} of {len(self.hops)}: "
                                   f"{self.hops[len(self._clients)].known_hosts_name}): "
                                   f"{exc or type(exc).__name__}") from None
        return self._clients[-1]

    def _alive(self) -> bool:
        transports = [c.get_transport() for c in self._clients]
        return all(t is not None and t.is_active() for t in transports)

    def close(self) -> None:
        if self._sftp is not None:
            with contextlib.suppress(Exception):
                self._sftp.close()
            self._sftp = None
        for client in reversed(self._clients):
            with contextlib.suppress(Exception):
                client.close()
        self._clients = []

    # ---------------------------------------------------------------- the Transport seam

    def command_line(self, argv: Sequence[str], user: str | None, timeout: float) -> str:
        """What the login user's shell runs: quoted here, never re-split there."""
        command = list(argv)
        if timeout:
            command = ["timeout", "--kill-after=5", str(int(timeout)), *command]
        if user and user != self.login_user:
            command = ["sudo", "-n", "-u", user, "--", *command]
        return shlex.join(command)

    def run(self, argv: Sequence[str], *, user: str | None = None,
            timeout: float = 60.0) -> CommandResult:
        client = self._connected()
        transport = client.get_transport()
        assert transport is not None
        try:
            channel = transport.open_session(timeout=self._connect_timeout)
            channel.exec_command(self.command_line(argv, user, timeout))
            deadline = time.monotonic() + timeout + 15
            stdout, stderr = _drain(channel, deadline, self._alive_interval,
                                    lambda: self._still_there(transport))
            while not channel.exit_status_ready() and time.monotonic() < deadline:
                time.sleep(0.005)
            code = channel.recv_exit_status() if channel.exit_status_ready() else -1
            channel.close()
        except (paramiko.SSHException, OSError, EOFError) as exc:
            self.close()
            raise BackendCallError(f"ssh {self._route()}: {argv[0]!r} failed in transit: "
                                   f"{exc or type(exc).__name__}") from None
        return CommandResult(tuple(argv), code, stdout.decode("utf-8", "replace"),
                             stderr.decode("utf-8", "replace"))

    def _still_there(self, transport: paramiko.Transport) -> None:
        """OpenSSH's server-alive check: a session channel opened and closed at once, its
        answer due within ``answer_timeout``; raises SSHException when none comes (paramiko's
        own keepalive never waits for a reply)."""
        try:
            probe = transport.open_session(timeout=self._answer_timeout)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise paramiko.SSHException(
                f"the far side stopped answering (no reply to a keepalive within "
                f"{self._answer_timeout:.0f} s after {self._alive_interval:.0f} s of silence: "
                f"{exc or type(exc).__name__})") from None
        probe.close()

    def _sftp_client(self) -> paramiko.SFTPClient:
        if self._sftp is None or not self._alive():
            self._sftp = self._connected().open_sftp()
            # Every read of a transfer bounded: a host that went away mid-copy ends it.
            self._sftp.get_channel().settimeout(self._alive_interval + self._answer_timeout)
        return self._sftp

    def put_files(self, directory: str, files: Mapping[str, bytes], *, user: str,
                  mode: int = 0o644) -> None:
        if user != self.login_user:
            raise BackendCallError(
                f"cannot stage files as {user!r} over ssh: files move as the login user "
                f"{self.login_user!r}; make the driver's submit user the login user")
        try:
            sftp = self._sftp_client()
            sftp.mkdir(directory, 0o755)
            for name, data in files.items():
                path = f"{directory}/{name}"
                with sftp.open(path, "wb") as handle:
                    handle.write(data)
                sftp.chmod(path, mode)
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise BackendCallError(f"cannot copy files into {directory} over ssh: "
                                   f"{exc}") from None

    def get_files(self, directory: str, names: Sequence[str]) -> dict[str, bytes]:
        found: dict[str, bytes] = {}
        try:
            sftp = self._sftp_client()
            for name in names:
                path = f"{directory}/{name}"
                try:
                    if not stat.S_ISREG(sftp.stat(path).st_mode or 0):
                        continue
                    with sftp.open(path, "rb") as handle:
                        found[name] = handle.read()
                except FileNotFoundError:
                    continue
        except (paramiko.SSHException, OSError, EOFError) as exc:
            raise BackendCallError(f"cannot read files from {directory} over ssh: "
                                   f"{exc}") from None
        return found


def _drain(channel: paramiko.Channel, deadline: float, alive_interval: float = 0.0,
           still_there: Callable[[], None] | None = None) -> tuple[bytes, bytes]:
    """Read stdout and stderr together until the far side's EOF (reading one to its end
    first can deadlock when the other fills its window). EOF, not the exit status, marks the
    end: sshd may send the exit status before the last of the output. After
    ``alive_interval`` of silence, ``still_there`` asks whether the far side is (it raises
    when not), so a host that went away ends the call in seconds."""
    out, err = bytearray(), bytearray()
    heard = time.monotonic()
    while True:
        progressed = False
        while channel.recv_ready():
            out += channel.recv(65536)
            progressed = True
        while channel.recv_stderr_ready():
            err += channel.recv_stderr(65536)
            progressed = True
        if channel.eof_received and not channel.recv_ready() \
                and not channel.recv_stderr_ready():
            return bytes(out), bytes(err)
        if time.monotonic() > deadline:
            raise paramiko.SSHException("no end of output before the deadline")
        now = time.monotonic()
        if progressed:
            heard = now
        elif still_there is not None and alive_interval and now - heard >= alive_interval:
            still_there()
            heard = time.monotonic()
        if not progressed:
            time.sleep(0.005)
