"""The fake slurmctld's query tools: ``squeue``, ``scontrol show job``, ``sacct``, ``scancel``.

Each reads its command line with the real tool's grammar (:mod:`.fake_options`) and answers
from the modelled controller: what is in its memory (until ``MinJobAge``) and what its
completion log (jobcomp/filetxt) holds. A stack without accounting storage makes ``sacct``
without ``-c`` fail as theirs does ("Slurm accounting storage is disabled"); one that declares
``accounting`` (slurmdbd) answers it from every job ever submitted (:mod:`.fake_accounting`).
``-c`` reads the completion log, readable only by SlurmUser. A fake never answers what its
daemon would not.
"""

from __future__ import annotations

import os
import signal
import time

from pytest_stacks.backends.slurm import fake_accounting, fake_json
from pytest_stacks.backends.slurm import fake_formats as formats
from pytest_stacks.backends.slurm.fake_job import Job
from pytest_stacks.backends.slurm.fake_options import Option, OptionError, parse
from pytest_stacks.transports import CommandResult

_SQUEUE = [
    Option("noheader", "h"), Option("format", "o", True), Option("Format", "O", True),
    Option("states", "t", True), Option("user", "u", True), Option("jobs", "j", True),
    Option("name", "n", True), Option("partition", "p", True), Option("all", "a"),
    Option("long", "l"), Option("sort", "S", True), Option("array", "r"),
    Option("verbose", "v"), Option("version", "V"), Option("account", "A", True),
    Option("qos", "q", True), Option("nodelist", "w", True), Option("iterate", "i", True),
    Option("me"), Option("json", optional=True), Option("noconvert"), Option("help"),
    Option("usage"), Option("steps", "s", optional=True),
]
_SACCT = [
    Option("jobs", "j", True), Option("allocations", "X"), Option("noheader", "n"),
    Option("parsable2", "P"), Option("parsable", "p"), Option("format", "o", True),
    Option("starttime", "S", True), Option("endtime", "E", True), Option("user", "u", True),
    Option("completion", "c"), Option("brief", "b"), Option("long", "l"),
    Option("state", "s", True), Option("allusers", "a"), Option("allclusters", "L"),
    Option("name", argument=True), Option("duplicates", "D"), Option("verbose", "v"),
    Option("partition", "r", True), Option("json", optional=True), Option("noconvert"),
    Option("units", argument=True), Option("helpformat", "e"),
    Option("delimiter", argument=True), Option("clusters", "M", True),
]
_SCANCEL = [
    Option("name", "n", True), Option("user", "u", True), Option("signal", "s", True),
    Option("state", "t", True), Option("batch", "b"), Option("full", "f"),
    Option("quiet", "Q"), Option("verbose", "v"), Option("partition", "p", True),
    Option("me"), Option("interactive", "i"), Option("account", "A", True),
    Option("clusters", "M", True),
]
#: squeue's options whose value is the next word (short forms; long ones use "=" or are
#: named the same way).
_VALUE_WORDS = {f"-{o.short}" for o in _SQUEUE if o.short and o.argument} | {
    f"--{o.long}" for o in _SQUEUE if o.argument}
_ACTIVE = {"PENDING", "RUNNING", "SUSPENDED", "COMPLETING", "CONFIGURING"}


