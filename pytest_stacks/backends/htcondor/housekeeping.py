"""Waiting for the schedd's periodic evaluation, as the schedd reports it.

Whether a finished job stays in the queue (``LeaveJobInQueue``, the one-shot retrieval of
HTCONDOR-3508) is decided at the schedd's periodic evaluation of its jobs' policies. A test
that must see that decision waits for an evaluation to have happened; sleeping a multiple of
``PERIODIC_EXPR_INTERVAL`` would guess, since the schedd stretches the interval under load
(``PERIODIC_EXPR_TIMESLICE``). The witness below makes the schedd say it.
"""

from __future__ import annotations

import contextlib
import shutil
import uuid
from pathlib import Path
from typing import Any

from pytest_stacks.backends.htcondor.api import Schedd, ScheddError
from pytest_stacks.backends.htcondor.translate import describe_job, job_constraint
from pytest_stacks.contract import JobSpec
from pytest_stacks.polling import poll_until

WITNESS_NAME = "pytest-stacks-witness"


def await_periodic_evaluation(schedd: Schedd, job_root: Path, timeout: float) -> None:
    """Return once ``schedd`` has run a periodic evaluation that began after this call.

    A witness job that no slot matches (``requirements = false``: it stays idle and never
    runs) carries ``periodic_remove = true``, which only a periodic evaluation acts on. That
    evaluation walks the whole queue in one pass of a single-threaded daemon, so once the
    witness reads as removed, every other job's periodic policy has been evaluated after this
    call. Raises TimeoutError (the witness removed by us) if none ran within ``timeout``.
    """
    root = job_root / f"witness-{uuid.uuid4().hex[:12]}"
    try:
        description = describe_job(JobSpec(script="true\n", name=WITNESS_NAME), root, None)
        # Never matched is how it stays out of every slot (a remote submit cannot ask for
        # `hold`: "Cannot set hold to 'true' when using -remote or -spool"). Not spooled: it
        # never runs, so it needs no files, and a spooled job stays held about a second after
        # its files are in (the schedd's spool worker sleeps on purpose), where periodic
        # evaluation skips it (seen on 23.9.6: removed 0.9-1.0 s after the call, 2.0 s
        # spooled).
        description.update({"requirements": "false", "periodic_remove": "true"})
        submitted = schedd.submit(description, spool=False, count=1)
        [witness] = submitted.job_ids

        # Asked after 0.02 s, backing off to every 0.1 s: the schedd answers from memory in
        # about 5 ms, and a witness seen half of a 0.5 s poll late was a quarter of a one-shot
        # test's wait (the doubles evaluate every 0.05 s: a first ask at 0.1 s was 0.13 s).
        def ask() -> list[dict[str, Any]]:
            return list(schedd.query(job_constraint([witness]), ["JobStatus"]))

        try:
            poll_until(ask, lambda ads: not ads or ads[0].get("JobStatus") == 3,
                       timeout=timeout, interval=0.1, first_interval=0.02,
                       on_timeout=lambda ads: (
                           f"the schedd ran no periodic evaluation within {timeout:.0f}s: "
                           f"witness job {witness} is still {ads}"))
        except TimeoutError:
            with contextlib.suppress(ScheddError):
                schedd.act("remove", [witness], "pytest-stacks: witness timed out")
            raise
    finally:
        shutil.rmtree(root, ignore_errors=True)
