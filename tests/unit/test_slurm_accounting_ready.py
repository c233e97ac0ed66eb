"""Readiness of a Slurm stack with accounting storage: slurmctld up and its nodes idle is not
enough where it stores accounting in slurmdbd; slurmdbd must answer and slurmctld must have
registered with it (its cluster's ControlHost set), or the first job ends missing from sacct.
Answers below are 24.11's (seen on slurm-24.11 with slurmdbd)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from pytest_stacks.backends.slurm.adapter import SlurmComposeAdapter, accounting_ready
from pytest_stacks.transports import CommandResult


class _Node:
    def __init__(self, storage: str, clusters: CommandResult | None = None) -> None:
        self.storage, self.clusters, self.asked = storage, clusters, []

    def run(self, argv: Sequence[str], **_: object) -> CommandResult:
        argv = tuple(argv)
        self.asked.append(argv[0])
        if argv[:2] == ("scontrol", "ping"):
            return CommandResult(argv, 0, "Slurmctld(primary) at localhost is UP\n", "")
        if argv[0] == "sinfo":
            return CommandResult(argv, 0, "localhost idle\n", "")
        if argv[:3] == ("scontrol", "show", "config"):
            return CommandResult(argv, 0, f"AccountingStorageHost   = localhost\n"
                                          f"AccountingStorageType   = {self.storage}\n", "")
        assert argv[0] == "sacctmgr" and self.clusters is not None, argv
        return self.clusters


def test_no_slurmdbd_needs_no_question_to_it() -> None:
    node = _Node("(null)")
    assert accounting_ready(node, "localhost=idle") == (True, "localhost=idle")  # type: ignore[arg-type]
    assert "sacctmgr" not in node.asked


def test_slurmdbd_with_slurmctld_registered_is_ready() -> None:
    node = _Node("accounting_storage/slurmdbd",
                 CommandResult(("sacctmgr",), 0, "stacks|127.0.0.1\n", ""))
    ready, seen = accounting_ready(node, "localhost=idle")  # type: ignore[arg-type]
    assert ready and "stacks|127.0.0.1" in seen


@pytest.mark.parametrize("clusters", [
    CommandResult(("sacctmgr",), 0, "stacks|\n", ""),  # slurmctld not registered yet
    CommandResult(("sacctmgr",), 1, "", "sacctmgr: error: Problem talking to the database: "
                                        "Connection refused\n")])
def test_slurmdbd_not_answering_or_unregistered_is_not_ready(clusters: CommandResult) -> None:
    node = _Node("accounting_storage/slurmdbd", clusters)
    ready, seen = accounting_ready(node, "localhost=idle")  # type: ignore[arg-type]
    assert not ready and "slurmdbd: no slurmctld registered" in seen
    with pytest.raises(TimeoutError, match="slurmdbd"):
        SlurmComposeAdapter().wait_ready(node, timeout=0.3)  # type: ignore[arg-type]
