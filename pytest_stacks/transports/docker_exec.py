"""The ``local`` transport for compose stacks: commands run inside the scheduler's container.

Uses the docker SDK (exec, put_archive, get_archive) rather than shelling out to ``docker
exec``/``docker cp``: one HTTP call per operation, no quoting, and tar headers carry ownership so
staged files belong to the submit user without a second ``chown``.
"""

from __future__ import annotations

import io
import tarfile
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any

from docker.errors import NotFound

from pytest_stacks.errors import BackendCallError
from pytest_stacks.transports import CommandResult

# One exec at a time per process. Stacks come up in threads at once, and concurrent execs with
# demultiplexed output came back garbled here ("34 is not a valid stream", empty `squeue
# --json`), even with one SDK client per thread; an exec takes milliseconds, so serialising
# them costs nothing that shows while bring-ups still overlap everything else.
_EXEC_ONE_AT_A_TIME = threading.Lock()


class DockerExecTransport:
    def __init__(self, container: Any, uids: Mapping[str, int] | None = None) -> None:
        self._container = container
        self._uids = dict(uids or {})

    def run(self, argv: Sequence[str], *, user: str | None = None,
            timeout: float = 60.0) -> CommandResult:
        command = list(argv)
        if timeout:
            command = ["timeout", "--kill-after=5", str(int(timeout)), *command]
        try:
            with _EXEC_ONE_AT_A_TIME:
                result = self._container.exec_run(command, user=user or "", demux=True)
        except Exception as exc:  # docker.errors.APIError and connection errors alike
            raise BackendCallError(f"cannot run {argv[0]!r} in the stack: {exc}") from exc
        stdout, stderr = result.output if result.output else (b"", b"")
        return CommandResult(
            argv=tuple(argv),
            returncode=int(result.exit_code if result.exit_code is not None else -1),
            stdout=(stdout or b"").decode("utf-8", "replace"),
            stderr=(stderr or b"").decode("utf-8", "replace"),
        )

    def _uid(self, user: str) -> int:
        if user not in self._uids:
            found = self.run(["id", "-u", user])
            if not found.ok:
                raise BackendCallError(f"user {user!r} does not exist in the stack")
            self._uids[user] = int(found.stdout.strip())
        return self._uids[user]

    def put_files(self, directory: str, files: Mapping[str, bytes], *, user: str,
                  mode: int = 0o644) -> None:
        uid = self._uid(user)
        buffer = io.BytesIO()
        now = time.time()
        parts = directory.strip("/").split("/")
        with tarfile.open(fileobj=buffer, mode="w") as tar:
            # Only the leaf directory is ours; parents already exist in the image.
            leaf = parts[-1]
            info = tarfile.TarInfo(leaf)
            info.type = tarfile.DIRTYPE
            info.mode = 0o755
            info.uid = info.gid = uid
            info.mtime = int(now)
            tar.addfile(info)
            for name, data in files.items():
                info = tarfile.TarInfo(f"{leaf}/{name}")
                info.size = len(data)
                info.mode = mode
                info.uid = info.gid = uid
                info.mtime = int(now)
                tar.addfile(info, io.BytesIO(data))
        parent = "/" + "/".join(parts[:-1])
        try:
            ok = self._container.put_archive(parent, buffer.getvalue())
        except Exception as exc:
            raise BackendCallError(f"cannot copy files into {directory}: {exc}") from exc
        if not ok:
            raise BackendCallError(f"cannot copy files into {directory}")

    def get_files(self, directory: str, names: Sequence[str]) -> dict[str, bytes]:
        out: dict[str, bytes] = {}
        for name in names:
            try:
                stream, _ = self._container.get_archive(f"{directory.rstrip('/')}/{name}")
            except NotFound:
                continue  # the job did not write it: absent from the result, as promised
            except Exception as exc:
                raise BackendCallError(f"cannot copy {name} out of {directory}: {exc}") from exc
            with tarfile.open(fileobj=io.BytesIO(b"".join(stream)), mode="r") as tar:
                member = tar.next()
                if member is None or not member.isfile():
                    continue
                handle = tar.extractfile(member)
                if handle is not None:
                    out[name] = handle.read()
        return out
