"""A-REX's job states (the ``arcrest:`` state of its REST interface) in the contract's
terms. Read from the per-job information document, whose exit code decides FINISHED."""

from __future__ import annotations

from pytest_stacks.contract import JobState

#: REST states of a job A-REX has not handed to the batch system, or that waits in it.
_PENDING = frozenset({"ACCEPTING", "ACCEPTED", "PREPARING", "PREPARED", "SUBMITTING",
                      "QUEUING"})
#: Running in the batch system, or being finished or killed by A-REX (a kill is not done
#: until A-REX says KILLED: the batch job may still run).
_RUNNING = frozenset({"RUNNING", "EXITINGLRMS", "EXECUTED", "FINISHING", "KILLING"})


def normalise(native: str, exit_code: int | None) -> JobState:
    """The contract's state of an A-REX REST state; FINISHED is COMPLETED only with exit
    code 0 (A-REX finishes a job whose payload exited non-zero, with that code)."""
    state = native.upper()
    if state in _PENDING:
        return JobState.PENDING
    if state in _RUNNING:
        return JobState.RUNNING
    if state == "HELD":
        return JobState.HELD
    if state == "FINISHED":
        return JobState.COMPLETED if exit_code == 0 else JobState.FAILED
    if state == "FAILED":
        return JobState.FAILED
    if state == "KILLED":
        return JobState.CANCELLED
    return JobState.UNKNOWN  # WIPED (cleaned), or a state this release does not know