class SlurmQueries:
    """The query tools of :class:`~pytest_stacks.backends.slurm.fake.FakeSlurmHost`."""

    version: str
    _series: tuple[int, int]
    _jobs: dict[int, Job]
    _jobcomp: list[str]
    accounting: bool  # slurmdbd behind slurmctld: every job is recorded for good
    _accounted: dict[int, Job]

    def _ok(self, argv: tuple[str, ...], out: str = "") -> CommandResult:
        return CommandResult(argv, 0, out, "")

    def _err(self, argv: tuple[str, ...], err: str, code: int = 1) -> CommandResult:
        return CommandResult(argv, code, "", err)

    def _ctld(self, text: str) -> None:
        raise NotImplementedError

    def _complete(self, job: Job) -> None:
        raise NotImplementedError

    # ------------------------------------------------------------ views

    def _view(self, job: Job) -> formats.JobView:
        now = time.monotonic()
        start = job.started
        used = 0.0 if start is None else (job.ended or now) - start
        return formats.JobView(
            str(job.job_id), job.name, job.user, job.state, job.reason, job.partition,
            formats.elapsed(used), "localhost", job.workdir, job.command,
            f"{job.exit_code}:{job.signal}", "1000", job.end_stamp)

    def _json_state(self, job: Job) -> object:
        return [job.state] if self._series >= (23, 11) else job.state

    def _json_exit(self, job: Job) -> object:
        if self._series < (23, 2):
            return (job.exit_code << 8) | job.signal  # raw wait status
        # Seen on 24.11 (tests/parity): a running job's return code is already set (0); a
        # signalled one has no return code, and its signal carries its name.
        return {
            "status": ["SIGNALED" if job.signal else "SUCCESS" if job.exit_code == 0 else "ERROR"],
            "return_code": {"set": not job.signal, "infinite": False, "number": job.exit_code},
            "signal": {"id": {"set": bool(job.signal), "infinite": False, "number": job.signal},
                       "name": signal.Signals(job.signal).name[3:] if job.signal else ""},
        }

    # ------------------------------------------------------------ squeue

    def _squeue(self, argv: tuple[str, ...], user: str) -> CommandResult:
        try:
            cli = parse("squeue", argv[1:], _SQUEUE)
        except OptionError as exc:
            return self._err(argv, str(exc))
        if cli.has("json") and self._series < (21, 8):
            return self._err(argv, "squeue: unrecognized option '--json'\n"
                             "Try \"squeue --help\" for more information\n")
        if cli.has("version"):
            return self._ok(argv, f"slurm {self.version}\n")
        states = {s.upper() for v in cli.all("states") for s in v.split(",") if s}
        wanted = {int(i) for v in cli.all("jobs") for i in v.split(",") if i.isdigit()}
        bad = [i for v in cli.all("jobs") for i in v.split(",") if i and not i.isdigit()]
        if bad:
            return self._err(argv, f"squeue: error: Invalid job id: {bad[0]}\n")
        users = {u for v in cli.all("user") for u in v.split(",") if u}
        names = {n for v in cli.all("name") for n in v.split(",") if n}
        # Seen on 24.11 (tests/parity corpus): without -t only the active states are listed,
        # with -j too (a finished job asked for by id prints nothing, exit 0).
        every = "ALL" in states
        jobs = [j for j in self._jobs.values()
                if (not wanted or j.job_id in wanted)
                and (every or (j.state in states if states else j.state in _ACTIVE)
                     or (states and formats.COMPACT.get(j.state) in states))
                and (not users or j.user in users) and (not names or j.name in names)]
        if wanted and not any(j in self._jobs for j in wanted) and not (
                cli.has("json") and self._series < (23, 2)):
            return self._err(argv, "slurm_load_jobs error: Invalid job id specified\n")
        if cli.has("json"):
            return self._squeue_json(argv, user, cli.has("states"), jobs, wanted)
        try:
            fmt = (formats.squeue_format_option(cli.last("Format")) if cli.has("Format") else
                   cli.last("format") or (formats.LONG_FORMAT if cli.has("long") else
                                          formats.DEFAULT_FORMAT))
            lines = formats.squeue_lines([self._view(j) for j in jobs], fmt,
                                         header=not cli.has("noheader"))
        except formats.FormatError as exc:
            return self._err(argv, str(exc))
        return self._ok(argv, "".join(line + "\n" for line in lines))

    def _squeue_json(self, argv: tuple[str, ...], user: str, stated: bool, listed: list[Job],
                     wanted: set[int]) -> CommandResult:
        if self._series < (23, 2):
            # Seen in the captures: 22.05's --json ignores -t (every job in memory).
            listed = [j for j in self._jobs.values() if not wanted or j.job_id in wanted]
        jobs = [{"job_id": j.job_id, "name": j.name, "job_state": self._json_state(j),
                 "state_reason": j.reason, "exit_code": self._json_exit(j),
                 "current_working_directory": j.workdir}
                for j in listed]
        try:
            text = fake_json.render(self.version, argv, user, list(jobs), _VALUE_WORDS,
                                    accounting=self.accounting)
        except fake_json.UnmodelledRelease as exc:
            return self._err(argv, f"squeue: error: {exc}\n")
        return self._ok(argv, text)

    # ------------------------------------------------------------ scontrol

    def _scontrol_line(self, job: Job) -> str:
        return (f"JobId={job.job_id} JobName={job.name} UserId={job.user}(1000) "
                f"JobState={job.state} Reason={job.reason} Dependency=(null) "
                f"ExitCode={job.exit_code}:{job.signal} WorkDir={job.workdir} "
                f"StdOut={job.stdout_path} StdErr={job.stderr_path}")

    def _scontrol(self, argv: tuple[str, ...], user: str) -> CommandResult:
        one_line = any(a in ("-o", "--oneliner") for a in argv[1:])
        args = [a for a in argv[1:] if a not in ("-o", "--oneliner", "-d", "--details")]
        unknown = [a for a in args if a.startswith("-")]
        if unknown:
            return self._err(argv, f"scontrol: unrecognized option '{unknown[0]}'\n"
                             if unknown[0].startswith("--") else
                             f"scontrol: invalid option -- '{unknown[0][1:2]}'\n")
        if args[:2] in (["show", "job"], ["show", "jobs"], ["show", "jobid"]):
            if len(args) == 2:
                if not self._jobs:
                    return self._ok(argv, "No jobs in the system\n")
                return self._ok(argv, "".join(self._scontrol_text(j, one_line) + "\n"
                                              for j in self._jobs.values()))
            job = self._jobs.get(int(args[2])) if args[2].isdigit() else None
            if job is None:
                return self._err(argv, "slurm_load_jobs error: Invalid job id specified\n")
            return self._ok(argv, self._scontrol_text(job, one_line) + "\n")
        if args[:2] == ["show", "config"]:  # the one line the driver reads
            return self._ok(argv, f"SLURM_CONF              = /etc/slurm/slurm.conf\n"
                                  f"SLURM_VERSION           = {self.version}\n")
        if args[:1] == ["ping"]:
            return self._ok(argv, "Slurmctld(primary) at localhost is UP\n")
        if args[:1] in (["version"], ["-V"]):
            return self._ok(argv, f"slurm {self.version}\n")
        return self._err(argv, f"scontrol: error: Invalid command: {' '.join(args)}\n")

    def _scontrol_text(self, job: Job, one_line: bool) -> str:
        line = self._scontrol_line(job)
        return line if one_line else line.replace(" ", "\n   ")

    # ------------------------------------------------------------ sacct

    def _sacct(self, argv: tuple[str, ...], user: str) -> CommandResult:
        try:
            cli = parse("sacct", argv[1:], _SACCT)
        except OptionError as exc:
            return self._err(argv, str(exc))
        if not cli.has("completion"):
            if self.accounting:
                return fake_accounting.sacct(argv, cli, user, self._accounted.values())
            return self._err(argv, "Slurm accounting storage is disabled\n")
        if user not in ("root", "slurm"):
            # Seen on every version: sacct opens the jobcomp log read-write, and slurmctld
            # keeps it 0644 for SlurmUser.
            return self._err(argv, "sacct: fatal: open /var/log/slurm/jobcomp.log: "
                             "Permission denied\n")
        wanted: set[str] | None = None
        # Seen on 20.11 (tests/parity): `sacct -c` ignores -j and lists the whole completion
        # log; 24.11 honours it. The versions between are not recorded.
        if cli.has("jobs") and self._series >= (21, 0):
            wanted = {i for v in cli.all("jobs") for i in v.split(",")}
        views = []
        for entry in self._jobcomp:
            fields = formats.jobcomp_fields(entry)
            if wanted is not None and fields["JobId"] not in wanted:
                continue
            views.append(formats.JobView(
                fields["JobId"], fields["Name"], fields["UserId"].split("(")[0],
                fields["JobState"], "", fields["Partition"], "", fields["NodeList"],
                fields.get("WorkDir", ""), "", fields["ExitCode"], "1000",
                fields.get("EndTime", "Unknown")))
        parsable = cli.has("parsable2") or cli.has("parsable")
        try:
            lines = formats.sacct_lines(
                views, ",".join(cli.all("format")) or formats.SACCT_C_DEFAULT,
                header=not cli.has("noheader"),
                separator=cli.last("delimiter", "|") if parsable else "",
                trailing=cli.has("parsable") and not cli.has("parsable2"))
        except formats.FormatError as exc:
            return self._err(argv, str(exc))
        return self._ok(argv, "".join(line + "\n" for line in lines))

    # ------------------------------------------------------------ scancel

    def _scancel(self, argv: tuple[str, ...], user: str) -> CommandResult:
        try:
            cli = parse("scancel", argv[1:], _SCANCEL)
        except OptionError as exc:
            return self._err(argv, str(exc))
        filters = cli.has("name") or cli.has("user") or cli.has("me") or cli.has("state")
        if not cli.operands and not filters:
            return self._err(argv, "scancel: error: No job identification provided\n")
        targets: list[tuple[str, Job | None]] = [
            (raw, self._jobs.get(int(raw)) if raw.isdigit() else None) for raw in cli.operands]
        if filters and not cli.operands:
            names = set(",".join(cli.all("name")).split(",")) - {""}
            users = set(",".join(cli.all("user")).split(",")) - {""} | (
                {user} if cli.has("me") else set())
            targets = [(str(j.job_id), j) for j in self._jobs.values() if j.ended is None
                       and (not names or j.name in names) and (not users or j.user in users)]
        if cli.has("signal") and _signal_number(cli.last("signal")) is None:
            return self._err(argv, f"scancel: error: Invalid job signal: {cli.last('signal')}\n")
        # Seen on 20.11, 22.05 and 24.11 (the corpus recordings): an id slurmctld does not
        # know, or a finished one, is no error; with a filter (-p, -n, -u, -t), an id the
        # filter leaves out (a finished job is never in it) is "Invalid job id specified".
        filtered = filters or cli.has("partition")
        partitions = set(",".join(cli.all("partition")).split(",")) - {""}
        errors = []
        for raw, job in targets:
            left_out = job is not None and (job.ended is not None or bool(
                partitions and job.partition not in partitions))
            if (job is None and filtered) or (
                    left_out and filtered):
                errors.append(f"scancel: error: Kill job error on job id {raw}: "
                              "Invalid job id specified\n")
                continue
            if job is None or job.ended is not None:
                continue
            if cli.has("signal"):
                self._signal(job, cli.last("signal"))
                continue
            self._cancel(job)
        text = "".join(errors)
        return CommandResult(argv, 1 if text else 0, "", text)

    def _signal(self, job: Job, name: str) -> None:
        """``scancel --signal``: the signal reaches the job's processes; the job goes on (or
        ends by it, as any job killed by a signal)."""
        number = _signal_number(name)
        if number is not None and job.process is not None and job.process.poll() is None:
            os.killpg(job.process.pid, number)

    def _cancel(self, job: Job) -> None:
        if job.process is not None and job.process.poll() is None:
            os.killpg(job.process.pid, signal.SIGKILL)
            job.process.wait()
        self._ctld(f"_slurm_rpc_kill_job: REQUEST_KILL_JOB JobId={job.job_id} uid 1000")
        job.state, job.reason = "CANCELLED", "None"
        job.exit_code, job.signal = 0, 15
        job.ended = time.monotonic()
        self._complete(job)


def _signal_number(name: str) -> int | None:
    if name.isdigit():
        return int(name)
    try:
        return signal.Signals["SIG" + name.upper().removeprefix("SIG")].value
    except KeyError:
        return None
