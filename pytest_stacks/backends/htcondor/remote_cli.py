"""The schedd behind the :class:`~pytest_stacks.backends.htcondor.api.Schedd` interface, reached
the way many sites allow it: HTCondor's command-line tools on a login node, over a
:class:`~pytest_stacks.transports.Transport` (ssh in practice; the docker-exec transport works
too). No bindings, no direct connection to the schedd from this machine.

What crosses:

- submit: the job's files (the executable and the submit description in ``exe/``, the inputs in
  ``inputs/``) are copied with ``put_files`` into a per-job folder under the login user's
  ``~/.pytest-stacks/htcondor/<session>/``, the description's local paths rewritten to the
  remote ones, then ``condor_submit -spool -terse`` (spooling happens there and then, so
  :meth:`spool` has nothing left to do); once spooled, the staged copies are deleted;
- retrieve: the remote ``initialdir`` is emptied, ``condor_transfer_data`` writes the outputs
  into it, the files found there afterwards are copied back with ``get_files`` into the local
  ``initialdir`` and deleted on the login node. Nothing found is nothing copied:
  ``condor_transfer_data`` of a job that left the queue exits 0 and writes nothing, and the
  driver's own check turns that into an error. So the login node keeps only an empty
  ``initialdir`` per job; what a job holds lives in the schedd, which purge releases;
- ``condor_q -allusers -json`` and ``condor_history -json`` (with ``-attributes`` for a
  projection) for ads, ``condor_rm -reason`` for remove, ``condor_qedit -constraint`` for edit,
  ``condor_version`` for the client and ``condor_status -schedd`` for the daemon's version.

Everything that only turns text into values (and back) is a module-level function, tested
without a pool in ``tests/unit/test_htcondor_remote_cli.py``.
"""

from __future__ import annotations

import json
import re
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_stacks import cancellation
from pytest_stacks.backends.htcondor.api import ScheddError, Submitted
from pytest_stacks.backends.htcondor.schedd_version import schedd_version
from pytest_stacks.backends.htcondor.translate import job_constraint, job_ids_of
from pytest_stacks.errors import BackendCallError
from pytest_stacks.transports import CommandResult, Transport

#: Where the login user's job folders live, under its home directory.
REMOTE_ROOT = ".pytest-stacks/htcondor"
#: The job attribute naming a tagged run (``MY.`` sets it in a submit file).
RUN_ATTRIBUTE = "MY.PytestStacksRun"
#: Description keys holding local paths that must be rewritten to the login node's.
_PATH_KEYS = ("executable", "initialdir", "transfer_input_files")
_TERSE = re.compile(r"^\s*(\d+)\.(\d+)\s*-\s*(\d+)\.(\d+)\s*$", re.MULTILINE)
_EXPR = re.compile(r"^/Expr\((.*)\)/$", re.DOTALL)
_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_.+]*$")
_RM_JOB = re.compile(r"^Job (\d+\.\d+) marked for removal", re.MULTILINE)
_RM_CLUSTER = re.compile(r"^All jobs in cluster (\d+) have been marked for removal",
                         re.MULTILINE)
_RM_NOT_FOUND = re.compile(r"^(?:Job|Cluster) (\d+(?:\.\d+)?) not found", re.MULTILINE)
_QEDIT = re.compile(r"^Set attribute \"[^\"]+\" for (\d+) matching jobs?\.", re.MULTILINE)
#: What a read-only tool prints when the schedd did not answer it at all (seen on the split
#: pool under a loaded window, from condor_q and condor_transfer_data): asking again is safe,
#: nothing was read or changed.
_NO_ANSWER = ("Failed to fetch ads", "Can't receive JobAdsArrayLen",
              "Failed to connect to schedd")
_RETRY_PAUSES = (1.0, 2.0, 4.0)


# ====================================================================== pure parts


def json_value(value: Any) -> Any:
    """A value of HTCondor's JSON ads as the bindings wrapper hands it on: an expression
    (``"\\/Expr(...)\\/"``, i.e. ``"/Expr(...)/"`` once decoded) becomes its text, as
    ``str(ExprTree)`` does; nested ads and lists keep their shape."""
    if isinstance(value, str):
        match = _EXPR.match(value)
        return match.group(1) if match else value
    if isinstance(value, list):
        return [json_value(v) for v in value]
    if isinstance(value, dict):
        return {str(k): json_value(v) for k, v in value.items()}
    return value


def parse_json_ads(text: str) -> list[dict[str, Any]]:
    """``condor_q -json`` / ``condor_history -json`` output -> ads. Nothing matched prints
    nothing (condor_q) or ``[ ]`` (condor_history); both are no ads."""
    if not text.strip():
        return []
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ScheddError(f"unreadable JSON from the HTCondor tools ({exc}): "
                          f"{text.strip()[:300]!r}") from None
    if not isinstance(data, list) or not all(isinstance(ad, dict) for ad in data):
        raise ScheddError(f"expected a JSON list of ads, got: {text.strip()[:300]!r}")
    return [{str(k): json_value(v) for k, v in ad.items()} for ad in data]


