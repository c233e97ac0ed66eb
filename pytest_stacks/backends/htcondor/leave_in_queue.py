"""What a spooled job's ``LeaveJobInQueue`` says, by the client that wrote it: the driver's
own copy of these facts (the in-process double keeps its own, so the two cannot agree merely by
sharing a belief; :mod:`.api` says why).

Output retrieval, the ``output_retrieval`` option (``stack.options``, or
``HTCondorClient.with_options``):

``"repeatable"`` (the default)
    Submit sets ``leave_in_queue`` to the pre-25.8.2 10-day expression, so a completed job stays
    in the queue and a second fetch returns the same files, whatever the client version: a
    client upgrade must not silently change what a test suite sees.
``"one-shot"``
    No override: the submitting client's own default applies. A 25.8.2+ client (HTCONDOR-3508,
    e.g. the PyPI ``htcondor`` 25.14 bindings) writes an expression under which the job leaves
    the queue at the schedd's next periodic evaluation after its first successful retrieval;
    an older client keeps the old behaviour. This is what a user of a current client gets.

The one-shot hazard is silent: a second ``retrieve`` of a job that left the queue raises nothing
and writes nothing. ``fetch_outputs`` therefore never trusts the absence of an exception: it
checks that the job is in the queue before retrieving, reports a job that has left after an
earlier retrieval as a per-job error naming one-shot retrieval, and after every retrieval checks
that the declared outputs (and the job's stdout file) actually arrived.
"""

from __future__ import annotations

#: The default LeaveJobInQueue of spooled jobs written by clients before 25.8.2: keep a
#: completed job for ten days.
OLD_LEAVE_IN_QUEUE = (
    "JobStatus == 4 && (CompletionDate =?= UNDEFINED || CompletionDate == 0 || "
    "((time() - CompletionDate) < 864000))"
)
#: The default written by 25.8.2+ clients (HTCONDOR-3508): leave after a successful retrieval.
NEW_LEAVE_IN_QUEUE = (
    "JobStatus == 4 && (time() - (CompletionDate ?: time())) < 864000 && "
    "(StageOutFinish ?: 0) < EnteredCurrentStatus"
)
ONE_SHOT_SINCE, OUTPUT_RETRIEVAL_MODES = (25, 8, 2), ("repeatable", "one-shot")
ONE_SHOT_GONE = ("job left the queue after an earlier retrieval (one-shot output retrieval, "
                 "HTCondor 25.8.2+ client); its outputs are gone")
