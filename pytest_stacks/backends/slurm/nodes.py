"""Which Slurm nodes cannot run work, read from ``sinfo -N -h -o '%N %T %E'``, in words a
person acts on: the node's name, its state and Slurm's reason for it.

Asked after a test failed on a stack (:meth:`SlurmComposeAdapter.liveness`): a compute node
that died while slurmctld lives leaves a job needing it pending until the test's wait runs
out, which reads as the product's failure unless the stack says which node is down and why
(``Not responding``, an admin's drain reason, ``Node unexpectedly rebooted``).
"""

from __future__ import annotations

from dataclasses import dataclass

#: The question: one line per node and partition; the reason last (it may hold spaces).
SINFO_ARGV = ("sinfo", "-N", "-h", "-o", "%N %T %E")

#: Long states (sinfo ``%T``, lower case) of a node that cannot take work.
_NOT_UP = ("down", "drain", "fail", "unk", "boot", "pow", "inval", "future", "not_resp")
#: Flags sinfo appends to a state: ``*`` not responding; the rest power, reboot and
#: reservation marks (``~#!%$@^-``).
_FLAGS = "*~#!%$@^-"


@dataclass(frozen=True)
class NodeFault:
    name: str
    state: str  # as sinfo printed it, e.g. ``down*``
    reason: str  # Slurm's, "" when it gave none

    def __str__(self) -> str:
        base = self.state.rstrip(_FLAGS)
        words = [w.upper() for w in base.split("+") if w.startswith(_NOT_UP)]
        if self.state.endswith("*"):
            words.append("not responding")
        said = f"; Slurm's reason: {self.reason}" if self.reason else ""
        return f"node {self.name} is {', '.join(words)} (sinfo state {self.state}{said})"


def not_up(sinfo_stdout: str) -> list[NodeFault]:
    """Each node of ``sinfo -N -h -o '%N %T %E'`` that cannot take work (once, though sinfo
    lists a node once per partition): a state flagged ``*`` (slurmctld hears nothing from its
    slurmd) or one of the down, drained, failed, unknown, booting or powered-off states."""
    found: dict[str, NodeFault] = {}
    for line in sinfo_stdout.splitlines():
        parts = line.split(None, 2)
        if len(parts) < 2 or parts[0] in found:
            continue
        name, state = parts[0], parts[1].lower()
        reason = parts[2].strip() if len(parts) > 2 else ""
        base = state.rstrip(_FLAGS)
        if state.endswith("*") or any(w.startswith(_NOT_UP) for w in base.split("+")):
            found[name] = NodeFault(name, state, "" if reason.lower() == "none" else reason)
    return list(found.values())


def listed(sinfo_stdout: str) -> list[str]:
    """The node names sinfo listed, once each: a stack whose sinfo lists none has no node
    to run anything."""
    return list(dict.fromkeys(line.split()[0] for line in sinfo_stdout.splitlines()
                              if line.split()))
