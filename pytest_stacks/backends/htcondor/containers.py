"""Container jobs on HTCondor: the container universe where a slot can run one, else a refusal
at submit.

A job in the container universe whose image no slot can run is not an error to HTCondor: it
sits idle, forever, because nothing matches it. What can run one is what the execute nodes
advertise in their slot ads (``HasContainer``, and the runtime-specific ``HasDocker`` and
``HasSingularity``), so the driver asks the collector before it submits and refuses with that
reason when no slot says so.
"""

from __future__ import annotations

from typing import Any

from pytest_stacks.backends.htcondor.api import ScheddError

#: Slots whose startd found a container runtime it can use.
RUNTIME_CONSTRAINT = "HasContainer =?= true || HasDocker =?= true || HasSingularity =?= true"
RUNTIME_PROJECTION = ("Name", "HasContainer", "HasDocker", "HasSingularity")


def refusal(image: str, schedd: Any) -> str:
    """Why the job cannot run in ``image`` here ("" where a slot advertises a runtime). A
    pool that cannot be asked (a collector down, a schedd interface without slot queries)
    refuses this job, not the whole bulk submit: the others are in the queue already."""
    try:
        slots = schedd.slot_ads(RUNTIME_CONSTRAINT, RUNTIME_PROJECTION)
    except (ScheddError, AttributeError) as exc:
        return f"refused at submit: cannot ask the pool whether a slot runs containers: {exc}"
    if slots:
        return ""
    return (f"refused at submit: container image {image!r} cannot run here, no execute slot "
            "in the pool advertises a container runtime (HasContainer, HasDocker or "
            "HasSingularity); HTCondor would leave the job idle forever")


def container_universe(image: str) -> dict[str, str]:
    """The submit commands that run the job's executable inside ``image``."""
    return {"universe": "container", "container_image": image}
