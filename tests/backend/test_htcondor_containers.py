"""What the container refusal on HTCondor rests on, pinned on every HTCondor stack: the
collector answers the driver's slot query with the pool's real slots, and none of them
advertises a container runtime (no Docker, no Apptainer in our images), so a container-universe
job would match nothing. A driver that refused because its query returned nothing at all
(a wrong ad type, an unreachable collector) fails here."""

from __future__ import annotations

from typing import Any

import pytest

from pytest_stacks.backends.htcondor import containers
from pytest_stacks.contract import JobClient

pytestmark = [pytest.mark.requires("submit", "container.refused"),
              pytest.mark.for_backend("htcondor")]


def test_the_pools_slots_advertise_no_container_runtime(backend: JobClient) -> None:
    schedd: Any = getattr(backend, "schedd", None)
    if schedd is None:
        pytest.skip("the backend client is not the reference HTCondor driver (no schedd)")
    slots = schedd.slot_ads("true", ["Name", "Cpus", "HasContainer", "HasDocker",
                                     "HasSingularity"])
    assert slots, "the collector listed no slot at all: the slot query itself is broken"
    assert all(ad.get("Name") for ad in slots), slots
    assert schedd.slot_ads(containers.RUNTIME_CONSTRAINT, containers.RUNTIME_PROJECTION) == []
    assert not any(ad.get(a) for ad in slots
                   for a in ("HasContainer", "HasDocker", "HasSingularity")), slots
