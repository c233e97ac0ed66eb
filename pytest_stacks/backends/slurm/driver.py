"""The reference Slurm driver: the job contract over a transport, with Slurm's own commands.

Each job gets a working directory under ``job_root`` (inputs staged there, ``sbatch --chdir``),
so outputs are plain files next to the inputs and purge is removing that directory. Status reads
the live queue first (``squeue --json`` where the version has it, ``scontrol show job -o`` where
not) and falls back to the completion log (``sacct -c``) once a job has aged out of the
controller's memory after ``MinJobAge``; a job neither view knows is UNKNOWN.

Where the login node and the compute nodes share no file system (``shared_fs=False``) the job
carries its inputs in its batch script and nothing it writes comes back (:mod:`.unshared`).
"""

from __future__ import annotations

import shlex
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_stacks.backends import remote_files
from pytest_stacks.backends.slurm import containers, parse, staging, unshared
from pytest_stacks.contract import (
    ActionResult,
    ChannelTap,
    JobHandle,
    JobSpec,
    JobState,
    JobStatus,
    OutputResult,
    SubmitResult,
)
from pytest_stacks.errors import BackendCallError
from pytest_stacks.transports import CommandResult, Transport
from pytest_stacks.versions import at_least

SCRIPT_NAME = ".pytest-stacks-job.sh"
JSON_SINCE = (21, 8)  # `squeue --json` (data_parser) first shipped in 21.08
RUN_PREFIX = "pst-"


def run_comment(run_tag: str) -> str:
    """The comment every job of a tagged run carries (``squeue -o %k`` shows it)."""
    return f"pytest-stacks-run={run_tag}"