def parse_terse(text: str) -> tuple[int, int, int]:
    """``condor_submit -terse`` (``"12.0 - 12.2"``) -> (cluster, first proc, number of procs)."""
    match = _TERSE.search(text)
    if match is None:
        raise ScheddError(f"condor_submit -terse printed no job range: {text.strip()[:300]!r}")
    cluster, first, last_cluster, last = (int(g) for g in match.groups())
    if last_cluster != cluster or last < first:
        raise ScheddError(f"condor_submit -terse printed an odd job range: {match.group(0)!r}")
    return cluster, first, last - first + 1


def submit_file(description: Mapping[str, str], count: int = 1) -> str:
    """A submit description file: one ``key = value`` line each, then ``queue N``.

    The description must already be in the submit language (the driver's
    :func:`~pytest_stacks.backends.htcondor.translate.describe_job` keeps ``$`` and
    unprintable characters out of ``arguments``/``environment``); what a file cannot carry
    as written (a line break, a key that is not a name) is refused, never altered.
    """
    if count < 1:
        raise ValueError(f"count must be at least 1, not {count}")
    lines = []
    for key, value in description.items():
        if not _KEY.match(key) or key.lower() == "queue":
            raise ValueError(f"submit key {key!r} cannot be written to a submit file")
        text = str(value)
        if "\n" in text or "\r" in text or "\0" in text:
            raise ValueError(f"submit value of {key!r} holds a line break: {text[:80]!r}")
        if text != text.strip():
            raise ValueError(f"submit value of {key!r} has surrounding whitespace, which a "
                             f"submit file drops: {text[:80]!r}")
        lines.append(f"{key} = {text}")
    lines.append(f"queue {count}")
    return "\n".join(lines) + "\n"


@dataclass(frozen=True)
class StagedJob:
    """A job's description with remote paths, and the local files that go to each folder."""

    description: dict[str, str]
    executable: dict[str, Path]
    inputs: dict[str, Path]
    local_iwd: Path
    remote_dir: str

    @property
    def remote_iwd(self) -> str:
        return f"{self.remote_dir}/iwd"


def stage(description: Mapping[str, str], remote_dir: str) -> StagedJob:
    """Rewrite the local paths of ``description`` (executable, initialdir, inputs) to the
    job's folder on the login node: ``<remote_dir>/exe/<executable>``, ``<remote_dir>/iwd``,
    ``<remote_dir>/inputs/<name>``."""
    if not remote_dir.startswith("/"):
        raise ValueError(f"remote job folder must be absolute, not {remote_dir!r}")
    for key in ("executable", "initialdir"):
        if not description.get(key):
            raise ValueError(f"description has no {key}")
    remote = dict(description)
    exe = Path(description["executable"])
    remote["executable"] = f"{remote_dir}/exe/{exe.name}"
    remote["initialdir"] = f"{remote_dir}/iwd"
    inputs: dict[str, Path] = {}
    listed = [p.strip() for p in description.get("transfer_input_files", "").split(",")
              if p.strip()]
    urls = [p for p in listed if "://" in p]  # the execute node fetches these itself
    for local in (p for p in listed if "://" not in p):
        path = Path(local)
        if path.name in inputs:
            raise ValueError(f"two input files are named {path.name!r}")
        inputs[path.name] = path
    if listed:
        remote["transfer_input_files"] = ",".join(
            [*(f"{remote_dir}/inputs/{n}" for n in inputs), *urls])
    return StagedJob(remote, {exe.name: exe}, inputs, Path(description["initialdir"]),
                     remote_dir)


def rm_totals(stdout: str, stderr: str) -> dict[str, int]:
    """``condor_rm`` output -> the totals the bindings' ``act`` returns (the parts the
    driver reads: TotalSuccess, TotalNotFound)."""
    success = len(_RM_JOB.findall(stdout)) + len(_RM_CLUSTER.findall(stdout))
    not_found = len(_RM_NOT_FOUND.findall(stdout + "\n" + stderr))
    return {"TotalSuccess": success, "TotalNotFound": not_found}


def qedit_count(stdout: str) -> int:
    """``condor_qedit`` output -> how many jobs it changed (0 if it says nothing)."""
    match = _QEDIT.search(stdout)
    return int(match.group(1)) if match else 0


def is_false(constraint: str) -> bool:
    """A constraint that matches nothing. Never handed to condor_q: without -allusers,
    23.9.6's ``condor_q -constraint false`` lists the user's jobs (seen)."""
    return constraint.strip().strip("()").strip().lower() == "false"


