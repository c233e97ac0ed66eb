"""The two places a corpus of command lines runs (:class:`~.corpus.LoginNode`): a real stack's
login container (over its transport, as the stack's submit user), and a fake's own command
line (``double.commands``) with the corpus's working folder shared, so both are handed the
same files at the same path and the same argv.
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_stacks.errors import BackendCallError
from pytest_stacks.transports import CommandResult, Transport

#: Runs ``"$@"`` in the folder given first, with stdin from the file given second (or none).
_IN_FOLDER = 'cd "$1" || exit 125; in=$2; shift 2; exec "$@" < "${in:-/dev/null}"'
#: The file a command's stdin is handed in, beside the corpus's own files.
STDIN_FILE = ".corpus-stdin"


class TransportLoginNode:
    """A real login node: every command through ``transport`` as ``user``."""

    def __init__(self, transport: Transport, user: str) -> None:
        self._transport = transport
        self._user = user

    def run(self, argv: list[str], *, stdin: str, cwd: str) -> CommandResult:
        given = ""
        if stdin:
            self._transport.put_files(cwd, {STDIN_FILE: stdin.encode("utf-8")},
                                      user=self._user)
            given = f"{cwd}/{STDIN_FILE}"
        result = self._transport.run(["sh", "-c", _IN_FOLDER, "sh", cwd, given, *argv],
                                     user=self._user)
        if result.returncode == 125:
            raise BackendCallError(f"cannot enter {cwd} on the login node as {self._user}: "
                                   f"{result.stderr.strip()[:300]} ({shlex.join(argv)})")
        return CommandResult(tuple(argv), result.returncode, result.stdout, result.stderr)

    def put_files(self, directory: str, files: Mapping[str, bytes]) -> None:
        self._transport.put_files(directory, files, user=self._user, mode=0o755)

    def read_file(self, path: str) -> bytes | None:
        folder, _, name = path.rpartition("/")
        return self._transport.get_files(folder or "/", [name]).get(name)

    def remove(self, directory: str) -> None:
        self._transport.run(["rm", "-rf", "--", directory], user=self._user)


class FakeLoginNode:
    """A fake's command line (``run(argv, user=, stdin=, cwd=)``, ``share(host_dir)``) with
    ``folder`` (a host path) shared: the corpus's files are written there directly."""

    def __init__(self, commands: Any, user: str, folder: Path) -> None:
        self._commands = commands
        self._user = user
        folder.mkdir(parents=True, exist_ok=True)
        commands.share(folder)

    def run(self, argv: list[str], *, stdin: str, cwd: str) -> CommandResult:
        result: CommandResult = self._commands.run(argv, user=self._user, stdin=stdin, cwd=cwd)
        return result

    def put_files(self, directory: str, files: Mapping[str, bytes]) -> None:
        target = Path(directory)
        target.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (target / name).write_bytes(data)
            os.chmod(target / name, 0o755)

    def read_file(self, path: str) -> bytes | None:
        try:
            return Path(path).read_bytes()
        except OSError:
            return None
