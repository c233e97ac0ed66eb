"""What a failure report shows of HTCondor jobs: the schedd's whole ad (queue, else history)
and the tails of the job's own stdout and stderr where the driver holds them."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from pytest_stacks.backends.htcondor.api import Schedd, ScheddError
from pytest_stacks.backends.htcondor.local import LocalJob
from pytest_stacks.backends.htcondor.translate import job_constraint


def describe_jobs(schedd: Schedd, local_jobs: Mapping[str, LocalJob],
                  job_ids: Sequence[str]) -> str:
    parts = []
    for job_id in job_ids:
        constraint = job_constraint([job_id])
        try:
            ads = schedd.query(constraint, [])
            where = "queue"
            if not ads:
                ads = schedd.history(constraint, [], match=1)
                where = "history"
        except ScheddError as exc:
            parts.append(f"--- job {job_id}: cannot read its ad: {exc}")
            continue
        if not ads:
            parts.append(f"--- job {job_id}: not in the queue or history")
        else:
            lines = [f"{k} = {v!r}" for k, v in sorted(ads[0].items())]
            parts.append(f"--- job {job_id} ({where} ad)\n" + "\n".join(lines))
        local = local_jobs.get(job_id)
        if local is not None:
            parts += [f"--- {job_id} {name}\n{text}" for name, text in local.log_tails()]
    return "\n".join(parts)
