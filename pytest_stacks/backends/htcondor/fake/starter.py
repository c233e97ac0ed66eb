"""The execute side of the fake pool: a job's scratch directory, its process, and the output
transfer back to the spool.

It runs jobs for real (so exit codes and bytes are real) and knows nothing of the queue: the
schedd decides what a start, an exit or a missing output means for the job's state.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

#: The executable's name inside the sandbox, as the starter names it.
EXECUTABLE_NAME = "condor_exec.exe"
STDOUT_NAME = "_condor_stdout"
STDERR_NAME = "_condor_stderr"


class ExecFailed(Exception):
    """The job's executable could not be started (the starter puts the job on hold)."""

    def __init__(self, strerror: str | None) -> None:
        super().__init__(strerror)
        self.strerror = strerror


def make_sandbox(spool: Path, scratch: Path) -> None:
    """The job's scratch directory, holding what ``spool`` uploaded."""
    scratch.mkdir()
    for item in spool.iterdir():
        shutil.copy2(item, scratch / item.name)


def job_environment(env: Mapping[str, str], scratch: Path, proc: int,
                    cpus: Any) -> dict[str, str]:
    """Only the submitted ``environment`` plus the starter's own variables, as for real."""
    out: dict[str, str] = dict(env)
    out.update({
        "_CONDOR_SCRATCH_DIR": str(scratch), "_CONDOR_SLOT": "slot1",
        "TMPDIR": str(scratch), "TMP": str(scratch), "TEMP": str(scratch),
        "BATCH_SYSTEM": "HTCondor", "CONDOR_PROCID": str(proc),
        "_CONDOR_JOB_IWD": str(scratch), "OMP_NUM_THREADS": str(cpus),
    })
    return out


def launch(argv: Sequence[str], scratch: Path, env: Mapping[str, str],
           ) -> subprocess.Popen[bytes]:
    """Start the job in its own session, so a kill reaches everything it started."""
    with open(scratch / STDOUT_NAME, "wb") as out, open(scratch / STDERR_NAME, "wb") as err:
        try:
            return subprocess.Popen(
                argv, cwd=scratch, env=env, stdout=out, stderr=err,
                stdin=subprocess.DEVNULL, start_new_session=True)
        except OSError as exc:
            raise ExecFailed(exc.strerror) from exc


def kill(process: subprocess.Popen[bytes] | None) -> None:
    if process is not None and process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def missing_outputs(ad: Mapping[str, Any], scratch: Path) -> list[str]:
    """Declared outputs the job did not write (the job goes on hold for the first)."""
    if "TransferOutput" not in ad:
        return []
    return [n for n in _declared(ad) if not (scratch / n).exists()]


def transfer_outputs(ad: Mapping[str, Any], scratch: Path, spool: Path,
                     input_names: Sequence[str]) -> list[str]:
    """Copy the outputs and stdout/stderr back to the spool, as the starter does ON_EXIT;
    returns the outputs' names."""
    if "TransferOutput" in ad:
        names = _declared(ad)
    else:
        # Without transfer_output_files: every new or modified file in the scratch dir.
        names = [p.name for p in sorted(scratch.iterdir())
                 if p.is_file() and p.name not in (EXECUTABLE_NAME, STDOUT_NAME, STDERR_NAME)
                 and not (p.name in input_names and _same_file(p, spool / p.name))]
    for name in [*names, STDOUT_NAME, STDERR_NAME]:
        source = scratch / name
        if source.is_file():
            shutil.copy2(source, spool / Path(name).name)
    return names


def _declared(ad: Mapping[str, Any]) -> list[str]:
    return [s.strip() for s in str(ad.get("TransferOutput", "")).split(",") if s.strip()]


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.stat().st_mtime == b.stat().st_mtime and a.read_bytes() == b.read_bytes()
    except OSError:
        return False
