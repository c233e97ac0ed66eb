"""An in-process HTCondor schedd double, behind the same small interface the real driver uses.

:class:`FakeSchedd` satisfies :class:`pytest_stacks.backends.htcondor.Schedd`, so the fake lane
runs the real driver code. Jobs run for real: ``spool`` copies the executable and the input
files into a private spool directory, a job starts in its own scratch directory (the executable
as ``condor_exec.exe``, only ``environment`` and the starter's own variables in its
environment), and on exit the declared outputs plus stdout/stderr go back to the spool, from
where ``retrieve`` writes them to the job's ``initialdir``.

Where it matters to clients it behaves as the 23.9.6 schedd did with the 25.14.1 bindings
(tests/data/htcondor/OBSERVED.md) and is never more forgiving:

* ``submit(spool=True)`` leaves the job held (code 16, "Spooling input data files") until
  ``spool`` uploads the executable and inputs; a missing one (e.g. a relative executable, which
  is resolved against the client's working directory) fails ``spool`` and leaves the job held.
  The ad then shows the spool as ``Iwd`` and the client's paths as ``SUBMIT_Iwd``/``SUBMIT_Cmd``.
* A declared output missing at exit puts the job on hold (code 12, subcode 2).
* The *submitting client* writes ``LeaveJobInQueue``: a ``leave_in_queue`` in the description
  wins; otherwise a spooled job gets the expression of the modelled client version. From
  25.8.2 (HTCONDOR-3508) that is the one-shot expression, true until a retrieval finishes
  (``StageOutFinish >= EnteredCurrentStatus``), so the job leaves the queue at the schedd's next
  periodic evaluation after its first retrieval; before, the 10-day expression keeps a
  completed spooled job. Expressions are evaluated as ClassAd expressions (a small
  three-valued evaluator below: ``UNDEFINED``, ``?:``, ``=?=``/``is``, ``time()``) and shown as
  the ClassAd library prints them back (``=?= UNDEFINED`` reads ``is undefined``).
* Periodic evaluation happens every ``periodic_expr_interval`` seconds, driven lazily by the
  elapsed time on each call (no thread; :meth:`FakeSchedd.run_periodic` forces one); a job also
  leaves at once when it completes with a false ``LeaveJobInQueue``.
* ``act("remove")`` marks the job Removed (a running one with ``ExitBySignal``/``ExitSignal
  15``), and it leaves the queue ``removed_linger`` seconds later. Removing a kept *completed*
  job records it as Removed too; editing its ``LeaveJobInQueue`` to false lets it leave as
  Completed.
* ``retrieve`` of a job that is no longer in the queue (or never existed) raises nothing and
  writes nothing, as the 25.14 bindings against a 23.9 schedd do.
* Finished jobs are then only in ``history`` (newest first); unknown ids are simply absent.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_stacks.backends.htcondor import (
    NEW_LEAVE_IN_QUEUE,
    OLD_LEAVE_IN_QUEUE,
    ONE_SHOT_SINCE,
    ScheddError,
    Submitted,
    parse_condor_version,
    version_tuple,
)

# Kept apart from the driver's own table on purpose: a fake that imports what the driver
# believes would agree with the driver forever.
STATUS_NAMES = {1: "Idle", 2: "Running", 3: "Removed", 4: "Completed", 5: "Held",
                6: "Transferring Output", 7: "Suspended"}
EXECUTABLE_NAME = "condor_exec.exe"
REMOVED_LINGER = 0.25  # seconds a removed job stays in the queue (0.26-0.28 s seen on 23.9.6)
#: Attributes a job's owner may not edit.
IMMUTABLE = frozenset(a.lower() for a in (
    "ClusterId", "ProcId", "Owner", "User", "JobStatus", "MyType", "TargetType", "GlobalJobId",
    "QDate", "CompletionDate", "EnteredCurrentStatus", "StageOutFinish", "StageInFinish"))
STDOUT_NAME = "_condor_stdout"
STDERR_NAME = "_condor_stderr"


# ====================================================================== a small ClassAd evaluator


class _Undefined:
    _instance: _Undefined | None = None

    def __new__(cls) -> _Undefined:
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "UNDEFINED"


class _Error:
    def __repr__(self) -> str:
        return "ERROR"


UNDEFINED = _Undefined()
ERROR = _Error()

_TOKEN = re.compile(r"""
    \s*(?:
      (?P<num>\d+\.\d*(?:[eE][-+]?\d+)?|\d+)
    | (?P<str>"(?:[^"\\]|\\.)*")
    | (?P<name>[A-Za-z_][A-Za-z0-9_.]*)
    | (?P<op>=\?=|=!=|==|!=|<=|>=|&&|\|\||\?:|[<>!+\-*/%?:(),])
    )""", re.VERBOSE)


class ClassAdSyntaxError(ValueError):
    pass


class Expr:
    """A parsed ClassAd expression (the subset job policies and constraints use)."""

    def __init__(self, text: str) -> None:
        self.source = text.strip()
        self._tokens = self._lex(self.source)
        self.text = self._unparse(self._tokens)
        self._pos = 0
        self._tree = self._ternary()
        if self._pos != len(self._tokens):
            raise ClassAdSyntaxError(f"unexpected {self._tokens[self._pos][1]!r} in {text!r}")

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"Expr({self.text!r})"

    # -------------------------------------------------------------- parsing

    @staticmethod
    def _lex(text: str) -> list[tuple[str, str]]:
        tokens: list[tuple[str, str]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            match = _TOKEN.match(text, pos)
            if match is None or match.end() == pos:
                raise ClassAdSyntaxError(f"cannot parse {text[pos:]!r} in {text!r}")
            kind = match.lastgroup or ""
            value = match.group(kind)
            if kind == "name" and value.lower() in ("is", "isnt"):
                kind, value = "op", "=?=" if value.lower() == "is" else "=!="
            tokens.append((kind, value))
            pos = match.end()
        return tokens

    @staticmethod
    def _unparse(tokens: Sequence[tuple[str, str]]) -> str:
        """The text as the ClassAd library prints it back (spacing, ``is``, lowercase
        keywords), which is what a job ad shows for an expression the client submitted."""
        out: list[str] = []
        prev: tuple[str, str] | None = None
        for kind, text in tokens:
            operand_before = prev is not None and (prev[0] in ("num", "str", "name")
                                                   or prev[1] == ")")
            if kind == "name":
                lower = text.lower()
                piece = lower if lower in ("true", "false", "undefined", "error") else text
            elif kind != "op":
                piece = text
            elif text == "(":
                piece = "(" if prev is None or prev[0] == "name" or not operand_before \
                    else " ("
            elif text == ")":
                piece = ")"
            elif text == ",":
                piece = ","
            elif text in ("!", "-", "+") and not operand_before:
                piece = text
            else:
                piece = " " + {"=?=": "is", "=!=": "isnt"}.get(text, text) + " "
            if out and kind in ("num", "str", "name") and prev is not None and \
                    prev[0] in ("num", "str", "name"):
                piece = " " + piece
            out.append(piece)
            prev = (kind, text)
        return "".join(out)

    def _peek(self) -> str | None:
        return self._tokens[self._pos][1] if self._pos < len(self._tokens) else None

    def _take(self, expected: str | None = None) -> tuple[str, str]:
        if self._pos >= len(self._tokens):
            raise ClassAdSyntaxError(f"unexpected end of {self.text!r}")
        token = self._tokens[self._pos]
        if expected is not None and token[1] != expected:
            raise ClassAdSyntaxError(f"expected {expected!r}, got {token[1]!r} in {self.text!r}")
        self._pos += 1
        return token

    def _ternary(self) -> tuple[Any, ...]:
        cond = self._binary(0)
        if self._peek() == "?:":
            self._take()
            return ("elvis", cond, self._ternary())
        if self._peek() == "?":
            self._take()
            then = self._ternary()
            self._take(":")
            return ("if", cond, then, self._ternary())
        return cond

    _LEVELS: tuple[tuple[str, ...], ...] = (
        ("||",), ("&&",), ("==", "!=", "=?=", "=!="), ("<", "<=", ">", ">="), ("+", "-"),
        ("*", "/", "%"))

    def _binary(self, level: int) -> tuple[Any, ...]:
        if level == len(self._LEVELS):
            return self._unary()
        left = self._binary(level + 1)
        while self._peek() in self._LEVELS[level]:
            op = self._take()[1]
            left = ("op", op, left, self._binary(level + 1))
        return left

    def _unary(self) -> tuple[Any, ...]:
        if self._peek() in ("!", "-", "+"):
            op = self._take()[1]
            return ("unary", op, self._unary())
        return self._atom()

    def _atom(self) -> tuple[Any, ...]:
        kind, text = self._take()
        if kind == "num":
            return ("lit", float(text) if "." in text or "e" in text.lower() else int(text))
        if kind == "str":
            return ("lit", bytes(text[1:-1], "utf-8").decode("unicode_escape"))
        if text == "(":
            inner = self._ternary()
            self._take(")")
            return inner
        if kind == "name":
            lower = text.lower()
            if self._peek() == "(":
                self._take("(")
                args: list[tuple[Any, ...]] = []
                while self._peek() != ")":
                    args.append(self._ternary())
                    if self._peek() == ",":
                        self._take(",")
                self._take(")")
                if lower not in _FUNCTIONS:
                    raise ClassAdSyntaxError(f"function {text}() is not modelled by the fake")
                return ("call", lower, args)
            if lower in ("true", "false"):
                return ("lit", lower == "true")
            if lower == "undefined":
                return ("lit", UNDEFINED)
            if lower == "error":
                return ("lit", ERROR)
            if lower.startswith(("my.", "target.")):
                lower = lower.split(".", 1)[1]
            return ("attr", lower)
        raise ClassAdSyntaxError(f"unexpected {text!r} in {self.text!r}")

    # -------------------------------------------------------------- evaluation

    def eval(self, ad: Mapping[str, Any], now: int | None = None) -> Any:
        scope = {k.lower(): v for k, v in ad.items()}
        return _eval(self._tree, scope, int(time.time()) if now is None else now, 0)

    def is_true(self, ad: Mapping[str, Any], now: int | None = None) -> bool:
        value = self.eval(ad, now)
        if isinstance(value, bool):
            return value
        if isinstance(value, int | float):
            return value != 0
        return False


def _num(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


_FUNCTIONS: dict[str, Callable[..., Any]] = {}


def _eval(node: tuple[Any, ...], scope: Mapping[str, Any], now: int, depth: int) -> Any:
    if depth > 50:
        return ERROR
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "attr":
        value = scope.get(node[1], UNDEFINED)
        if isinstance(value, Expr):
            return _eval(value._tree, scope, now, depth + 1)
        return value
    if kind == "call":
        args = [_eval(a, scope, now, depth + 1) for a in node[2]]
        return _FUNCTIONS[node[1]](now, *args)
    if kind == "elvis":
        first = _eval(node[1], scope, now, depth + 1)
        return _eval(node[2], scope, now, depth + 1) if first is UNDEFINED else first
    if kind == "if":
        cond = _eval(node[1], scope, now, depth + 1)
        if cond is UNDEFINED or cond is ERROR:
            return cond
        return _eval(node[2] if _truthy(cond) else node[3], scope, now, depth + 1)
    if kind == "unary":
        value = _eval(node[2], scope, now, depth + 1)
        if value is UNDEFINED or value is ERROR:
            return value
        if node[1] == "!":
            return ERROR if not isinstance(value, bool | int | float) else not _truthy(value)
        if not _num(value):
            return ERROR
        return -value if node[1] == "-" else value
    op = node[1]
    left = _eval(node[2], scope, now, depth + 1)
    if op in ("&&", "||"):
        return _logic(op, left, lambda: _eval(node[3], scope, now, depth + 1))
    right = _eval(node[3], scope, now, depth + 1)
    if op in ("=?=", "=!="):
        same = type(left) is type(right) and left == right
        return same if op == "=?=" else not same
    if left is ERROR or right is ERROR:
        return ERROR
    if left is UNDEFINED or right is UNDEFINED:
        return UNDEFINED
    if op in ("==", "!=", "<", "<=", ">", ">="):
        if isinstance(left, str) and isinstance(right, str):
            left, right = left.lower(), right.lower()
        elif isinstance(left, str) or isinstance(right, str):
            return ERROR
        result = {"==": left == right, "!=": left != right, "<": left < right,
                  "<=": left <= right, ">": left > right, ">=": left >= right}[op]
        return result
    if not (_num(left) and _num(right)):
        return ERROR
    if op == "+":
        return left + right
    if op == "-":
        return left - right
    if op == "*":
        return left * right
    if right == 0:
        return ERROR
    if op == "/":
        if isinstance(left, int) and isinstance(right, int):
            return int(left / right)
        return left / right
    return left % right


def _truthy(value: Any) -> bool:
    return bool(value) if isinstance(value, bool | int | float) else False


def _logic(op: str, left: Any, right_thunk: Callable[[], Any]) -> Any:
    if left is ERROR:
        return ERROR
    if left is not UNDEFINED and not isinstance(left, bool | int | float):
        return ERROR
    if op == "&&" and left is not UNDEFINED and not _truthy(left):
        return False
    if op == "||" and left is not UNDEFINED and _truthy(left):
        return True
    right = right_thunk()
    if right is ERROR or (right is not UNDEFINED and not isinstance(right, bool | int | float)):
        return ERROR
    if left is UNDEFINED:
        if right is UNDEFINED:
            return UNDEFINED
        if op == "&&":
            return False if not _truthy(right) else UNDEFINED
        return True if _truthy(right) else UNDEFINED
    return right if right is UNDEFINED else _truthy(right)


_FUNCTIONS.update({
    "time": lambda now: now,
    "isundefined": lambda now, v: v is UNDEFINED,
    "isdefined": lambda now, v: v is not UNDEFINED,
    "iferror": lambda now, v, alt: alt if v is ERROR else v,
    "ifthenelse": lambda now, c, a, b: c if c is UNDEFINED else (a if _truthy(c) else b),
})


# ====================================================================== submit descriptions


def _parse_new_syntax(value: str, what: str) -> list[str]:
    """Split a double-quoted new-syntax ``arguments``/``environment`` value into words."""
    value = value.strip()
    if not (len(value) >= 2 and value[0] == value[-1] == '"'):
        # Old syntax: no quoting; environment entries are separated by ';'.
        return [w for w in value.split(";" if what == "environment" else None) if w]
    body = value[1:-1].replace('""', '"')
    words: list[str] = []
    current: list[str] = []
    in_word = False
    i = 0
    while i < len(body):
        ch = body[i]
        if ch == "'":
            end = i + 1
            while True:
                end = body.find("'", end)
                if end < 0:
                    raise ScheddError(f"unterminated single quote in {what}: {value}")
                if body[end + 1:end + 2] == "'":
                    end += 2
                    continue
                break
            current.append(body[i + 1:end].replace("''", "'"))
            in_word = True
            i = end + 1
            continue
        if ch.isspace():
            if in_word:
                words.append("".join(current))
                current, in_word = [], False
        else:
            current.append(ch)
            in_word = True
        i += 1
    if in_word:
        words.append("".join(current))
    return words


def _v2_quote(word: str) -> str:
    if word and not any(c.isspace() or c in "'\"" for c in word):
        return word
    return "'" + word.replace("'", "''") + "'"


_MACRO = re.compile(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)")


# ====================================================================== the schedd


@dataclass
class _Job:
    cluster: int
    proc: int
    ad: dict[str, Any]
    spool: Path
    client_files: dict[str, Path]  # what spool() uploads: name in sandbox -> client path
    process: subprocess.Popen[bytes] | None = None
    scratch: Path | None = None
    started: float = 0.0
    deadline: float | None = None
    input_names: list[str] = field(default_factory=list)
    removed_at: float | None = None

    @property
    def job_id(self) -> str:
        return f"{self.cluster}.{self.proc}"

    @property
    def status(self) -> int:
        return int(self.ad["JobStatus"])


class FakeSchedd:
    """A schedd (plus collector, negotiator and a 4-slot startd) in this process."""

    def __init__(self, version: str, *, client_version: str = "25.14.1",
                 periodic_expr_interval: float = 0.2, slots: int = 4,
                 removed_linger: float = REMOVED_LINGER,
                 owner: str = "submitter", uid_domain: str = "pytest-stacks.test") -> None:
        self.version = parse_condor_version(version)
        self.client = parse_condor_version(client_version)
        self.periodic_expr_interval = float(periodic_expr_interval)
        self.removed_linger = float(removed_linger)
        self.slots = slots
        self.owner = owner
        self.uid_domain = uid_domain
        self.root = Path(tempfile.mkdtemp(prefix="pytest-stacks-fake-htcondor-"))
        (self.root / "spool").mkdir()
        (self.root / "execute").mkdir()
        self._clusters = itertools.count(1)
        self._scratch_ids = itertools.count(1)
        self._queue: dict[str, _Job] = {}
        self._history: list[dict[str, Any]] = []  # oldest first
        self._lock = threading.RLock()
        self._next_eval = time.monotonic() + self.periodic_expr_interval
        self._log: list[str] = []
        self._closed = False
        self._log_line(f"** condor_schedd (fake) {self.version} starting, client "
                       f"{self.client}, PERIODIC_EXPR_INTERVAL={self.periodic_expr_interval}")

    # -------------------------------------------------------------- versions

    def daemon_version(self) -> str:
        return f"$CondorVersion: {self.version} (pytest-stacks fake) $"

    def client_version(self) -> str:
        return f"$CondorVersion: {self.client} (pytest-stacks fake client) $"

    @property
    def one_shot_client(self) -> bool:
        return version_tuple(self.client) >= ONE_SHOT_SINCE

    # -------------------------------------------------------------- submit and spool

    def submit(self, description: Mapping[str, str], *, spool: bool = True,
               count: int = 1) -> Submitted:
        with self._lock:
            self._check_open()
            self._tick()
            if not spool:
                raise ScheddError("the fake schedd is remote: submit with spool=True (it shares "
                                  "no filesystem with the client)")
            desc = {k.lower(): str(v) for k, v in description.items()}
            cluster = next(self._clusters)
            jobs = [self._make_job(desc, description, cluster, proc)
                    for proc in range(max(1, count))]
            for job in jobs:
                self._queue[job.job_id] = job
                self._log_line(f"Submitting new job {job.job_id} (held: spooling input)")
            return Submitted(cluster=cluster, first_proc=0, num_procs=len(jobs),
                             native=[j.job_id for j in jobs])

    def _make_job(self, desc: Mapping[str, str], raw: Mapping[str, str], cluster: int,
                  proc: int) -> _Job:
        def expand(value: str) -> str:
            macros = {"cluster": str(cluster), "clusterid": str(cluster), "process": str(proc),
                      "procid": str(proc)}
            return _MACRO.sub(lambda m: macros.get(m.group(1).lower(), ""), value)

        universe = desc.get("universe", "vanilla").lower()
        if universe != "vanilla":
            raise ScheddError(f"universe {universe!r} is not modelled by the fake")
        executable = expand(desc.get("executable", ""))
        if not executable:
            raise ScheddError("Submit:0:No 'executable' parameter was provided")
        # The bindings resolve the executable against the client's working directory.
        # (read only when spool() uploads it: a missing one fails there, leaving the job held)
        exe_path = Path(executable) if os.path.isabs(executable) else Path.cwd() / executable
        iwd_raw = expand(desc.get("initialdir", desc.get("iwd", "")))
        iwd = Path(iwd_raw) if iwd_raw and os.path.isabs(iwd_raw) else Path.cwd() / iwd_raw
        if desc.get("should_transfer_files", "").upper() != "YES":
            raise ScheddError("the fake pool shares no filesystem: should_transfer_files = YES "
                              "is required")
        now = int(time.time())
        spool = self.root / "spool" / str(cluster % 10000) / str(proc) / (
            f"cluster{cluster}.proc{proc}.subproc0")
        client_files: dict[str, Path] = {EXECUTABLE_NAME: exe_path}
        inputs = [s.strip() for s in expand(desc.get("transfer_input_files", "")).split(",")
                  if s.strip()]
        input_names = []
        for item in inputs:
            path = Path(item) if os.path.isabs(item) else iwd / item
            client_files[path.name] = path
            input_names.append(path.name)
        argv = _parse_new_syntax(expand(desc.get("arguments", "")), "arguments")
        environment: dict[str, str] = {}
        for word in _parse_new_syntax(expand(desc.get("environment", "")), "environment"):
            key, sep, value = word.partition("=")
            if not sep or not key:
                raise ScheddError(f"Submit:0:Error in environment: {word!r} is not NAME=value")
            environment[key] = value
        ad: dict[str, Any] = {
            "ClusterId": cluster, "ProcId": proc,
            "GlobalJobId": f"fake-schedd#{cluster}.{proc}#{now}",
            "Owner": self.owner, "User": f"{self.owner}@{self.uid_domain}",
            # A spooled job's paths are rewritten to the spool; the client's are kept as
            # SUBMIT_* (as 23.9.6 shows them).
            "JobUniverse": 5, "Cmd": exe_path.name, "SUBMIT_Cmd": str(exe_path),
            "Iwd": str(spool), "SUBMIT_Iwd": str(iwd), "JobSubmitMethod": 2,
            "SubmitVersion": self.client_version(), "TotalSubmitProcs": 1,
            "Arguments": " ".join(_v2_quote(w) for w in argv),
            "Environment": " ".join(f"{k}={_v2_quote(v)}" for k, v in environment.items()),
            "_Argv": argv, "_Env": environment,
            "In": "/dev/null",
            "Out": expand(desc.get("output", "/dev/null")),
            "Err": expand(desc.get("error", "/dev/null")),
            "TransferIn": False,
            "ShouldTransferFiles": "YES",
            "WhenToTransferOutput": desc.get("when_to_transfer_output", "ON_EXIT").upper(),
            "RequestCpus": int(desc.get("request_cpus", "1")),
            "QDate": now, "EnteredCurrentStatus": now,
            "JobStatus": 5, "HoldReasonCode": 16, "HoldReasonSubCode": 0,
            "HoldReason": "Spooling input data files",
            "NumJobStarts": 0, "ExitBySignal": False,
            "CondorVersion": self.client_version(),
        }
        if inputs:
            ad["TransferInput"] = ",".join(Path(i).name for i in inputs)
            ad["SUBMIT_TransferInput"] = ",".join(inputs)
        if "transfer_output_files" in desc:
            ad["TransferOutput"] = expand(desc["transfer_output_files"])
        if "batch_name" in desc:
            ad["JobBatchName"] = expand(desc["batch_name"])
        if "allowed_execute_duration" in desc:
            ad["AllowedExecuteDuration"] = int(desc["allowed_execute_duration"])
        leave = desc.get("leave_in_queue")
        if leave is None:
            # The submitting client's default for spooled jobs (HTCONDOR-3508 from 25.8.2).
            leave = NEW_LEAVE_IN_QUEUE if self.one_shot_client else OLD_LEAVE_IN_QUEUE
        try:
            ad["LeaveJobInQueue"] = Expr(leave)
        except ClassAdSyntaxError as exc:
            raise ScheddError(f"Submit:0:Parse error in expression leave_in_queue: {exc}") from exc
        for key, value in raw.items():
            if key.startswith("+") or key.upper().startswith("MY."):
                name = key[1:] if key.startswith("+") else key[3:]
                try:
                    ad[name] = Expr(value).eval({})
                except ClassAdSyntaxError:
                    ad[name] = Expr(value)
        return _Job(cluster, proc, ad, spool, client_files, input_names=input_names)

    def spool(self, submitted: Submitted) -> None:
        with self._lock:
            self._check_open()
            for job_id in submitted.native or []:
                job = self._queue.get(job_id)
                if job is None:
                    raise ScheddError(f"spool: job {job_id} is not in the queue")
                missing = [str(p) for p in job.client_files.values() if not p.is_file()]
                if missing:  # the job stays held (spooling) in the queue, as for real
                    raise ScheddError(
                        f"DCSchedd::spoolJobFiles:7002:File transfer failed for target job "
                        f"{job_id}: TOOL at 127.0.0.1 failed to send file(s) to <127.0.0.1:9618>:"
                        f" |Error: 1 total failures: first failure: reading from file "
                        f"{missing[0]}: (errno 2) No such file or directory")
                now = int(time.time())
                job.ad["StageInStart"] = now
                job.spool.mkdir(parents=True, exist_ok=True)
                for name, path in job.client_files.items():
                    shutil.copy2(path, job.spool / name)
                job.ad["StageInFinish"] = now
                self._set_status(job, 1)
                for key in ("HoldReason", "HoldReasonCode", "HoldReasonSubCode"):
                    job.ad.pop(key, None)
                self._log_line(f"Job {job_id} spooled, released")
            self._tick()

    # -------------------------------------------------------------- retrieval

    def retrieve(self, job_id: str) -> None:
        with self._lock:
            self._check_open()
            self._tick()
            job = self._queue.get(job_id)
            if job is None:
                # The real bindings raise nothing and write nothing here.
                self._log_line(f"Transfer data request for {job_id}: no such job in the queue")
                return
            if job.status != 4:
                raise ScheddError(f"Failed to retrieve job {job_id}: job is "
                                  f"{STATUS_NAMES.get(job.status)}, output not available")
            now = int(time.time())
            job.ad["StageOutStart"] = now
            iwd = Path(job.ad["SUBMIT_Iwd"])
            if not iwd.is_dir():
                raise ScheddError(f"Failed to retrieve job {job_id}: cannot write to {iwd}")
            for name in self._returned_outputs(job):
                shutil.copy2(job.spool / name, iwd / name)
            for attr, sandbox_name in (("Out", STDOUT_NAME), ("Err", STDERR_NAME)):
                target = str(job.ad.get(attr, "/dev/null"))
                if target != "/dev/null" and (job.spool / sandbox_name).is_file():
                    dest = Path(target) if os.path.isabs(target) else iwd / target
                    shutil.copy2(job.spool / sandbox_name, dest)
            job.ad["StageOutFinish"] = int(time.time())
            self._log_line(f"Transferred output of job {job_id} to the client")

    def _returned_outputs(self, job: _Job) -> list[str]:
        return list(job.ad.get("_ReturnedOutputs", []))

    # -------------------------------------------------------------- actions

    def act(self, action: str, job_ids: Sequence[str], reason: str = "") -> dict[str, Any]:
        with self._lock:
            self._check_open()
            self._tick()
            if action.lower() != "remove":
                raise ScheddError(f"action {action!r} is not modelled by the fake")
            totals = {"TotalSuccess": 0, "TotalNotFound": 0, "TotalAlreadyDone": 0,
                      "TotalBadStatus": 0, "TotalPermissionDenied": 0, "TotalError": 0,
                      "TotalJobAds": len(job_ids), "TotalChangedAds": 0}
            for job_id in job_ids:
                job = self._queue.get(job_id)
                if job is None:
                    totals["TotalNotFound"] += 1
                    continue
                if job.status == 3:
                    totals["TotalAlreadyDone"] += 1
                    continue
                if job.status == 2:  # the starter kills the job with SIGTERM
                    job.ad.update({"ExitBySignal": True, "ExitSignal": 15})
                    job.ad.pop("ExitCode", None)
                self._stop(job)
                job.ad["RemoveReason"] = (f"{reason or 'Python-initiated action'} "
                                          f"(by user {self.owner})")
                self._set_status(job, 3)
                job.removed_at = time.monotonic()
                totals["TotalSuccess"] += 1
                totals["TotalChangedAds"] += 1
                self._log_line(f"Job {job_id} marked for removal")
            return totals

    def edit(self, job_ids: Sequence[str], attribute: str, value: str) -> int:
        with self._lock:
            self._check_open()
            self._tick()
            if attribute.lower() in IMMUTABLE or attribute.startswith("_"):
                raise ScheddError(f"edit: Unable to edit attribute {attribute}: permission "
                                  f"denied")
            try:
                expr = Expr(value)
            except ClassAdSyntaxError as exc:
                raise ScheddError(f"edit: Unable to parse {value!r}: {exc}") from exc
            parsed = expr.eval({})
            matched = 0
            for job_id in job_ids:
                job = self._queue.get(job_id)
                if job is None:
                    continue
                known = {k.lower(): k for k in job.ad}
                key = known.get(attribute.lower(), attribute)
                # A literal is stored as its value (the bindings then show False, not
                # "false"); anything else stays an expression.
                job.ad[key] = expr if parsed is UNDEFINED or parsed is ERROR else parsed
                matched += 1
                self._log_line(f"Job {job_id}: {key} = {value}")
            return matched

    # -------------------------------------------------------------- queries

    def query(self, constraint: str = "true",
              projection: Sequence[str] = ()) -> list[dict[str, Any]]:
        with self._lock:
            self._check_open()
            self._tick()
            expr = self._constraint(constraint)
            now = int(time.time())
            return [self._project(job.ad, projection) for job in self._queue.values()
                    if expr.is_true(job.ad, now)]

    def history(self, constraint: str = "true", projection: Sequence[str] = (),
                match: int = -1) -> list[dict[str, Any]]:
        with self._lock:
            self._check_open()
            self._tick()
            expr = self._constraint(constraint)
            now = int(time.time())
            out: list[dict[str, Any]] = []
            for ad in reversed(self._history):
                if match >= 0 and len(out) >= match:
                    break
                if expr.is_true(ad, now):
                    out.append(self._project(ad, projection))
            return out

    @staticmethod
    def _constraint(text: str) -> Expr:
        try:
            return Expr(text or "true")
        except ClassAdSyntaxError as exc:
            raise ScheddError(f"Invalid constraint: {exc}") from exc

    @staticmethod
    def _project(ad: Mapping[str, Any], projection: Sequence[str]) -> dict[str, Any]:
        wanted = {p.lower() for p in projection}
        out: dict[str, Any] = {}
        for key, value in ad.items():
            if key.startswith("_") or (wanted and key.lower() not in wanted):
                continue
            out[key] = str(value) if isinstance(value, Expr) else value
        return out

    # -------------------------------------------------------------- the schedd's clock

    def run_periodic(self) -> None:
        """Run the periodic policy evaluation now (what PERIODIC_EXPR_INTERVAL schedules)."""
        with self._lock:
            self._poll_jobs()
            self._evaluate_periodic()

    def _tick(self) -> None:
        self._poll_jobs()
        self._reap_removed()
        mono = time.monotonic()
        if mono >= self._next_eval:
            self._evaluate_periodic()
            interval = max(self.periodic_expr_interval, 1e-3)
            missed = int((mono - self._next_eval) // interval) + 1
            self._next_eval += missed * interval
        self._start_idle()

    def _poll_jobs(self) -> None:
        for job in list(self._queue.values()):
            if job.status != 2 or job.process is None:
                continue
            code = job.process.poll()
            if code is None:
                if job.deadline is not None and time.monotonic() > job.deadline:
                    self._stop(job)
                    limit = job.ad.get("AllowedExecuteDuration")
                    self._hold(job, 47, f"The job exceeded allowed execute duration of "
                                        f"{limit}s")
                continue
            self._finish(job, code)

    def _start_idle(self) -> None:
        running = sum(1 for j in self._queue.values() if j.status == 2)
        for job in list(self._queue.values()):
            if running >= self.slots:
                break
            if job.status == 1:
                self._start(job)
                running += 1

    def _start(self, job: _Job) -> None:
        scratch = self.root / "execute" / f"dir_{next(self._scratch_ids)}"
        scratch.mkdir()
        for item in job.spool.iterdir():
            shutil.copy2(item, scratch / item.name)
        job.scratch = scratch
        env = self._job_environment(job, scratch)
        argv = [str(scratch / EXECUTABLE_NAME), *job.ad["_Argv"]]
        now = int(time.time())
        job.ad["NumJobStarts"] = int(job.ad.get("NumJobStarts", 0)) + 1
        job.ad["JobCurrentStartDate"] = now
        job.ad["JobStartDate"] = job.ad.get("JobStartDate", now)
        self._set_status(job, 2)
        with open(scratch / STDOUT_NAME, "wb") as out, open(scratch / STDERR_NAME, "wb") as err:
            try:
                job.process = subprocess.Popen(
                    argv, cwd=scratch, env=env, stdout=out, stderr=err,
                    stdin=subprocess.DEVNULL, start_new_session=True)
            except OSError as exc:
                job.process = None
                self._hold(job, 6, f"Error from slot1@fake: Failed to execute "
                                   f"'{argv[0]}': {exc.strerror}")
                return
        job.started = time.monotonic()
        limit = job.ad.get("AllowedExecuteDuration")
        job.deadline = job.started + float(limit) if isinstance(limit, int) and limit > 0 else None
        self._log_line(f"Started job {job.job_id} in {scratch.name}")

    def _job_environment(self, job: _Job, scratch: Path) -> dict[str, str]:
        env: dict[str, str] = dict(job.ad["_Env"])
        env.update({
            "_CONDOR_SCRATCH_DIR": str(scratch), "_CONDOR_SLOT": "slot1",
            "TMPDIR": str(scratch), "TMP": str(scratch), "TEMP": str(scratch),
            "BATCH_SYSTEM": "HTCondor", "CONDOR_PROCID": str(job.proc),
            "_CONDOR_JOB_IWD": str(scratch), "OMP_NUM_THREADS": str(job.ad["RequestCpus"]),
        })
        return env

    def _finish(self, job: _Job, code: int) -> None:
        assert job.scratch is not None
        job.process = None
        now = int(time.time())
        if code < 0:
            job.ad.update({"ExitBySignal": True, "ExitSignal": -code})
            job.ad.pop("ExitCode", None)
        else:
            job.ad.update({"ExitBySignal": False, "ExitCode": code})
        # Output transfer back to the spool, as the starter does ON_EXIT.
        declared = [s.strip() for s in str(job.ad.get("TransferOutput", "")).split(",")
                    if s.strip()]
        if "TransferOutput" in job.ad:
            missing = [n for n in declared if not (job.scratch / n).exists()]
            if missing:
                self._hold(job, 12, (
                    f"Transfer output files failure at execution point slot1_1@fake while "
                    f"sending files to access point fake. Details: reading from file "
                    f"{job.scratch / missing[0]}: (errno 2) No such file or directory"),
                    subcode=2)
                return
            names = declared
        else:
            # Without transfer_output_files: every new or modified file in the scratch dir.
            names = [p.name for p in sorted(job.scratch.iterdir())
                     if p.is_file() and p.name not in (EXECUTABLE_NAME, STDOUT_NAME, STDERR_NAME)
                     and not (p.name in job.input_names and _same_file(p, job.spool / p.name))]
        for name in [*names, STDOUT_NAME, STDERR_NAME]:
            source = job.scratch / name
            if source.is_file():
                shutil.copy2(source, job.spool / Path(name).name)
        job.ad["_ReturnedOutputs"] = [Path(n).name for n in names]
        job.ad["SpooledOutputFiles"] = ",".join(job.ad["_ReturnedOutputs"])
        shutil.rmtree(job.scratch, ignore_errors=True)
        job.scratch = None
        job.ad["CompletionDate"] = now
        job.ad["RemoteWallClockTime"] = float(round(time.monotonic() - job.started, 3))
        self._set_status(job, 4)
        self._log_line(f"Job {job.job_id} terminated: "
                       + (f"signal {-code}" if code < 0 else f"exited normally with status {code}"))
        # The shadow's exit path evaluates LeaveJobInQueue right away.
        if not self._leave_in_queue(job, now):
            self._leave_queue(job)

    def _hold(self, job: _Job, code: int, reason: str, subcode: int = 0) -> None:
        if job.scratch is not None:
            shutil.rmtree(job.scratch, ignore_errors=True)
            job.scratch = None
        job.ad.update({"HoldReason": reason, "HoldReasonCode": code,
                       "HoldReasonSubCode": subcode})
        self._set_status(job, 5)
        self._log_line(f"Job {job.job_id} put on hold: {reason}")

    def _stop(self, job: _Job) -> None:
        if job.process is not None and job.process.poll() is None:
            os.killpg(job.process.pid, signal.SIGKILL)
            job.process.wait()
        job.process = None
        if job.scratch is not None:
            shutil.rmtree(job.scratch, ignore_errors=True)
            job.scratch = None

    def _set_status(self, job: _Job, status: int) -> None:
        if job.ad.get("JobStatus") != status:
            job.ad["LastJobStatus"] = job.ad.get("JobStatus", 0)
            job.ad["JobStatus"] = status
            job.ad["EnteredCurrentStatus"] = int(time.time())

    @staticmethod
    def _leave_in_queue(job: _Job, now: int) -> bool:
        policy = job.ad.get("LeaveJobInQueue", False)
        if isinstance(policy, Expr):
            return policy.is_true(job.ad, now)
        return _truthy(policy)

    def _evaluate_periodic(self) -> None:
        now = int(time.time())
        for job in list(self._queue.values()):
            if job.status == 4 and not self._leave_in_queue(job, now):
                self._leave_queue(job)

    def _reap_removed(self) -> None:
        # A removed job leaves once its shadow is gone: about 0.3 s on 23.9.6, not tied to
        # the periodic evaluation.
        mono = time.monotonic()
        for job in list(self._queue.values()):
            if job.status == 3 and job.removed_at is not None and \
                    mono - job.removed_at >= self.removed_linger:
                self._leave_queue(job)

    def _leave_queue(self, job: _Job) -> None:
        self._queue.pop(job.job_id, None)
        shutil.rmtree(job.spool.parent, ignore_errors=True)  # the job's spool goes with it
        final = {k: v for k, v in job.ad.items() if not k.startswith("_")}
        final["EnteredHistoryTime"] = int(time.time())
        self._history.append(final)
        self._log_line(f"Job {job.job_id} left the queue (JobStatus "
                       f"{job.status}), moved to history")

    # -------------------------------------------------------------- lifecycle

    def _check_open(self) -> None:
        if self._closed:
            raise ScheddError("Failed to connect to the schedd: the fake schedd is closed")

    def _log_line(self, text: str) -> None:
        stamp = time.strftime("%m/%d/%y %H:%M:%S")
        self._log.append(f"{stamp} {text}")

    def daemon_log(self) -> str:
        with self._lock:
            return "\n".join(["# SchedLog (fake)", *self._log[-300:]])

    def close(self) -> None:
        with self._lock:
            for job in self._queue.values():
                self._stop(job)
            self._closed = True
        shutil.rmtree(self.root, ignore_errors=True)


def _same_file(a: Path, b: Path) -> bool:
    try:
        return a.stat().st_mtime == b.stat().st_mtime and a.read_bytes() == b.read_bytes()
    except OSError:
        return False
