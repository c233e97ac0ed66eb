"""The jobs a run's tests submitted on an existing deployment, and what its teardown may say of
them.

A site's teardown sweeps what carries the run's tag (a Slurm comment, an HTCondor attribute, a
Kubernetes label): what pytest-stacks' own client made. That proves nothing about a job whose
tag a site rewrote (a job_submit plugin, an admission policy), nor about the jobs a suite's own
client (``pytest_stacks_backend``) submitted without one. So every process of the run writes
here the ids its tests' submits returned, with whose client returned them; at the end the
owner has the site look each of ours up by id (:class:`~pytest_stacks.backends.site_account.
JobAccount`) and says which it found gone, which are left, and which it cannot vouch for:
the suite's own client's, "not tracked", never "gone".

One JSON line per job in ``<run dir>/<stack>.submitted.jsonl``, appended with one write per
submit (``O_APPEND``: lines of several processes never interleave).
"""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pytest_stacks.backends.site_account import JobAccount, shown

OURS, SUITES = "pytest-stacks", "suite"


@dataclass(frozen=True)
class Submitted:
    """Ids the run's submits returned: by pytest-stacks' client (tagged with the run), and
    by the suite's own client (whatever it tags)."""

    ours: tuple[str, ...] = ()
    suites: tuple[str, ...] = ()


def _path(run_dir: Path, stack: str) -> Path:
    return run_dir / f"{stack}.submitted.jsonl"


def note(run_dir: Path, stack: str, job_ids: Sequence[str], *, ours: bool) -> None:
    """Called by the run's recording client after each submit that returned ids."""
    client = OURS if ours else SUITES
    lines = "".join(json.dumps({"id": str(i), "client": client}) + "\n" for i in job_ids)
    if not lines:
        return
    fd = os.open(_path(run_dir, stack), os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, lines.encode())
    finally:
        os.close(fd)


def forget(run_dir: Path, stack: str) -> None:
    """After a teardown that accounted for them: a stack brought up again in the same run
    (ended early, then asked for) starts a list of its own."""
    _path(run_dir, stack).unlink(missing_ok=True)


def read(run_dir: Path, stack: str) -> Submitted:
    try:
        text = _path(run_dir, stack).read_text()
    except FileNotFoundError:
        return Submitted()
    found: dict[str, list[str]] = {OURS: [], SUITES: []}
    for line in text.splitlines():
        try:  # a line cut short by a killed process is no id: the run tag's sweep covers it
            entry = json.loads(line)
            found[str(entry["client"])].append(str(entry["id"]))
        except (ValueError, KeyError, TypeError):
            continue
    return Submitted(tuple(dict.fromkeys(found[OURS])), tuple(dict.fromkeys(found[SUITES])))


def said(submitted: Submitted, account: JobAccount | None) -> list[str]:
    """What teardown may say of the submitted jobs, one line each (none when none was
    submitted): ``account`` None where the site cannot look a job up by its id."""
    lines = []
    if submitted.ours and account is None:
        lines.append(f"the {len(submitted.ours)} job(s) pytest-stacks' client submitted "
                     f"({shown(submitted.ours)}) were not looked up by id: this site's "
                     f"teardown proves only that no job carrying the run's tag is left")
    elif account is not None and account.gone:
        lines.append(f"looked up by id in {account.where or 'the site'} after the run's "
                     f"end, {len(account.gone)} job(s) of the run are gone: "
                     f"{shown(account.gone)}")
    if submitted.suites:
        lines.append(f"not tracked: {len(submitted.suites)} job(s) the suite's own client "
                     f"(pytest_stacks_backend) submitted ({shown(submitted.suites)}); "
                     f"teardown neither ended nor looked for them, and does not say they "
                     f"are gone")
    return lines