# ====================================================================== the schedd


class RemoteCliSchedd:
    """The :class:`~pytest_stacks.backends.htcondor.api.Schedd` interface over HTCondor's
    command-line tools on a login node. ``user`` is the login user every command and file
    operation runs as."""

    def __init__(self, transport: Transport, *, user: str = "submitter",
                 timeout: float = 60.0, job_root: str = "", run_tag: str = "") -> None:
        """``job_root`` and ``run_tag`` (a site's shared pool): job folders under the run's
        own folder, and every job carries ``PytestStacksRun`` so the run's end finds its own."""
        self._transport = transport
        self._fixed_root = job_root
        self._run_tag = run_tag
        self._user = user
        self._timeout = timeout
        self._session = uuid.uuid4().hex[:10]
        self._root: str | None = None
        self._jobs: dict[str, StagedJob] = {}

    # -------------------------------------------------------------- helpers

    def _run(self, what: str, argv: Sequence[str], *, check: bool = True,
             idempotent: bool = False) -> CommandResult:
        """``idempotent``: a tool that only reads from the schedd is asked again (three times,
        7 s in all) when the schedd did not answer it, as a site's own scripts would."""
        pauses = list(_RETRY_PAUSES) if idempotent else []
        while True:
            try:
                result = self._transport.run(list(argv), user=self._user,
                                             timeout=self._timeout)
            except BackendCallError as exc:
                raise ScheddError(f"{what}: {exc}") from exc
            output = result.stderr + result.stdout
            if result.ok or not pauses or not any(m in output for m in _NO_ANSWER):
                break
            cancellation.sleep(pauses.pop(0))  # an interrupted run stops here
        if check and not result.ok:
            detail = (result.stderr.strip() or result.stdout.strip())[-500:]
            asked = len(_RETRY_PAUSES) + 1 - len(pauses) if idempotent else 1
            tries = f" (asked {asked} times)" if asked > 1 else ""
            raise ScheddError(f"{what}: {argv[0]} exited {result.returncode}{tries}: {detail}")
        return result

    def _job_root(self) -> str:
        """``~/.pytest-stacks/htcondor/<session>`` of the login user, made on first use."""
        if self._root is None:
            path = self._fixed_root or self._run(
                "locate the home directory", ["sh", "-c", "cd && pwd -P"]).stdout.strip() \
                + f"/{REMOTE_ROOT}"
            if not path.startswith("/"):
                raise ScheddError(f"the login user's home is not an absolute path: {path!r}")
            root = f"{path}/{self._session}"
            self._run("make the job folder", ["mkdir", "-p", root])
            self._root = root
        return self._root

    def remote_iwd(self, job_id: str) -> str | None:
        """The job's ``initialdir`` on the login node (where ``condor_transfer_data`` writes),
        for a job submitted through this schedd."""
        staged = self._jobs.get(job_id)
        return staged.remote_iwd if staged is not None else None

    # -------------------------------------------------------------- the Schedd interface

    def submit(self, description: Mapping[str, str], *, spool: bool = True,
               count: int = 1) -> Submitted:
        remote_dir = f"{self._job_root()}/{uuid.uuid4().hex[:12]}"
        if self._run_tag:
            description = {**description, RUN_ATTRIBUTE: f'"{self._run_tag}"'}
        try:
            staged = stage(description, remote_dir)
            text = submit_file(staged.description, count)
            exe = {name: path.read_bytes() for name, path in staged.executable.items()}
            inputs = {name: path.read_bytes() for name, path in staged.inputs.items()}
        except (ValueError, OSError) as exc:
            raise ScheddError(f"submit: {exc}") from exc
        if "job.sub" in exe:
            raise ScheddError("submit: the executable must not be named job.sub")
        exe["job.sub"] = text.encode()
        self._run("submit", ["mkdir", "-p", staged.remote_iwd])
        try:
            self._transport.put_files(f"{remote_dir}/exe", exe, user=self._user, mode=0o755)
            if inputs:
                self._transport.put_files(f"{remote_dir}/inputs", inputs, user=self._user,
                                          mode=0o644)
        except BackendCallError as exc:
            raise ScheddError(f"submit: copying the job's files failed: {exc}") from exc
        try:
            result = self._run("submit", ["condor_submit", *(["-spool"] if spool else []),
                                          "-terse", f"{remote_dir}/exe/job.sub"])
            cluster, first, num = parse_terse(result.stdout)
        except ScheddError:
            self._run("clean up", ["rm", "-rf", "--", remote_dir], check=False)
            raise
        if spool:
            # The schedd holds its own copies now; only the (empty) initialdir stays, where
            # condor_transfer_data writes. Not spooled, the job reads them where they are.
            self._run("clean up", ["rm", "-rf", "--", f"{remote_dir}/exe",
                                   f"{remote_dir}/inputs"], check=False)
        submitted = Submitted(cluster, first, num, remote_dir)
        for job_id in submitted.job_ids:
            self._jobs[job_id] = staged
        return submitted

    def spool(self, submitted: Submitted) -> None:
        """Nothing: ``condor_submit -spool`` spooled the inputs when it submitted."""

    def retrieve(self, job_id: str) -> None:
        staged = self._jobs.get(job_id)
        if staged is None:
            raise ScheddError(f"retrieve: job {job_id} was not submitted through this client "
                              f"(its remote initialdir is unknown)")
        iwd = staged.remote_iwd
        # What an earlier retrieval left must not pass for what this one brought.
        self._run("retrieve", ["find", iwd, "-maxdepth", "1", "-type", "f", "-delete"])
        self._run("retrieve", ["condor_transfer_data", job_id], idempotent=True)
        listing = self._run("retrieve", ["find", iwd, "-maxdepth", "1", "-type", "f",
                                         "-printf", "%f\\0"])
        names = [n for n in listing.stdout.split("\0") if n]
        if not names:
            return
        try:
            files = self._transport.get_files(iwd, names)
        except BackendCallError as exc:
            raise ScheddError(f"retrieve: copying the outputs back failed: {exc}") from exc
        staged.local_iwd.mkdir(parents=True, exist_ok=True)
        for name, data in files.items():
            (staged.local_iwd / name).write_bytes(data)
        # Copied: the login node keeps nothing of it (the schedd still has the outputs for as
        # long as the job stays in the queue).
        self._run("clean up", ["find", iwd, "-maxdepth", "1", "-type", "f", "-delete"],
                  check=False)

    def act(self, action: str, job_ids: Sequence[str], reason: str = "") -> dict[str, Any]:
        if action.lower() != "remove":
            raise ScheddError(f"unsupported action {action!r}")
        ids = job_ids_of(job_ids)
        if not ids:
            return {"TotalSuccess": 0, "TotalNotFound": 0}
        argv = ["condor_rm", *(["-reason", reason] if reason else []), *ids]
        result = self._run("remove", argv, check=False)
        totals = rm_totals(result.stdout, result.stderr)
        if not result.ok and not any(totals.values()):
            raise ScheddError(f"remove: condor_rm exited {result.returncode}: "
                              f"{(result.stderr or result.stdout).strip()[-500:]}")
        return dict(totals)

    def edit(self, job_ids: Sequence[str], attribute: str, value: str) -> int:
        ids = job_ids_of(job_ids)
        if not ids:
            return 0
        if not _KEY.match(attribute):
            raise ScheddError(f"edit: {attribute!r} is not an attribute name")
        result = self._run("edit", ["condor_qedit", "-constraint", job_constraint(ids),
                                    attribute, value], check=False)
        count = qedit_count(result.stdout)
        if not result.ok and count == 0:
            raise ScheddError(f"edit: condor_qedit exited {result.returncode}: "
                              f"{(result.stderr or result.stdout).strip()[-500:]}")
        return count

    def query(self, constraint: str = "true",
              projection: Sequence[str] = ()) -> list[dict[str, Any]]:
        if is_false(constraint):
            return []
        argv = ["condor_q", "-allusers", "-json", "-constraint", constraint]
        if projection:
            argv += ["-attributes", ",".join(projection)]
        return parse_json_ads(self._run("query", argv, idempotent=True).stdout)

    def history(self, constraint: str = "true", projection: Sequence[str] = (),
                match: int = -1) -> list[dict[str, Any]]:
        if is_false(constraint):
            return []
        argv = ["condor_history", "-json", "-constraint", constraint]
        if projection:
            argv += ["-attributes", ",".join(projection)]
        if match > 0:
            argv += ["-match", str(match)]
        return parse_json_ads(self._run("history", argv, idempotent=True).stdout)

    def slot_ads(self, constraint: str = "true",
                 projection: Sequence[str] = ()) -> list[dict[str, Any]]:
        argv = ["condor_status", "-json", "-constraint", constraint,
                *(["-attributes", ",".join(projection)] if projection else [])]
        return parse_json_ads(self._run("slot query", argv, idempotent=True).stdout)

    def daemon_version(self) -> str:
        """The schedd's own ``CondorVersion`` (:mod:`.schedd_version`), never the login
        node's ``condor_version``."""
        return schedd_version(lambda argv: self._run("version", argv, check=False))

    def client_version(self) -> str:
        """``condor_version`` of the login node: the tools that submit are the client."""
        return self._run("version", ["condor_version"]).stdout.strip()
