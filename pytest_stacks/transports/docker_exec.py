"""The ``local`` transport for compose stacks: commands run inside the scheduler's container.

Commands run through the ``docker exec`` command line; files move with the docker SDK
(put_archive, get_archive), whose tar headers carry ownership so staged files belong to the
submit user without a second ``chown``.

Why not the SDK's ``exec_run(demux=True)``: it reads the multiplexed stdout/stderr frames from
the raw socket under the HTTP response, and any bytes the response's buffered reader had
already taken with the headers are lost to it; the next frame header is then read from the
middle of a payload ("34 is not a valid stream", or an exit 0 with no output at all), which
concurrent bring-ups made frequent here (docker/docker-py#3160). The CLI demultiplexes
correctly, costs one short process per command, and is cancelled with the run like every other
child process.
"""

from __future__ import annotations

import io
import shutil
import tarfile
import time
from collections.abc import Mapping, Sequence
from typing import Any

from docker.errors import NotFound

from pytest_stacks import cancellation
from pytest_stacks.errors import BackendCallError
from pytest_stacks.transports import CommandResult

#: What the docker CLI prints when the engine, not the command, failed (exit 1 or 125).
_ENGINE_ERRORS = ("Error response from daemon:", "Error: No such container",
                  "Cannot connect to the Docker daemon", "error during connect")


class DockerExecTransport:
    def __init__(self, container: Any, uids: Mapping[str, int] | None = None) -> None:
        self._container = container
        self._uids = dict(uids or {})

    def run(self, argv: Sequence[str], *, user: str | None = None,
            timeout: float = 60.0) -> CommandResult:
        command = list(argv)
        if timeout:
            command = ["timeout", "--kill-after=5", str(int(timeout)), *command]
        docker = shutil.which("docker")
        if docker is None:
            raise BackendCallError("the `docker` command is not installed; commands reach the "
                                   "stack's container through it")
        cli = [docker, "exec", *(["--user", user] if user else []), self._container.id,
               *command]
        # The command's own timeout ends it inside the container; this one only bounds a
        # docker CLI that hangs on the engine.
        done = cancellation.run(cli, timeout=(timeout or 600) + 30)
        if done.returncode != 0 and done.stderr.startswith(_ENGINE_ERRORS):
            raise BackendCallError(f"cannot run {argv[0]!r} in the stack: "
                                   f"{done.stderr.strip()[:500]}")
        return CommandResult(argv=tuple(argv), returncode=done.returncode, stdout=done.stdout,
                             stderr=done.stderr)

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
