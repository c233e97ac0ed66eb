"""What the submitting client and the schedd make of a submit description: the job's ad.

This is the fake's own model of the *client* side too, because HTCondor lets the client decide
part of a job's policy: from 25.8.2 (HTCONDOR-3508) the client, not the schedd, writes the
``LeaveJobInQueue`` that makes output retrieval one-shot.
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_stacks.backends.htcondor.api import ScheddError, version_tuple
from pytest_stacks.backends.htcondor.fake.classad import ClassAdSyntaxError, Expr
from pytest_stacks.backends.htcondor.fake.starter import EXECUTABLE_NAME

# The client's facts below are the fake's own copies, not imported from the driver: a fake that
# imports what the driver believes would agree with the driver forever, and the one-shot tests
# would then check the driver against itself.
#
# Sources: the HTCondor 25.8.2 release note for HTCONDOR-3508 ("Jobs that were submitted with
# spooled data files and have completed will now leave the queue after a successful retrieval
# of their output files"; not in the 25.0 LTS line), as recorded in the project's BACKENDS.md
# notes (one-shot section); and tests/data/htcondor/OBSERVED.md section 4 (a 25.14.1 client
# against a 23.9.6 schedd, captured in verify_stack.out.txt).

#: The first client version that writes the one-shot default (HTCONDOR-3508, 25.8.2).
ONE_SHOT_SINCE = (25, 8, 2)
#: The default ``LeaveJobInQueue`` of spooled jobs from a 25.8.2+ client, as the 25.14.1
#: bindings wrote it (OBSERVED.md section 4): true until a retrieval finishes.
NEW_LEAVE_IN_QUEUE = (
    "JobStatus == 4 && (time() - (CompletionDate ?: time())) < 864000 && "
    "(StageOutFinish ?: 0) < EnteredCurrentStatus"
)
#: The default of older clients: keep a completed spooled job for ten days (BACKENDS.md:
#: "before, it kept completed spooled jobs for 10 days"). The text is the one verify_stack.py
#: submits as ``leave_in_queue`` and OBSERVED.md section 4 shows re-printed by the schedd.
OLD_LEAVE_IN_QUEUE = (
    "JobStatus == 4 && (CompletionDate =?= UNDEFINED || CompletionDate == 0 || "
    "((time() - CompletionDate) < 864000))"
)


def is_one_shot_client(client_version: str) -> bool:
    return version_tuple(client_version) >= ONE_SHOT_SINCE


@dataclass(frozen=True)
class Submitter:
    """Who submits: the owner's identity and the client's version."""

    owner: str
    uid_domain: str
    client_version: str  # as the client prints it ($CondorVersion: ... $)


@dataclass(frozen=True)
class ParsedJob:
    """A job ad plus what ``spool`` must upload for it."""

    ad: dict[str, Any]
    client_files: dict[str, Path]  # what spool() uploads: name in sandbox -> client path
    input_names: list[str]


def parse_job(description: Mapping[str, str], cluster: int, proc: int, spool: Path,
              who: Submitter) -> ParsedJob:
    """The ad of proc ``proc`` of ``cluster`` for ``description``, spooled into ``spool``.

    Raises ScheddError with the message the real submit gives, where the fake knows it.
    """
    desc = {k.lower(): str(v) for k, v in description.items()}
    urls = [v for k, v in desc.items() if k in ("transfer_input_files", "transfer_output_remaps",
                                                  "output_destination") and "://" in v]
    if urls:  # a pool with no plugin: the real one would leave the job idle forever
        raise ScheddError("the fake pool has no file transfer plugins: it cannot stage "
                          f"URLs ({urls[0][:120]}); only a real pool stages remote files")
    expand = _expander(cluster, proc)
    exe_path, iwd = _paths(desc, expand)
    inputs = [s.strip() for s in expand(desc.get("transfer_input_files", "")).split(",")
              if s.strip()]
    client_files: dict[str, Path] = {EXECUTABLE_NAME: exe_path}
    input_names = []
    for item in inputs:
        path = Path(item) if os.path.isabs(item) else iwd / item
        client_files[path.name] = path
        input_names.append(path.name)
    ad = _base_ad(desc, expand, cluster, proc, exe_path, iwd, spool, who)
    _optional_attributes(ad, desc, expand, inputs)
    ad["LeaveJobInQueue"] = _leave_in_queue(desc, who.client_version)
    _custom_attributes(ad, description)
    return ParsedJob(ad, client_files, input_names)


def _expander(cluster: int, proc: int) -> Callable[[str], str]:
    macros = {"cluster": str(cluster), "clusterid": str(cluster), "process": str(proc),
              "procid": str(proc)}

    def expand(value: str) -> str:
        return _MACRO.sub(lambda m: macros.get(m.group(1).lower(), ""), value)

    return expand


def _paths(desc: Mapping[str, str], expand: Callable[[str], str]) -> tuple[Path, Path]:
    """(executable, initialdir) as the client resolves them."""
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
    return exe_path, iwd


def _argv_and_environment(desc: Mapping[str, str], expand: Callable[[str], str],
                          ) -> tuple[list[str], dict[str, str]]:
    argv = _parse_new_syntax(expand(desc.get("arguments", "")), "arguments")
    environment: dict[str, str] = {}
    for word in _parse_new_syntax(expand(desc.get("environment", "")), "environment"):
        key, sep, value = word.partition("=")
        if not sep or not key:
            raise ScheddError(f"Submit:0:Error in environment: {word!r} is not NAME=value")
        environment[key] = value
    return argv, environment


def _base_ad(desc: Mapping[str, str], expand: Callable[[str], str], cluster: int, proc: int,
             exe_path: Path, iwd: Path, spool: Path, who: Submitter) -> dict[str, Any]:
    """The attributes every job gets; it starts held until ``spool`` uploads its files."""
    argv, environment = _argv_and_environment(desc, expand)
    now = int(time.time())
    return {
        "ClusterId": cluster, "ProcId": proc,
        "GlobalJobId": f"fake-schedd#{cluster}.{proc}#{now}",
        "Owner": who.owner, "User": f"{who.owner}@{who.uid_domain}",
        # A spooled job's paths are rewritten to the spool; the client's are kept as
        # SUBMIT_* (as 23.9.6 shows them).
        "JobUniverse": 5, "Cmd": exe_path.name, "SUBMIT_Cmd": str(exe_path),
        "Iwd": str(spool), "SUBMIT_Iwd": str(iwd), "JobSubmitMethod": 2,
        "SubmitVersion": who.client_version, "TotalSubmitProcs": 1,
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
        "CondorVersion": who.client_version,
    }


def _optional_attributes(ad: dict[str, Any], desc: Mapping[str, str],
                         expand: Callable[[str], str], inputs: list[str]) -> None:
    if inputs:
        ad["TransferInput"] = ",".join(Path(i).name for i in inputs)
        ad["SUBMIT_TransferInput"] = ",".join(inputs)
    if "transfer_output_files" in desc:
        # condor_submit reads a bare `""` as the empty list (TransferOutput = ""): no
        # outputs but stdout/stderr, where leaving the command out returns every new file.
        outputs = expand(desc["transfer_output_files"])
        ad["TransferOutput"] = "" if outputs.strip() == '""' else outputs
    if "batch_name" in desc:
        ad["JobBatchName"] = expand(desc["batch_name"])
    if "allowed_execute_duration" in desc:
        ad["AllowedExecuteDuration"] = int(desc["allowed_execute_duration"])
    if desc.get("hold", "false").lower() in ("true", "1"):
        # Every fake submit is spooled; the 25.14.1 bindings refuse this at submit (seen here).
        raise ScheddError("Submit:-1:Cannot set hold to 'true' when using -remote or -spool")
    for key, attribute in (("periodic_remove", "PeriodicRemove"),
                           ("requirements", "Requirements")):
        if key in desc:
            try:
                ad[attribute] = Expr(expand(desc[key]))
            except ClassAdSyntaxError as exc:
                raise ScheddError(f"Submit:0:Parse error in expression {key}: "
                                  f"{exc}") from exc


def _leave_in_queue(desc: Mapping[str, str], client_version: str) -> Expr:
    leave = desc.get("leave_in_queue")
    if leave is None:
        # The submitting client's default for spooled jobs (HTCONDOR-3508 from 25.8.2).
        leave = NEW_LEAVE_IN_QUEUE if is_one_shot_client(client_version) else OLD_LEAVE_IN_QUEUE
    try:
        return Expr(leave)
    except ClassAdSyntaxError as exc:
        raise ScheddError(f"Submit:0:Parse error in expression leave_in_queue: {exc}") from exc


def _custom_attributes(ad: dict[str, Any], raw: Mapping[str, str]) -> None:
    """``+Name`` / ``MY.Name`` lines: a literal is stored as its value, else as an expression."""
    for key, value in raw.items():
        if key.startswith("+") or key.upper().startswith("MY."):
            name = key[1:] if key.startswith("+") else key[3:]
            try:
                ad[name] = Expr(value).eval({})
            except ClassAdSyntaxError:
                ad[name] = Expr(value)


# ====================================================================== the submit language


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
