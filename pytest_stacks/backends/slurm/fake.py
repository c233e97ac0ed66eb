"""An in-process Slurm double, reached through the same transport the real driver uses.

It answers the commands the driver sends (sbatch, squeue --json, scontrol show job, sacct -c,
scancel, ls, rm) in the formats of the version it models, and runs each job script for real
with bash in a private directory, so exit codes, input and output bytes are real. It is as
strict as the real thing where that matters to clients: finished jobs leave the queue after
``min_job_age`` and are then only visible in the completion log; 20.11 has no ``--json``;
22.05 reports raw wait statuses; unknown job ids are errors, not empty answers.
"""

from __future__ import annotations

import itertools
import os
import shutil
import signal
import subprocess
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_stacks import places
from pytest_stacks.backends.slurm.fake_job import Job as _Job
from pytest_stacks.backends.slurm.fake_queries import SlurmQueries
from pytest_stacks.backends.slurm.fake_sbatch import SbatchRefused, expand, read_submission
from pytest_stacks.transports import CommandResult
from pytest_stacks.versions import at_least


class FakeSlurmHost(SlurmQueries):
    """A scheduler host: a private filesystem root plus a modelled slurmctld."""

    def __init__(self, version: str = "24.11.5", *, min_job_age: float = 1.0,
                 slots: int = 4, accounting: bool = False) -> None:
        self.version = version
        self.accounting = accounting
        self.min_job_age = min_job_age
        self.slots = slots
        self.root = places.scratch_folder("fake-slurm")
        (self.root / "work/jobs").mkdir(parents=True)
        self._ids = itertools.count(1)
        self._jobs: dict[int, _Job] = {}
        self._jobcomp: list[str] = []
        self._accounted: dict[int, _Job] = {}  # slurmdbd's record (kept past MinJobAge)
        self._ctld_log: list[str] = []  # what the modelled slurmctld itself says
        self._lock = threading.RLock()
        self._stdin, self._cwd = "", "/"  # the command being answered (run())
        self.log: list[str] = []  # the commands received (for the double's own tests)
        self._shared: list[Path] = []  # host folders seen at the same path (share())
        major, minor = (int(p) for p in version.split(".")[:2])
        self._series = (major, minor)

    # ------------------------------------------------------------ filesystem

    @property
    def commands(self) -> FakeSlurmHost:
        """The command line (``run``/``share``): the host itself, named as fake-htcondor's
        ``commands`` is, so a shim reaches either fake the same way."""
        return self

    def share(self, host_dir: Path) -> None:
        """Make ``host_dir`` (an absolute host path: the run's shared folder) the same path on
        the fake's side: scripts, submit files and inputs named there are read from there, and
        what a job writes there (its ``-o``/``-e`` files, its working directory) lands there
        on the host, as on a login node that mounts the folder. Every other path keeps the
        fake's private root."""
        folder = Path(host_dir)
        if not folder.is_absolute():
            raise ValueError(f"share({host_dir!s}): the shared folder must be an absolute "
                             "host path")
        with self._lock:
            self._shared.append(Path(os.path.normpath(folder)))

    def _path(self, path: str, cwd: str | None = None) -> Path:
        """The host path of ``path`` as the fake's side names it (relative: against ``cwd``)."""
        raw = path if path.startswith("/") else f"{(cwd or '/').rstrip('/')}/{path}"
        normal = Path(os.path.normpath(raw))
        if any(normal.is_relative_to(folder) for folder in self._shared):
            return normal
        resolved = (self.root / str(normal).lstrip("/")).resolve()
        if not resolved.is_relative_to(self.root.resolve()):
            raise PermissionError(f"path escapes the fake host: {path}")
        return resolved

    def put_files(self, directory: str, files: Mapping[str, bytes], *, user: str,
                  mode: int = 0o644) -> None:
        target = self._path(directory)
        target.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (target / name).write_bytes(data)
            (target / name).chmod(mode)

    def get_files(self, directory: str, names: Sequence[str]) -> dict[str, bytes]:
        base = self._path(directory)
        return {n: (base / n).read_bytes() for n in names if (base / n).is_file()}

    # ------------------------------------------------------------ commands

    def run(self, argv: Sequence[str], *, user: str | None = None, timeout: float = 60.0,
            stdin: str = "", cwd: str | None = None) -> CommandResult:
        """Run a command as the login host would: ``stdin`` is the command's standard input
        (sbatch reads its script there when no file is named), ``cwd`` its working directory
        on the fake's side (relative paths and sbatch's defaults resolve against it; None:
        ``/``)."""
        argv = tuple(argv)
        self.log.append(" ".join(argv))
        with self._lock:
            self._tick()
            self._stdin, self._cwd = stdin, cwd or "/"
            handler = {
                "sinfo": self._sinfo, "sbatch": self._sbatch, "squeue": self._squeue,
                "scontrol": self._scontrol, "sacct": self._sacct, "scancel": self._scancel,
                "ls": self._ls, "rm": self._rm, "test": self._test,
            }.get(argv[0])
            if handler is None:
                return CommandResult(argv, 127, "", f"{argv[0]}: command not found\n")
            return handler(argv, user or "root")

    def _ok(self, argv: tuple[str, ...], out: str = "") -> CommandResult:
        return CommandResult(argv, 0, out, "")

    def _err(self, argv: tuple[str, ...], err: str, code: int = 1) -> CommandResult:
        return CommandResult(argv, code, "", err)

    def _sinfo(self, argv: tuple[str, ...], user: str) -> CommandResult:
        if "-V" in argv:
            return self._ok(argv, f"slurm-wlm {self.version}\n")
        return self._ok(argv, "idle\n")

    def _sbatch(self, argv: tuple[str, ...], user: str) -> CommandResult:
        def read(name: str) -> str | None:
            try:
                return self._path(name, self._cwd).read_text()
            except (OSError, UnicodeDecodeError, PermissionError):
                return None
        try:
            sub = read_submission(list(argv[1:]), stdin=self._stdin, cwd=self._cwd,
                                  read_file=read, option_error_code=255)
        except SbatchRefused as exc:
            return self._err(argv, str(exc), exc.code)
        if sub.container and not at_least(self.version, (21, 8)):  # seen on 20.11.9
            return self._err(argv, f"sbatch: unrecognized option '--container="
                                   f"{sub.container}'\nTry \"sbatch --help\" for more "
                                   "information\n")
        if sub.partition != "debug":
            return self._err(argv, f"sbatch: error: invalid partition specified: "
                                   f"{sub.partition}\nsbatch: error: Batch job submission "
                                   "failed: Invalid partition name specified\n")
        if not self._path(sub.workdir).is_dir():
            return self._err(argv, f"sbatch: error: chdir({sub.workdir}): No such file or "
                                   "directory\n")
        job_id = next(self._ids)
        spool = self.root / "spool" / f"job{job_id:05d}"
        spool.mkdir(parents=True)
        (spool / "slurm_script").write_text(sub.script)
        (spool / "slurm_script").chmod(0o755)
        out = expand(sub.output, job_id=job_id, name=sub.name, user=user)
        err = expand(sub.error, job_id=job_id, name=sub.name, user=user)
        job = _Job(job_id, sub.name, sub.workdir, [str(spool / "slurm_script"),
                                                   *sub.script_args], out, err, user,
                   submit_dir=sub.submit_dir, partition=sub.partition,
                   command=sub.command)
        if sub.hold:
            job.reason = "JobHeldUser"
        self._jobs[job_id] = job
        if self.accounting:
            self._accounted[job_id] = job
        self._ctld(f"_slurm_rpc_submit_batch_job: JobId={job_id} InitPrio=1 usec=12")
        self._tick()
        return self._ok(argv, f"{job_id}\n" if sub.parsable else
                        f"Submitted batch job {job_id}\n")

    # ------------------------------------------------------------ the controller's clock

    def _tick(self) -> None:
        running = 0
        for job in self._jobs.values():
            if job.state == "RUNNING" and job.process is not None:
                code = job.process.poll()
                if code is None:
                    running += 1
                    continue
                job.ended = time.monotonic()
                if code < 0:
                    job.exit_code, job.signal = 0, -code
                else:
                    job.exit_code, job.signal = code, 0
                if job.state == "RUNNING":
                    job.state = "COMPLETED" if code == 0 else "FAILED"
                    job.reason = "None" if code == 0 else "NonZeroExitCode"
                self._complete(job)
        for job in self._jobs.values():
            if job.state == "PENDING" and job.reason != "JobHeldUser" and running < self.slots:
                self._start(job)
                running += 1
        now = time.monotonic()
        for job_id in [j.job_id for j in self._jobs.values()
                       if j.ended is not None and now - j.ended > self.min_job_age]:
            del self._jobs[job_id]  # aged out of slurmctld's memory (MinJobAge)

    def _start(self, job: _Job) -> None:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(self.root),
               "SLURM_JOB_ID": str(job.job_id), "SLURM_JOB_NAME": job.name,
               "SLURM_SUBMIT_DIR": job.submit_dir}
        stdout = open(self._path(job.stdout_path), "wb")  # noqa: SIM115 (handed to the child)
        stderr = stdout if job.stderr_path == job.stdout_path else open(  # noqa: SIM115
            self._path(job.stderr_path), "wb")
        try:
            job.process = subprocess.Popen(
                job.argv, cwd=self._path(job.workdir), env=env, stdout=stdout,
                stderr=stderr, stdin=subprocess.DEVNULL, start_new_session=True)
        finally:
            stdout.close()
            if stderr is not stdout:
                stderr.close()
        job.state, job.reason = "RUNNING", "None"
        job.started = time.monotonic()
        self._ctld(f"sched: Allocate JobId={job.job_id} NodeList=localhost #CPUs=1 "
                   f"Partition=debug")

    def _ctld(self, text: str) -> None:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S") + f".{int(time.time() * 1000) % 1000:03d}"
        self._ctld_log.append(f"[{stamp}] {text}")

    def _complete(self, job: _Job) -> None:
        job.end_stamp = time.strftime("%Y-%m-%dT%H:%M:%S")
        self._ctld(f"_job_complete: JobId={job.job_id} WEXITSTATUS {job.exit_code}")
        self._ctld(f"_job_complete: JobId={job.job_id} done")
        # Seen on 20.11 (tests/parity): the completion log records a cancelled job's exit
        # code as 0:0, while scontrol showed 0:15 (the signal is lost once it aged out).
        signal_seen = 0 if job.state == "CANCELLED" and self._series < (21, 0) else job.signal
        self._jobcomp.append(
            f"JobId={job.job_id} UserId={job.user}(1000) GroupId={job.user}(1000) "
            f"Name={job.name} JobState={job.state} Partition=debug TimeLimit=10 "
            f"NodeList=localhost ExitCode={job.exit_code}:{signal_seen}")

    # ------------------------------------------------------------ views

    def _test(self, argv: tuple[str, ...], user: str) -> CommandResult:
        """``test -e PATH`` in the fake's file tree (no ``/etc/slurm/oci.conf``: no containers,
        as on every stack of ours)."""
        return self._ok(argv) if self._path(argv[-1]).exists() else self._err(argv, "")

    def _ls(self, argv: tuple[str, ...], user: str) -> CommandResult:
        path = self._path(argv[-1])
        if not path.is_dir():
            return self._err(argv, f"ls: cannot access '{argv[-1]}': No such file or directory\n",
                             2)
        return self._ok(argv, "".join(f"{p.name}\n" for p in sorted(path.iterdir())))

    def _rm(self, argv: tuple[str, ...], user: str) -> CommandResult:
        shutil.rmtree(self._path(argv[-1]), ignore_errors=True)
        return self._ok(argv)

    # ------------------------------------------------------------ lifecycle

    def daemon_log(self) -> str:
        """What the daemons wrote (slurmctld's log, the completion log), never the commands a
        client sent: a job id in the logs must be the daemon's own record of the job."""
        with self._lock:
            return "\n".join(["== /var/log/slurm/slurmctld.log", *self._ctld_log[-200:],
                              "== /var/log/slurm/jobcomp.log", *self._jobcomp[-200:]])

    def close(self) -> None:
        with self._lock:
            for job in self._jobs.values():
                if job.process is not None and job.process.poll() is None:
                    os.killpg(job.process.pid, signal.SIGKILL)
                    job.process.wait()
        shutil.rmtree(self.root, ignore_errors=True)