class SlurmClient:
    def __init__(self, transport: Transport, stack: str, *, user: str = "submitter",
                 job_root: str = "/work/jobs", completion_user: str = "slurm",
                 run_tag: str = "", bundles: Mapping[str, str] | None = None,
                 ask_controller: bool = False, shared_fs: bool = True) -> None:
        """``run_tag``: on a shared site, every job carries the run's id (its name's prefix
        and its comment) so the run's jobs can be found, and only they, at its end.
        ``bundles``: the OCI bundle the nodes keep for each image a job may ask for
        (:mod:`.containers`). ``ask_controller``: the daemon's version is slurmctld's own
        answer, apart from the client tools' (a site, where the two may differ).
        ``shared_fs``: whether the job's directory on the login node is the node's too
        (:mod:`.unshared` where it is not)."""
        self._transport = transport
        self._bundles = dict(bundles or {})
        self._run_tag = run_tag
        self._stack = stack
        self._user = user
        self._job_root = job_root.rstrip("/")
        self._completion_user = completion_user
        self._workdirs: dict[str, str] = {}
        self._staged: dict[str, frozenset[str]] = {}  # job -> names the node stages itself
        self._has_json: bool | None = None
        self._ask_controller = ask_controller
        self._versions: dict[str, str] | None = None
        self._oci: tuple[str, bool] | None = None  # (where oci.conf must be, whether it is)
        self._shared_fs = shared_fs

    # ------------------------------------------------------------ helpers

    @property
    def transport(self) -> Transport:
        """What this client sends Slurm's commands through (on fake-slurm, the in-process
        host itself: a user's own client can drive it the same way)."""
        return self._transport

    def _run(self, *argv: str, user: str | None = None, check: bool = True) -> CommandResult:
        result = self._transport.run(argv, user=user or self._user)
        if check and not result.ok:
            raise BackendCallError(
                f"{shlex.join(argv)} failed (exit {result.returncode}): "
                f"{(result.stderr or result.stdout).strip()[:500]}")
        return result

    def versions(self) -> dict[str, str]:
        """``sinfo -V`` is the client tools' own build and asks no daemon; slurmctld says its
        version in ``scontrol show config``. A stack of ours installs both from one package
        build, so there ``sinfo -V`` stands for the daemon (and the parity recordings hold
        that exchange); a site (``ask_controller``) reports the two apart."""
        if self._versions is None:
            client = parse.parse_version(self._run("sinfo", "-V").stdout)
            self._versions = {"daemon": client}
            if self._ask_controller:
                config = self._run("scontrol", "show", "config").stdout
                self._versions = {"daemon": parse.parse_config_version(config),
                                  "client": client}
        return dict(self._versions)

    def _json_supported(self) -> bool:
        """``squeue --json`` is the client's (its data_parser plugin writes the JSON)."""
        if self._has_json is None:
            versions = self.versions()
            self._has_json = self._json_capable(versions.get("client") or versions["daemon"])
        return self._has_json

    @staticmethod
    def _json_capable(version: str) -> bool:
        return at_least(version, JSON_SINCE)

    # ------------------------------------------------------------ submit

    def submit(self, specs: Sequence[JobSpec]) -> list[SubmitResult]:
        results: list[SubmitResult] = []
        for spec in specs:
            workdir = f"{self._job_root}/{uuid.uuid4().hex[:12]}"
            try:
                if not self._shared_fs and (refused := unshared.refusal(spec)):
                    raise ValueError(refused)
                container = self._container(spec)
                remote_files.check(spec)
                files, where = self._batch_files(spec, workdir)
                self._transport.put_files(workdir, files, user=self._user)
                argv = [
                    "sbatch", "--parsable", f"--chdir={where}",
                    f"--job-name={self._job_name(spec)}", *self._tagged(),
                    f"--output={where}/{_stem(where, workdir)}slurm-%j.out",
                    f"--error={where}/{_stem(where, workdir)}slurm-%j.err",
                    f"--cpus-per-task={spec.cpus}", f"--time={max(1, -(-spec.walltime_s // 60))}",
                    *_placement(spec), *_partition(spec), *container,
                    f"{workdir}/{SCRIPT_NAME}", *spec.args,
                ]
                result = self._run(*argv, check=False)
                if not result.ok:
                    results.append(SubmitResult(None, (result.stderr or result.stdout).strip()))
                    continue
                job_id = parse.parse_sbatch(result.stdout)
            except (BackendCallError, ValueError) as exc:
                results.append(SubmitResult(None, str(exc)))
                continue
            self._workdirs[job_id] = workdir
            self._staged[job_id] = frozenset({*spec.remote_inputs, *spec.remote_outputs})
            results.append(SubmitResult(JobHandle(self._stack, job_id)))
        return results

    def _batch_files(self, spec: JobSpec, workdir: str) -> tuple[dict[str, bytes], str]:
        """What is written on the login node, and the directory the job starts in on its
        node (and Slurm writes its stdout in): the job's own with a shared file system; else
        only the script goes there, and the job starts in the job root every node has and
        makes its directory itself."""
        exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in spec.env.items())
        if not self._shared_fs:
            script = unshared.script(spec, workdir, exports)
            return {SCRIPT_NAME: script.encode()}, self._job_root
        return {**spec.inputs, SCRIPT_NAME: _wrap_script(spec, workdir).encode()}, workdir

    def _container(self, spec: JobSpec) -> list[str]:
        """sbatch's container option, or ValueError with why Slurm cannot run it here
        (:mod:`.containers`); before 21.08 sbatch itself answers the option."""
        if not spec.container:
            return []
        version = self.versions()["daemon"]
        if not at_least(version, containers.OCI_SINCE):
            return [f"--container={spec.container}"]
        if self._oci is None:  # asked once per client: a cluster's config does not move
            conf = containers.oci_conf_path(self._run("scontrol", "show", "config").stdout)
            self._oci = (conf, self._transport.run(["test", "-e", conf], user=self._user).ok)
        return containers.container_option(spec.container, version, *self._oci,
                                           bundles=self._bundles)

    def _job_name(self, spec: JobSpec) -> str:
        return f"{RUN_PREFIX}{self._run_tag[-8:]}-{spec.name}" if self._run_tag else spec.name

    def _tagged(self) -> list[str]:
        return [f"--comment={run_comment(self._run_tag)}"] if self._run_tag else []

    # ------------------------------------------------------------ status

    def _queue_view(self) -> dict[str, parse.SlurmJob]:
        if self._json_supported():
            return parse.parse_squeue_json(self._run("squeue", "--json", "-t", "all").stdout)
        result = self._run("scontrol", "show", "job", "-o", check=False)
        if not result.ok and "No jobs in the system" not in result.stdout + result.stderr:
            raise BackendCallError(f"scontrol show job failed: {result.stderr.strip()}")
        return parse.parse_scontrol_jobs(result.stdout)

    def in_live_queue(self, handles: Sequence[JobHandle]) -> list[bool]:
        """Whether slurmctld still holds each job (not yet aged out by ``MinJobAge``)."""
        live = self._queue_view()
        return [handle.job_id in live for handle in handles]

    def _completion_view(self, job_ids: Sequence[str]) -> dict[str, parse.SlurmJob]:
        # As SlurmUser: sacct's jobcomp/filetxt reader opens the log read-write, and slurmctld
        # keeps it 0644, so the submit user gets "Permission denied" (seen on all versions).
        result = self._run("sacct", "-c", "-P", "-n", "--format=JobID,State,ExitCode",
                           "-j", ",".join(job_ids), user=self._completion_user, check=False)
        if not result.ok:
            raise BackendCallError(
                f"the completion log cannot be read (sacct -c, exit {result.returncode}): "
                f"{(result.stderr or result.stdout).strip()[:300]}")
        jobs = parse.parse_sacct_c(result.stdout)
        return {k: v for k, v in jobs.items() if k in job_ids}

    def completion_log(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        """Final states as the completion log (``sacct -c``) records them.

        This is what status falls back to once a job has aged out of slurmctld's memory;
        exposed so tests can prove that path on a real daemon without waiting ``MinJobAge``.
        """
        found = self._completion_view([h.job_id for h in handles if h.job_id.isdigit()])
        return [self._to_status(h, found.get(h.job_id)) for h in handles]

    def _to_status(self, handle: JobHandle, job: parse.SlurmJob | None) -> JobStatus:
        return parse.job_status(handle, job, "not known to Slurm")

    def _lookup(self, job_ids: Sequence[str]) -> dict[str, parse.SlurmJob]:
        found = {k: v for k, v in self._queue_view().items() if k in job_ids}
        missing = [j for j in job_ids if j not in found]
        if missing:
            found.update(self._completion_view(missing))
        return found

    def status(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        ids = [h.job_id for h in handles if h.job_id.isdigit()]
        found = self._lookup(ids) if ids else {}
        return [self._to_status(handle, found.get(handle.job_id)) for handle in handles]

    # ------------------------------------------------------------ outputs

    def _workdir(self, handle: JobHandle) -> str | None:
        return self._workdirs.get(handle.job_id)

    def fetch_outputs(self, handles: Sequence[JobHandle], dest: Path) -> list[OutputResult]:
        statuses = {s.handle: s for s in self.status(handles)}
        results = []
        for handle in handles:
            status = statuses[handle]
            workdir = self._workdir(handle)
            if workdir is None or status.state is JobState.UNKNOWN:
                results.append(OutputResult(handle, error="unknown job: nothing to fetch"))
                continue
            if not status.state.is_terminal:
                results.append(OutputResult(handle, error=f"job is {status.state}, not finished"))
                continue
            if not self._shared_fs:  # nothing was asked for (refused at submit), none comes
                results.append(OutputResult(handle, files={}))
                continue
            listing = self._run("ls", "-1A", workdir, check=False)
            if not listing.ok:
                results.append(OutputResult(handle, error="outputs are gone (purged?)"))
                continue
            staged = self._staged.get(handle.job_id, frozenset())  # never through the client
            names = [n for n in listing.stdout.split("\n")
                     if n and n != SCRIPT_NAME and n not in staged]
            contents = self._transport.get_files(workdir, names)
            target = dest / handle.job_id
            target.mkdir(parents=True, exist_ok=True)
            files = {}
            for name, data in contents.items():
                (target / name).write_bytes(data)
                files[name] = target / name
            results.append(OutputResult(handle, files=files))
        return results

    # ------------------------------------------------------------ kill and purge

    def kill(self, handles: Sequence[JobHandle]) -> list[ActionResult]:
        results = []
        for handle in handles:
            if not handle.job_id.isdigit():
                results.append(ActionResult(handle, "not a Slurm job id"))
                continue
            result = self._run("scancel", handle.job_id, check=False)
            error = "" if result.ok and not result.stderr.strip() else (
                result.stderr or result.stdout).strip() or f"scancel exit {result.returncode}"
            results.append(ActionResult(handle, error))
        return results

    def purge(self, handles: Sequence[JobHandle]) -> list[ActionResult]:
        statuses = {s.handle: s for s in self.status(handles)}
        results = []
        for handle in handles:
            status = statuses[handle]
            workdir = self._workdir(handle)
            if workdir is None:
                results.append(ActionResult(handle, "unknown job: nothing to purge"))
            elif not self._shared_fs:
                results.append(ActionResult(handle, (
                    f"not purged: the job's directory is on the disk of the node it ran on, "
                    f"out of the login node's reach ({unshared.WHY})")))
            elif not status.state.is_terminal:
                results.append(ActionResult(handle, f"job is {status.state}; kill it first"))
            else:
                removed = self._run("rm", "-rf", "--", workdir, check=False)
                results.append(ActionResult(handle, "" if removed.ok else removed.stderr.strip()))
                if removed.ok:
                    self._workdirs.pop(handle.job_id, None)
        return results

    # ------------------------------------------------------------ diagnostics

    def describe_jobs(self, handles: Sequence[JobHandle]) -> str:
        parts = []
        for handle in handles:
            shown = self._run("scontrol", "show", "job", handle.job_id, check=False)
            parts.append(f"$ scontrol show job {handle.job_id}\n{shown.stdout}{shown.stderr}")
            workdir = self._workdir(handle)
            if workdir and not self._shared_fs:
                parts.append(f"(its stdout and stderr stay on its node: {unshared.WHY})")
            elif workdir:
                outs = self._transport.get_files(
                    workdir, [f"slurm-{handle.job_id}.out", f"slurm-{handle.job_id}.err"])
                for name, data in outs.items():
                    parts.append(f"--- {name}\n{data.decode('utf-8', 'replace')[-4000:]}")
        return "\n".join(parts)

    def close(self) -> None:
        """Nothing to release: each call is a fresh exec."""

    def tapped(self, tap: ChannelTap) -> SlurmClient:
        """The same client over ``tap(transport)`` (its jobs are its own: nothing is shared)."""
        return SlurmClient(tap(self._transport), self._stack, user=self._user,
                           job_root=self._job_root, completion_user=self._completion_user,
                           run_tag=self._run_tag, bundles=self._bundles,
                           ask_controller=self._ask_controller, shared_fs=self._shared_fs)


def _stem(where: str, workdir: str) -> str:
    """Slurm's output files in the job's own directory as they are; in the job root (no
    shared file system) prefixed with the job's directory name, one job's apart from
    another's."""
    return "" if where == workdir else f"{workdir.rsplit('/', 1)[-1]}."


def _placement(spec: JobSpec) -> list[str]:
    """``backend_options["workers"]`` (the contract's MPI shape): one task per node on that
    many nodes, so an MPI program's ranks land on distinct hosts."""
    workers = spec.backend_options.get("workers")
    if workers is None:
        return []
    return [f"--nodes={int(workers)}", "--ntasks-per-node=1"]


def _partition(spec: JobSpec) -> list[str]:
    """``backend_options["partition"]`` (a partition by name) and ``["memory_mb"]`` (the job's
    memory a node, ``--mem``): what a site's partitions limit, so a test can put a job in one
    and over its limit. Anything else is ValueError naming the key (the job is refused)."""
    options = spec.backend_options
    argv = []
    partition = options.get("partition")
    if partition is not None:
        if not isinstance(partition, str) or not partition.replace("_", "").replace(
                "-", "").isalnum():
            raise ValueError(f"backend_options['partition'] must be a partition name "
                             f"(letters, digits, - and _), not {partition!r}")
        argv.append(f"--partition={partition}")
    memory = options.get("memory_mb")
    if memory is not None:
        if isinstance(memory, bool) or not isinstance(memory, int) or memory < 1:
            raise ValueError(f"backend_options['memory_mb'] must be a whole number of MB "
                             f"above 0, not {memory!r}")
        argv.append(f"--mem={memory}M")
    return argv


def _wrap_script(spec: JobSpec, workdir: str) -> str:
    """The batch script: the job's environment exported, then the user's script as given.

    Exporting here rather than with ``--export=K=V`` keeps values with commas intact. A job
    in a container runs in the image's shell, where the node's curl is not: it stages
    nothing itself.
    """
    exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in spec.env.items())
    if not spec.container:
        return staging.staged(spec, exports)
    if spec.remote_inputs or spec.remote_outputs:
        raise ValueError(
            f"refused at submit: a job in container {spec.container!r} cannot stage remote "
            "files on Slurm (the job's own wrapper stages them with the node's curl, which "
            "the image does not have): ask for one or the other")
    return f"{containers.preamble(workdir)}{exports}{spec.body}\n"
