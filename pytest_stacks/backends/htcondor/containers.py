"""Container jobs on HTCondor: the container universe where a slot can run one, else a refusal
at submit.

A job in the container universe whose image no slot can run is not an error to HTCondor: it
sits idle, forever, because nothing matches it. What can run one is what the execute nodes
advertise in their slot ads (``HasContainer``, and the runtime-specific ``HasDocker`` and
``HasSingularity``), so the driver asks the collector before it submits and refuses with that
reason when no slot says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

#: Slots whose startd found a container runtime it can use.
RUNTIME_CONSTRAINT = "HasContainer =?= true || HasDocker =?= true || HasSingularity =?= true"
RUNTIME_PROJECTION = ("Name", "HasContainer", "HasDocker", "HasSingularity")


def refusal(image: str, slot_ads: Sequence[Mapping[str, Any]]) -> str:
    """Why the job cannot run in ``image`` here ("" where a slot advertises a runtime);
    ``slot_ads`` are the collector's answer to :data:`RUNTIME_CONSTRAINT`."""
    if slot_ads:
        return ""
    return (f"refused at submit: container image {image!r} cannot run here, no execute slot "
            "in the pool advertises a container runtime (HasContainer, HasDocker or "
            "HasSingularity); HTCondor would leave the job idle forever")


def container_universe(image: str) -> dict[str, str]:
    """The submit commands that run the job's executable inside ``image``."""
    return {"universe": "container", "container_image": image}
