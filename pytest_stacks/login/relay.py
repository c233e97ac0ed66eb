"""The fake's command line, reached from a shim in another process: a Unix socket served by a
thread of the test process that holds the in-process double.

One request per connection, JSON both ways (argv, cwd, stdin as base64; exit code, stdout and
stderr as base64). The socket lives in a folder of its own, made 0700 and removed by
:meth:`Relay.close`, which the plugin calls when the session lets the stack go: nothing is left
listening after the run.
"""

from __future__ import annotations

import base64
import contextlib
import inspect
import json
import os
import shutil
import socket
import socketserver
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

#: A request or an answer larger than this is refused (a runaway client, not a job script).
LIMIT = 64 * 1024 * 1024


def _read_all(sock: socket.socket) -> bytes:
    chunks, size = [], 0
    while chunk := sock.recv(65536):
        chunks.append(chunk)
        size += len(chunk)
        if size > LIMIT:
            raise ValueError("message too large")
    return b"".join(chunks)


def _b64(data: bytes | str) -> str:
    raw = data.encode() if isinstance(data, str) else data
    return base64.b64encode(raw).decode()


class Relay:
    """Serves ``front.run(argv, user=..., stdin=..., cwd=...)`` to the shims."""

    def __init__(self, front: Any, user: str) -> None:
        self._front = front
        self._user = user
        self._accepts = _accepted_keywords(front.run)
        # Unix socket paths are limited to ~100 bytes: a short private folder of its own.
        self.folder = Path(tempfile.mkdtemp(prefix="pst-relay-"))
        self.folder.chmod(0o700)
        self.socket = self.folder / "s"
        relay = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                relay._serve(self.request)

        self._server = socketserver.ThreadingUnixStreamServer(str(self.socket), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever,
                                        name="pytest-stacks-relay", daemon=True)
        self._thread.start()

    def _serve(self, conn: socket.socket) -> None:
        try:
            request = json.loads(_read_all(conn))
            answer = self.answer(request)
        except Exception as exc:  # the shim says what broke; the session goes on
            answer = {"returncode": 255, "stdout": "",
                      "stderr": _b64(f"pytest-stacks: the fake could not answer: {exc}\n")}
        with contextlib.suppress(OSError):
            conn.sendall(json.dumps(answer).encode())

    def answer(self, request: dict[str, Any]) -> dict[str, Any]:
        argv = [str(a) for a in request["argv"]]
        options: dict[str, Any] = {"user": self._user}
        stdin = base64.b64decode(request.get("stdin", "")).decode("utf-8", "replace")
        if "stdin" in self._accepts:
            options["stdin"] = stdin
        if "cwd" in self._accepts and request.get("cwd"):
            options["cwd"] = request["cwd"]
        result = self._front.run(argv, **options)
        return {"returncode": result.returncode, "stdout": _b64(result.stdout),
                "stderr": _b64(result.stderr)}

    def close(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
        shutil.rmtree(self.folder, ignore_errors=True)


def _accepted_keywords(run: Callable[..., Any]) -> set[str]:
    """Which of ``stdin``/``cwd`` the fake's ``run`` takes (older fakes took neither)."""
    try:
        return set(inspect.signature(run).parameters)
    except (TypeError, ValueError):
        return set()


def call(path: str, argv: list[str], cwd: str, stdin: bytes) -> tuple[int, bytes, bytes]:
    """The shim's side: one command through the relay at ``path``. Raises OSError when no
    relay listens there (its test process has ended)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.connect(path)
        sock.sendall(json.dumps({"argv": argv, "cwd": cwd, "stdin": _b64(stdin),
                                 "pid": os.getpid()}).encode())
        sock.shutdown(socket.SHUT_WR)
        answer = json.loads(_read_all(sock))
    return (int(answer["returncode"]), base64.b64decode(answer["stdout"]),
            base64.b64decode(answer["stderr"]))
