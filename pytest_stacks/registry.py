"""What this release can drive: one entry per backend, provider and transport.

Adding a backend is one folder under ``backends/`` plus one line here; nothing else dispatches
on a backend's or a provider's name. Entries name their implementations as ``module:attribute``
strings, resolved on first use, so that reading the manifest (which checks transports against
this table) imports no driver, and the table itself imports nothing of the package.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class BackendSpec:
    """One backend: what its driver speaks and where its pieces live.

    ``stack_adapter`` is the backend's half of a container stack (readiness, per-run set-up,
    the client, daemon logs); ``site_adapter`` its half of a deployment that already exists
    (preflight, the run's own place and client, runs found and removed); ``fake`` builds the
    in-process double wired to the same driver.
    None means the manifest format knows the backend but this release cannot run it that way.
    ``image_tag_variable``: the compose variable its stacks' compose files tag their image
    with (``image: pytest-stacks/slurm:${SLURM_IMAGE_TAG:?}``); a test keeps every
    ``stacks/*/compose.yaml`` of the backend using it.
    """

    name: str
    transports: tuple[str, ...]
    stack_adapter: str | None = None
    fake: str | None = None
    image_tag_variable: str = ""
    site_adapter: str | None = None
    #: ``module:function`` of ``(stack) -> str``: what the reference driver adds on the stack
    #: beyond the backend's documented use ("" for nothing); the report names it.
    driver_note: str | None = None
    #: The attribute of the fake's driver client that holds the in-process double itself
    #: (what the real daemons' place takes: a host that answers the scheduler's commands, a
    #: schedd, an API server), handed to users' own clients by the ``stack_fake`` fixture.
    fake_double: str = ""
    #: ``module:attribute`` of its daemons' words (:class:`~pytest_stacks.backends.outages.
    #: OutageWords`): which failures mean "the service is not there" (infrastructure) and
    #: which "the request was refused" (the product's); None: nothing declared.
    outages: str | None = None

    @property
    def implemented(self) -> bool:
        return self.stack_adapter is not None or self.fake is not None


@dataclass(frozen=True)
class ProviderSpec:
    """One provider (how a stack comes up and goes down) and the class that implements it.

    ``engine``: its stacks run in the Docker engine (they need the ``docker`` extra and the
    ``docker`` requirement); ``in_process``: its stacks are doubles in the test process
    (nothing outside it to reach, build or clean)."""

    name: str
    factory: str
    engine: bool = False
    in_process: bool = False
    #: A deployment that exists without the run (a site's): the run neither brings it up nor
    #: down, and proves gone only what its own driver removed.
    site: bool = False


@dataclass(frozen=True)
class TransportSpec:
    """One transport: how a stack's client reaches its daemons.

    ``access`` names the :class:`~pytest_stacks.providers.access.Access` a container stack
    is reached through (the engine's channel, or SSH through its jump hosts); ``extra`` the
    pip extra its client needs ("" for none); ``site_route`` the keys of ``existing`` a
    deployment that already exists must give to be reached this way (empty: not a way to
    reach a site)."""

    name: str
    access: str
    extra: str = ""
    site_route: tuple[str, ...] = ()


BACKENDS: dict[str, BackendSpec] = {
    spec.name: spec for spec in (
        BackendSpec("slurm", ("local", "ssh", "rest"),
                    "pytest_stacks.backends.slurm.adapter:SlurmComposeAdapter",
                    "pytest_stacks.backends.slurm.adapter:fake_client", "SLURM_IMAGE_TAG",
                    "pytest_stacks.backends.slurm.site:SlurmSite", fake_double="transport",
                    outages="pytest_stacks.backends.slurm.outages:WORDS"),
        BackendSpec("htcondor", ("bindings", "ssh"),
                    "pytest_stacks.backends.htcondor.adapter:HTCondorComposeAdapter",
                    "pytest_stacks.backends.htcondor.adapter:fake_client", "HTCONDOR_IMAGE_TAG",
                    "pytest_stacks.backends.htcondor.site:HTCondorSite", fake_double="schedd",
                    outages="pytest_stacks.backends.htcondor.outages:WORDS"),
        BackendSpec("mpi-operator", ("kubernetes",),
                    "pytest_stacks.backends.kubernetes.adapter:ControlPlaneAdapter",
                    "pytest_stacks.backends.kubernetes.adapter:fake_client",
                    "MPI_OPERATOR_IMAGE_TAG",
                    "pytest_stacks.backends.kubernetes.site:KubernetesSite",
                    "pytest_stacks.backends.kubernetes.adapter:driver_note", fake_double="api",
                    outages="pytest_stacks.backends.kubernetes.outages:WORDS"),
        BackendSpec("arc", ("arc-rest",), "pytest_stacks.backends.arc.adapter:ArcComposeAdapter",
                    image_tag_variable="ARC_IMAGE_TAG",
                    outages="pytest_stacks.backends.arc.outages:WORDS"),
    )
}

PROVIDERS: dict[str, ProviderSpec] = {
    spec.name: spec for spec in (
        ProviderSpec("compose", "pytest_stacks.providers.compose:ComposeProvider", engine=True),
        ProviderSpec("fake", "pytest_stacks.providers.fake:FakeProvider", in_process=True),
        ProviderSpec("kind", "pytest_stacks.providers.kind:KindProvider", engine=True),
        ProviderSpec("existing", "pytest_stacks.providers.existing:ExistingProvider",
                     site=True),
    )
}

_ENGINE = "pytest_stacks.providers.access:EngineAccess"
TRANSPORTS: dict[str, TransportSpec] = {
    spec.name: spec for spec in (
        TransportSpec("local", _ENGINE),
        TransportSpec("bindings", _ENGINE, extra="htcondor"),
        TransportSpec("ssh", "pytest_stacks.providers.access:SshAccess", extra="ssh",
                      site_route=("ssh", "job_root")),
        TransportSpec("kubernetes", _ENGINE, extra="kubernetes", site_route=("kubeconfig",)),
        TransportSpec("rest", "pytest_stacks.providers.rest_access:RestAccess"),
        # A-REX's REST interface over https with a client certificate (the standard library's
        # ssl); the engine's channel reaches the container for readiness, logs and versions.
        TransportSpec("arc-rest", _ENGINE),
    )
}


def resolve(target: str) -> Any:
    """The object a ``module:attribute`` string names."""
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)
