"""The HTCondor tools' command line in front of the fake schedd: what a client that shells out
(``condor_submit``, ``condor_q``, ``condor_history``, ``condor_rm``, ``condor_transfer_data``,
``condor_version``) meets on a login node, answered in-process.

Reached as ``FakeSchedd.commands`` (``stack_fake.commands`` on fake-htcondor). Every command
goes through the same schedd the bindings-shaped interface drives, so a job submitted here is
the job ``query`` shows. Paths: a folder given to :meth:`FakeCondorCommands.share` is the same
path on both sides (a submit file, its executable and inputs are read there, retrieved
outputs land there); every other path lives under the fake's private root, as a login node's
own disk would. The tools' option grammar is HTCondor's: one dash, an option may be shortened
to a unique prefix of at least its documented minimum (``-af``, ``-const``), ``-af`` takes the
words up to the next option.
"""

from __future__ import annotations

import os
import time
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_stacks.backends.htcondor.api import ScheddError, Submitted, version_tuple
from pytest_stacks.backends.htcondor.fake import ad_format
from pytest_stacks.backends.htcondor.fake.submit_file import SubmitFileError, read_submit_file
from pytest_stacks.transports import CommandResult

if TYPE_CHECKING:
    from pytest_stacks.backends.htcondor.fake.schedd import FakeSchedd

#: The system's own folders: the same on a login node as here (``executable = /bin/sh``).
_SYSTEM = (Path("/bin"), Path("/usr"), Path("/sbin"), Path("/lib"))


class _Refused(Exception):
    def __init__(self, stderr: str, code: int = 1, stdout: str = "") -> None:
        super().__init__(stderr)
        self.stderr, self.code, self.stdout = stderr, code, stdout


