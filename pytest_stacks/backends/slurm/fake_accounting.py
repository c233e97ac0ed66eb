"""``sacct`` from accounting storage, as slurmdbd answers it on a stack that declares the
``accounting`` capability (stacks/slurm built with ``ACCOUNTING=slurmdbd``).

Why a model of its own: slurmdbd keeps every job for good (not for ``MinJobAge`` as
slurmctld does), lists each started job's batch step beneath its allocation unless ``-X``,
and words a few things differently from the queue: a cancelled allocation is "CANCELLED by
<uid>" with exit code 0:0 while its batch step carries the signal (0:15); a pending job's
NodeList is "None assigned" and it has no step. All of it seen on slurm-24.11 (the corpus
recording in tests/parity/recordings). Without ``-j`` only jobs that became eligible are
listed (a held job is not); a non-root user sees only their own jobs unless ``-a``.
"""

from __future__ import annotations

from collections.abc import Iterable

from pytest_stacks.backends.slurm import fake_formats as formats
from pytest_stacks.backends.slurm.fake_job import Job
from pytest_stacks.backends.slurm.fake_options import Parsed
from pytest_stacks.transports import CommandResult

#: The account every stack user is in (stacks/slurm/accounting.sh).
ACCOUNT = "stacks"
UID = "1000"
_SHORT = {code: state for state, code in formats.COMPACT.items()}


def _rows(job: Job, steps: bool, only_step: bool) -> list[formats.JobView]:
    """The allocation's row, then its batch step's (once it started)."""
    pending = job.state == "PENDING"
    cancelled = job.state == "CANCELLED"
    exit_code = f"{job.exit_code}:{job.signal}"
    allocation = formats.JobView(
        str(job.job_id), job.name, job.user,
        f"CANCELLED by {UID}" if cancelled else job.state, job.reason, job.partition, "",
        "None assigned" if pending else "localhost", job.workdir, job.command,
        "0:0" if cancelled else exit_code, UID, job.end_stamp, ACCOUNT,
        "0" if pending else "1")
    batch = formats.JobView(
        f"{job.job_id}.batch", "batch", "", job.state, "", "", "", "localhost", "", "",
        exit_code, "", job.end_stamp, ACCOUNT, "1")
    if only_step:
        return [] if pending else [batch]
    return [allocation] if pending or not steps else [allocation, batch]


def _wanted(values: Iterable[str]) -> dict[int, bool] | str:
    """``-j 7,8.batch,`` -> {7: False, 8: True} (True: the step only); the bad word if any."""
    wanted: dict[int, bool] = {}
    for word in (w for v in values for w in v.split(",") if w):
        base, dot, step = word.partition(".")
        if not base.isdigit() or (dot and step != "batch" and not step.isdigit()):
            return word
        wanted[int(base)] = wanted.get(int(base), True) and bool(dot)
    return wanted


def sacct(argv: tuple[str, ...], cli: Parsed, user: str, jobs: Iterable[Job]) -> CommandResult:
    """``sacct`` (without ``-c``) over every job slurmdbd recorded."""
    if cli.has("json"):
        return CommandResult(argv, 1, "", "sacct: error: the fake does not model --json of "
                                          "accounting storage (use -P -o FIELDS)\n")
    wanted = _wanted(cli.all("jobs"))
    if isinstance(wanted, str):
        return CommandResult(argv, 1, "", f"sacct: fatal: Bad job/step specified: {wanted}\n")
    users = {u for v in cli.all("user") for u in v.split(",") if u}
    if not users and user != "root" and not cli.has("allusers"):
        users = {user}
    names = {n for v in cli.all("name") for n in v.split(",") if n}
    states = {_SHORT.get(s.upper(), s.upper()) for v in cli.all("state")
              for s in v.split(",") if s}
    views: list[formats.JobView] = []
    for job in sorted(jobs, key=lambda j: j.job_id):
        if wanted and job.job_id not in wanted:
            continue
        if not wanted and job.state == "PENDING" and job.reason == "JobHeldUser":
            continue  # never eligible: outside the default time window
        if (users and job.user not in users) or (names and job.name not in names) or (
                states and job.state not in states):
            continue
        views.extend(_rows(job, steps=not cli.has("allocations"),
                           only_step=bool(wanted.get(job.job_id))))
    parsable = cli.has("parsable2") or cli.has("parsable")
    fields = ",".join(cli.all("format")) or (
        formats.SACCT_BRIEF if cli.has("brief") else formats.SACCT_DEFAULT)
    try:
        lines = formats.sacct_lines(
            views, fields, header=not cli.has("noheader"),
            separator=cli.last("delimiter", "|") if parsable else "",
            trailing=cli.has("parsable") and not cli.has("parsable2"))
    except formats.FormatError as exc:
        return CommandResult(argv, 1, "", str(exc))
    return CommandResult(argv, 0, "".join(line + "\n" for line in lines), "")
