"""Container jobs on HTCondor: the container universe where a slot can run one, else a refusal
at submit.

A job in the container universe whose image no slot can run is not an error to HTCondor: it
sits idle, forever, because nothing matches it. What can run one is what the execute nodes
advertise in their slot ads (``HasContainer``, and the runtime-specific ``HasDocker`` and
``HasSingularity``), so the driver asks the collector before it submits and refuses with that
reason when no slot says so.

A pool whose execute nodes run Apptainer (``options.container_runtime: apptainer``) keeps each
image the stack names unpacked as a sandbox folder on the nodes (:data:`SANDBOXES`), as a site
keeps the images its users may ask for where no registry is reached; a job naming such an image
runs in that folder (``transfer_container = false``: it is already there). Any other image
goes to HTCondor as it is named (a ``docker://`` reference, a SIF), for Apptainer to fetch.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pytest_stacks.backends.htcondor.api import ScheddError
from pytest_stacks.errors import StacksError

if TYPE_CHECKING:
    from pytest_stacks.manifest import Stack

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


#: The stack option that gives a compose stack's execute nodes a container runtime, and the
#: runtimes the image knows how to install and configure.
OPTION = "container_runtime"
RUNTIMES = ("apptainer",)
#: Where the execute nodes keep each image the stack names, unpacked (``<SANDBOXES>/<folder>``).
SANDBOXES = "/srv/apptainer/images"
#: The stack options naming an image a job may ask for, and the folder it is built from (a
#: sibling of the stack's compose folder): the sandbox's name too.
IMAGE_OPTIONS = {"container_probe": "container-probe"}


def runtime_of(stack: Stack) -> str:
    """The stack's container runtime ("" for none); StacksError names the field and the fix."""
    runtime = stack.options.get(OPTION)
    if runtime is None:
        return ""
    if runtime not in RUNTIMES:
        raise StacksError(f"manifest: stack {stack.name}: options.{OPTION} must be one of "
                          f"{', '.join(RUNTIMES)} (or absent), got {runtime!r}")
    if stack.compose is None:
        raise StacksError(f"manifest: stack {stack.name}: options.{OPTION} needs a compose "
                          "stack (the runtime is installed into its image)")
    return str(runtime)


def stack_sandboxes(stack: Stack) -> dict[str, str]:
    """The sandbox folder the stack's execute nodes keep for each image it names, by image
    ({} without a runtime)."""
    if not runtime_of(stack):
        return {}
    return {str(stack.options[option]): f"{SANDBOXES}/{folder}"
            for option, folder in IMAGE_OPTIONS.items() if stack.options.get(option)}


def container_universe(image: str, sandboxes: Mapping[str, str] | None = None,
                       ) -> dict[str, str]:
    """The submit commands that run the job's executable inside ``image``: in the nodes'
    sandbox of it where they keep one, else as HTCondor resolves the name itself."""
    kept = (sandboxes or {}).get(image)
    if kept:
        return {"universe": "container", "container_image": kept,
                "transfer_container": "false"}
    return {"universe": "container", "container_image": image}
