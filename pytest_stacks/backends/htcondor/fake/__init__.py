"""An in-process HTCondor schedd double, behind the same small interface the real driver uses.

:class:`FakeSchedd` satisfies :class:`pytest_stacks.backends.htcondor.api.Schedd`, so the fake
lane runs the real driver code. It imports only that neutral interface, never the driver, and
keeps its own copy of every fact it models (see :mod:`.submit`), so it cannot agree with the
driver merely by sharing its beliefs.

Jobs run for real: ``spool`` copies the executable and the input files into a private spool
directory, a job starts in its own scratch directory (the executable as ``condor_exec.exe``,
only ``environment`` and the starter's own variables in its environment), and on exit the
declared outputs plus stdout/stderr go back to the spool, from where ``retrieve`` writes them
to the job's ``initialdir``.

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
  three-valued evaluator in :mod:`.classad`: ``UNDEFINED``, ``?:``, ``=?=``/``is``,
  ``time()``) and shown as the ClassAd library prints them back (``=?= UNDEFINED`` reads
  ``is undefined``).
* Periodic evaluation happens every ``periodic_expr_interval`` seconds, driven lazily by the
  elapsed time on each call (no thread; :meth:`FakeSchedd.run_periodic` forces one); a job also
  leaves at once when it completes with a false ``LeaveJobInQueue``.
* ``act("remove")`` marks the job Removed (a running one keeps ``ExitBySignal`` false, with
  no ``ExitSignal``, as 23.9.6 does), and it leaves the queue ``removed_linger`` seconds
  later. Removing a kept *completed* job records it as Removed too; editing its
  ``LeaveJobInQueue`` to false lets it leave as Completed.
* ``retrieve`` of a job that is no longer in the queue (or never existed) raises nothing and
  writes nothing, as the 25.14 bindings against a 23.9 schedd do.
* Finished jobs are then only in ``history`` (newest first); unknown ids are simply absent.
"""

from pytest_stacks.backends.htcondor.fake.classad import Expr
from pytest_stacks.backends.htcondor.fake.schedd import FakeSchedd

__all__ = ["Expr", "FakeSchedd"]