class FakeCondorCommands:
    """``run(argv, user=, timeout=, stdin=, cwd=)`` and ``share(host_dir)`` for fake-htcondor."""

    def __init__(self, schedd: FakeSchedd) -> None:
        self._schedd = schedd
        self._shared: list[Path] = []
        self.root = schedd.root / "login"
        self.log: list[str] = []

    # ------------------------------------------------------------ paths

    def share(self, host_dir: Path) -> None:
        """``host_dir`` (absolute, on the host: the run's shared folder) is the same path on
        the fake's side; see the module's docstring."""
        folder = Path(host_dir)
        if not folder.is_absolute():
            raise ValueError(f"share({host_dir!s}): the shared folder must be an absolute "
                             "host path")
        self._shared.append(Path(os.path.normpath(folder)))

    def host_path(self, path: str, cwd: str | None = None) -> Path:
        """The host path of ``path`` as the login node names it (relative: against ``cwd``)."""
        base = cwd or f"/home/{self._schedd.owner}"
        raw = path if path.startswith("/") else f"{base.rstrip('/')}/{path}"
        normal = Path(os.path.normpath(raw))
        if any(normal.is_relative_to(folder) for folder in self._shared):
            return normal
        if any(normal.is_relative_to(folder) for folder in _SYSTEM):
            return normal
        mapped = (self.root / str(normal).lstrip("/")).resolve()
        if not mapped.is_relative_to(self.root.resolve()):
            raise PermissionError(f"path escapes the fake login node: {path}")
        return mapped

    # ------------------------------------------------------------ commands

    def run(self, argv: Sequence[str], *, user: str | None = None, timeout: float = 60.0,
            stdin: str = "", cwd: str | None = None) -> CommandResult:
        """Answer one tool's command line as the pinned version does."""
        words = tuple(argv)
        self.log.append(" ".join(words))
        handler = {
            "condor_submit": self._submit, "condor_q": self._q,
            "condor_history": self._history, "condor_rm": self._rm,
            "condor_transfer_data": self._transfer_data, "condor_version": self._version,
        }.get(words[0] if words else "")
        if handler is None:
            name = words[0] if words else ""
            return CommandResult(words, 127, "", f"{name}: command not found\n")
        try:
            out = handler(list(words[1:]), stdin, cwd)
        except _Refused as exc:
            return CommandResult(words, exc.code, exc.stdout, exc.stderr)
        return CommandResult(words, 0, out, "")

    def tools_version(self) -> str:
        """The login node's tools are the pool's own release (a stack's container has one
        HTCondor); the bindings' client version is another client's."""
        return f"$CondorVersion: {self._schedd.version} (pytest-stacks fake tools) $"

    def _version(self, args: list[str], stdin: str, cwd: str | None) -> str:
        if args:
            raise _Refused(f"Unknown option {args[0]}\n")
        return self.tools_version() + "\n$CondorPlatform: X86_64-Debian (fake) $\n"

    # ------------------------------------------------------------ condor_submit

    def _submit(self, args: list[str], stdin: str, cwd: str | None) -> str:
        spool = terse = False
        files: list[str] = []
        extra: list[str] = []
        words = list(args)
        while words:
            word = words.pop(0)
            if word.startswith("-") and word != "-":
                name = word[1:]
                if _prefix(name, "spool", 2):
                    spool = True
                elif _prefix(name, "terse", 3):
                    terse = True
                elif _prefix(name, "append", 1) or _prefix(name, "a", 1):
                    if not words:
                        raise _Refused("ERROR: -append requires another argument\n")
                    extra.append(words.pop(0))
                elif _prefix(name, "verbose", 1) or _prefix(name, "disable", 1):
                    continue
                else:
                    raise _Refused(f"ERROR: Unknown option {word}\n")
            elif "=" in word:
                extra.append(word)
            else:
                files.append(word)
        if len(files) > 1:
            raise _Refused("ERROR: the pytest-stacks fake reads one submit file per "
                           "condor_submit\n")
        text = stdin if not files or files[0] == "-" else self._read(files[0], cwd)
        try:
            parsed = read_submit_file(text, extra=extra)
        except SubmitFileError as exc:
            raise _Refused(str(exc)) from None
        description = self._localised(parsed.description, cwd)
        if not spool:
            # condor_submit writes the one-shot/10-day LeaveJobInQueue only for spooled
            # jobs; a job whose files stay where they are leaves the queue when it ends.
            description.setdefault("leave_in_queue", "false")
        if parsed.count == 0:
            raise _Refused("", 0, "Submitting job(s).\n0 job(s) submitted to cluster 0.\n"
                           if not terse else "")
        try:
            submitted = self._schedd.submit(description, spool=spool, count=parsed.count,
                                            client=self.tools_version())
            if spool:
                self._schedd.spool(submitted)
        except ScheddError as exc:
            raise _Refused(f"ERROR: {exc}\n") from None
        message = _submit_message(submitted, terse, spool)
        if not terse and version_tuple(self._schedd.version) >= (25, 0, 0):
            # Seen on 25.14.1 (the corpus recording), not on 23.9.6; between: not recorded.
            raise _Refused(f"To monitor your job(s), run: condor_watch_q -clusters "
                           f"{submitted.cluster}\n", 0, message)
        return message

    def _read(self, name: str, cwd: str | None) -> str:
        try:
            return self.host_path(name, cwd).read_text()
        except (OSError, UnicodeDecodeError):
            raise _Refused(f"ERROR: Failed to open command file ({name})\n") from None

    def _localised(self, description: dict[str, str], cwd: str | None) -> dict[str, str]:
        """Paths of the description as the fake schedd reads them (host paths)."""
        out = dict(description)
        base = cwd or f"/home/{self._schedd.owner}"
        iwd_raw = out.get("initialdir", out.get("iwd", ""))
        iwd = self.host_path(iwd_raw or ".", base)
        out.pop("iwd", None)
        out["initialdir"] = str(iwd)
        exe = out.get("executable", "")
        if exe and out.get("transfer_executable", "true").lower() not in ("false", "0"):
            out["executable"] = str(self.host_path(exe, base))
        inputs = [s.strip() for s in out.get("transfer_input_files", "").split(",") if s.strip()]
        if inputs:
            out["transfer_input_files"] = ",".join(
                str(self.host_path(i)) if i.startswith("/") else i for i in inputs)
        for key in ("output", "error"):
            if out.get(key, "").startswith("/") and out[key] != "/dev/null":
                out[key] = str(self.host_path(out[key]))
        return out

    # ------------------------------------------------------------ condor_q / condor_history

    def _q(self, args: list[str], stdin: str, cwd: str | None) -> str:
        query = _Query.read("condor_q", args)
        ads = self._schedd.query(query.constraint())
        if not query.all_users and not query.ids and not query.owners:
            ads = [ad for ad in ads if ad.get("Owner") == self._schedd.owner]
        return query.show(ads, int(time.time()), empty_json="")

    def _history(self, args: list[str], stdin: str, cwd: str | None) -> str:
        query = _Query.read("condor_history", args)
        ads = self._schedd.history(query.constraint(), match=query.limit)
        return query.show(ads, int(time.time()), empty_json="[\n]\n")

    # ------------------------------------------------------------ condor_rm

    def _rm(self, args: list[str], stdin: str, cwd: str | None) -> str:
        reason = ""
        targets: list[str] = []
        words = list(args)
        while words:
            word = words.pop(0)
            if _prefix(word[1:], "reason", 1) and word.startswith("-"):
                if not words:
                    raise _Refused("ERROR: -reason requires another argument\n")
                reason = words.pop(0)
            elif word.startswith("-"):
                raise _Refused(f"Unrecognized option: {word}\n")
            else:
                targets.append(word)
        if not targets:
            raise _Refused("ERROR: no jobs specified\n")
        out: list[str] = []
        err: list[str] = []
        for target in targets:
            ids = self._ids_of(target)
            if not ids:
                err.append(f"Couldn't find/remove all jobs in cluster {target}\n"
                           if "." not in target else f"Job {target} not found\n")
                continue
            self._schedd.act("remove", ids, reason or "via condor_rm")
            out.append(f"All jobs in cluster {target} have been marked for removal\n"
                       if "." not in target else f"Job {target} marked for removal\n")
        if err:
            # Seen on 23.9.6 (the corpus recording): the complaint follows an empty line.
            raise _Refused("\n" + "".join(err), 1, "".join(out))
        return "".join(out)

    def _ids_of(self, target: str) -> list[str]:
        if "." in target:
            cluster, _, proc = target.partition(".")
            constraint = f"ClusterId == {int(cluster)} && ProcId == {int(proc)}"
        elif target.isdigit():
            constraint = f"ClusterId == {int(target)}"
        else:
            constraint = f'Owner == "{target}"'
        return [f"{ad['ClusterId']}.{ad['ProcId']}"
                for ad in self._schedd.query(constraint, ("ClusterId", "ProcId", "JobStatus"))
                if ad.get("JobStatus") != 3]

    # ------------------------------------------------------------ condor_transfer_data

    def _transfer_data(self, args: list[str], stdin: str, cwd: str | None) -> str:
        targets = [a for a in args if not a.startswith("-")]
        unknown = [a for a in args if a.startswith("-")]
        if unknown:
            raise _Refused(f"Unrecognized option: {unknown[0]}\n")
        for target in targets:
            ids = [f"{ad['ClusterId']}.{ad['ProcId']}" for ad in self._schedd.query(
                (f"ClusterId == {int(target.split('.')[0])}"
                 + (f" && ProcId == {int(target.split('.')[1])}" if "." in target else "")),
                ("ClusterId", "ProcId"))] if target.split(".")[0].isdigit() else []
            for job_id in ids:
                try:
                    self._schedd.retrieve(job_id)
                except ScheddError as exc:
                    raise _Refused(f"{exc}\n") from None
        return "Fetching data files...\n" if targets else ""


