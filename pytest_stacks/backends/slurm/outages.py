"""Slurm's words for "slurmctld is not there" and for "your request was refused".

The client tools (sbatch, squeue, scontrol, sacct) print these in their ``error:`` lines when
they cannot reach slurmctld (src/common/slurm_protocol_api.c and the tools' error paths);
those recorded from the pinned stacks are in tests/data/outages/slurm-*.json.
"""

from __future__ import annotations

from pytest_stacks.backends.outages import OutageWords, Phrase

CONTROLLER = "slurmctld not responding"

WORDS = OutageWords(
    backend="slurm",
    gone=(
        Phrase(r"Unable to contact slurm controller", CONTROLLER),
        Phrase(r"Socket timed out on send/recv operation", CONTROLLER),
        Phrase(r"Zero Bytes were transmitted or received", CONTROLLER),
        Phrase(r"slurm_load_(jobs|partitions|node|ctl_conf)\b.*(Connection refused|"
               r"Communication connection failure|Unable to contact)", CONTROLLER),
        Phrase(r"Slurmctld\(primary\) at \S+ is DOWN", CONTROLLER),
        Phrase(r"Communication connection failure", CONTROLLER),
        Phrase(r"Munge encode failed|Unable to create munge credential|"
               r"Munged communication error", "munged not responding"),
        Phrase(r"slurmdbd.*(connection refused|not responding)|"
               r"Unable to (connect|contact) .*slurmdbd", "slurmdbd not responding"),
    ),
    refused=(
        Phrase(r"Batch job submission failed", "submission refused"),
        Phrase(r"Invalid (partition|account|qos|feature|job id|node name)",
               "request refused"),
        Phrase(r"(unrecognized|invalid) option", "request refused"),
        Phrase(r"Requested node configuration is not available", "request refused"),
    ),
)