def _prefix(word: str, option: str, minimum: int) -> bool:
    """HTCondor's ``is_dash_arg_prefix``: ``word`` is ``option`` or a prefix of it at least
    ``minimum`` letters long."""
    return len(word) >= minimum and option.startswith(word.lower())


def _submit_message(submitted: Submitted, terse: bool, spool: bool) -> str:
    first = submitted.first_proc
    last = first + submitted.num_procs - 1
    if terse:
        return f"{submitted.cluster}.{first} - {submitted.cluster}.{last}\n"
    return (f"Submitting job(s){'.' * submitted.num_procs}\n"
            f"{submitted.num_procs} job(s) submitted to cluster {submitted.cluster}.\n")


class _Query:
    """What condor_q / condor_history were asked: which jobs, and how to print them."""

    def __init__(self, tool: str) -> None:
        self.tool = tool
        self.ids: list[str] = []
        self.owners: list[str] = []
        self.constraints: list[str] = []
        self.autoformat: list[str] = []
        self.formats: list[tuple[str, str]] = []
        self.attributes: list[str] = []
        self.json = self.long = self.all_users = self.totals = False
        self.limit = -1

    @classmethod
    def read(cls, tool: str, args: list[str]) -> _Query:
        query = cls(tool)
        words = list(args)
        while words:
            word = words.pop(0)
            if not word.startswith("-"):
                (query.ids if word.split(".")[0].isdigit() else query.owners).append(word)
                continue
            name = word[1:].split(":")[0]
            if _prefix(name, "autoformat", 2) or name == "af":
                while words and not words[0].startswith("-"):
                    query.autoformat.append(words.pop(0))
            elif _prefix(name, "format", 2):
                if len(words) < 2:
                    raise _Refused("Error: -format requires format and attribute parameters\n")
                query.formats.append((words.pop(0), words.pop(0)))
            elif _prefix(name, "constraint", 2):
                query.constraints.append(query._argument(word, words))
            elif _prefix(name, "attributes", 2):
                query.attributes.extend(query._argument(word, words).split(","))
            elif _prefix(name, "json", 2):
                query.json = True
            elif _prefix(name, "long", 1):
                query.long = True
            elif _prefix(name, "allusers", 2):
                query.all_users = True
            elif tool == "condor_q" and _prefix(name, "totals", 3):
                query.totals = True
            elif tool == "condor_q" and _prefix(name, "nobatch", 3):
                continue
            elif tool == "condor_history" and (_prefix(name, "limit", 3)
                                               or _prefix(name, "match", 3)):
                query.limit = int(query._argument(word, words))
            else:
                raise _Refused(f"Error: unrecognized argument {word}\n" if tool == "condor_q"
                               else f"Error: Unknown command line option {word}\n")
        return query

    def _argument(self, word: str, words: list[str]) -> str:
        if not words:
            raise _Refused(f"Error: Argument {word} requires another argument\n")
        return words.pop(0)

    def constraint(self) -> str:
        parts = [f"({c})" for c in self.constraints]
        picks = []
        for job in self.ids:
            cluster, _, proc = job.partition(".")
            picks.append(f"(ClusterId == {int(cluster)}"
                         + (f" && ProcId == {int(proc)})" if proc else ")"))
        picks.extend(f'(Owner == "{o}")' for o in self.owners)
        if picks:
            parts.append("(" + " || ".join(picks) + ")")
        return " && ".join(parts) or "true"

    def show(self, ads: list[dict[str, Any]], now: int, *, empty_json: str) -> str:
        if self.autoformat:
            return ad_format.autoformat(ads, self.autoformat, now)
        if self.formats:
            return ad_format.printf_form(ads, self.formats, now)
        if self.json:
            return ad_format.json_form(ads, self.attributes, empty=empty_json)
        if self.long:
            return ad_format.long_form(ads, self.attributes)
        return self._table(ads)

    def _table(self, ads: list[dict[str, Any]]) -> str:
        counts = {status: sum(1 for ad in ads if ad.get("JobStatus") == status)
                  for status in range(1, 8)}
        totals = (f"Total for query: {len(ads)} jobs; {counts[4]} completed, {counts[3]} "
                  f"removed, {counts[1]} idle, {counts[2]} running, {counts[5]} held, "
                  f"{counts[7]} suspended \n")
        if self.tool == "condor_history":
            header = " ID     OWNER          SUBMITTED   RUN_TIME     ST COMPLETED   CMD\n"
            return header + "".join(
                f"{ad.get('ClusterId')}.{ad.get('ProcId')} {ad.get('Owner')} "
                f"{'XCRHCSX'[int(ad.get('JobStatus', 0)) % 7]} {ad.get('Cmd')}\n" for ad in ads)
        return "\n\n" + totals
