"""The typed, immutable manifest: what every layer above reads instead of raw YAML."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Literal

from packaging.version import Version

from pytest_stacks import registry
from pytest_stacks.versions import Role, in_range, not_older_series, series_of

LANES = ("pr", "full", "canary", "site")
Lane = Literal["pr", "full", "canary", "site"]
Provider = Literal["compose", "kind", "fake", "existing"]
PROVIDERS: tuple[Provider, ...] = ("compose", "kind", "fake", "existing")

__all__ = [
    "LANES",
    "PROVIDERS",
    "Backend",
    "BaseImage",
    "CanarySpec",
    "ComposeSpec",
    "ExistingSpec",
    "ImageRef",
    "KindSpec",
    "Lane",
    "Manifest",
    "Provider",
    "Role",
    "Stack",
    "Timeouts",
    "Window",
]


@dataclass(frozen=True)
class Window:
    anchor: str
    leading_edge: str


@dataclass(frozen=True)
class Backend:
    """``components``: the window of each component a stack of this backend pins beside the
    backend itself (the MPI Operator's Kubernetes), by component name."""

    name: str
    window: Window
    description: str = ""
    components: Mapping[str, Window] = field(default_factory=dict)


@dataclass(frozen=True)
class ImageRef:
    name: str
    tag: str
    digest: str | None = None

    @property
    def reference(self) -> str:
        """``name:tag@digest`` when pinned by digest, else ``name:tag``."""
        ref = f"{self.name}:{self.tag}"
        return f"{ref}@{self.digest}" if self.digest else ref


@dataclass(frozen=True)
class BaseImage:
    name: str
    tag: str
    seed: str
    digest: str | None = None

    @property
    def registry_reference(self) -> str:
        ref = f"{self.name}:{self.tag}"
        return f"{ref}@{self.digest}" if self.digest else ref

    @property
    def seeded_reference(self) -> str:
        """The locally seeded stand-in used where no registry can be reached."""
        return f"pytest-stacks/debian-base:{self.seed}"


@dataclass(frozen=True)
class ComposeSpec:
    directory: Path
    service: str
    build_args: Mapping[str, str] = field(default_factory=dict)
    ports: tuple[str, ...] = ()
    privileged_reason: str | None = None


@dataclass(frozen=True)
class NodeBuild:
    """A kind node image built on this host from a folder (``stacks/kind-node``) and pins."""

    directory: Path
    base_image: BaseImage
    build_args: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class KindSpec:
    kind_version: str
    operator_version: str
    node_image: ImageRef | None = None  # from a registry; else node_build
    node_build: NodeBuild | None = None
    worker_image: ImageRef | None = None
    operator_image: ImageRef | None = None
    nodes: int = 1

    @property
    def node_reference(self) -> str:
        """What the node image is, for tables and CI inputs."""
        if self.node_image is not None:
            return self.node_image.reference
        assert self.node_build is not None
        pins = ", ".join(f"{k}={v}" for k, v in sorted(self.node_build.build_args.items()))
        return f"built here from {self.node_build.directory.name} ({pins})"


@dataclass(frozen=True)
class ExistingSpec:
    """A deployment the run attaches to and never starts or stops (provider ``existing``).

    Values that differ per site or per machine (hosts, ports, users, key and kubeconfig paths)
    may be ``{env: NAME}``, read at bring-up; secrets themselves never appear here, only the
    paths of files that hold them. ``versions``: a PEP 440 range the observed version must be
    in (empty: exactly the stack's ``version``); ``kubernetes_versions`` likewise for the
    cluster under an ``mpi-operator`` stack. ``job_root``: the folder on the site's shared
    filesystem under which each run makes its own working folder; ``namespace``: a namespace
    the runs share (by label) where the user may not create one per run.
    """

    versions: str = ""
    kubernetes_versions: str = ""
    ssh: Mapping[str, Any] | None = None
    kubeconfig: Any = None
    context: Any = None
    namespace: Any = None
    job_root: str = ""


@dataclass(frozen=True)
class CanarySpec:
    build_args: Mapping[str, str] = field(default_factory=dict)
    image_tag: str | None = None


@dataclass(frozen=True)
class Timeouts:
    build: float = 1800.0
    up: float = 300.0
    ready: float = 120.0
    job: float = 120.0


@dataclass(frozen=True)
class Stack:
    name: str
    backend: str
    version: str
    provider: Provider
    transport: str
    capabilities: frozenset[str]
    configuration: str
    lanes: tuple[str, ...]
    role: Role
    description: str = ""
    requires: tuple[str, ...] = ()
    base_image: BaseImage | None = None
    image: ImageRef | None = None
    compose: ComposeSpec | None = None
    kind: KindSpec | None = None
    canary: CanarySpec | None = None
    existing: ExistingSpec | None = None
    options: Mapping[str, Any] = field(default_factory=dict)
    timeouts: Timeouts = field(default_factory=Timeouts)
    #: The pinned version of each component beside the backend's own (``COMPONENT_PINS``),
    #: and its place in the backend's window for that component.
    components: Mapping[str, str] = field(default_factory=dict)
    component_roles: Mapping[str, Role] = field(default_factory=dict)

    @property
    def parsed_version(self) -> Version:
        return Version(self.version)

    @property
    def is_fake(self) -> bool:
        """In-process: nothing outside the process to build, start or clean."""
        return registry.PROVIDERS[self.provider].in_process

    @property
    def is_site(self) -> bool:
        """A deployment that exists without the run (``existing``): never brought up or down
        by it."""
        return registry.PROVIDERS[self.provider].site

    def accepts_version(self, observed: str) -> bool:
        """Whether the daemon's reported version is what this stack allows: the pin exactly,
        or (an existing deployment with ``existing.versions``) any version in that range."""
        if self.existing is not None and self.existing.versions:
            return in_range(observed, self.existing.versions)
        return observed == self.version

    @property
    def allowed_versions(self) -> str:
        """What :meth:`accepts_version` accepts, as words for an error message."""
        if self.existing is not None and self.existing.versions:
            return f"the range {self.existing.versions!r}"
        return f"the pin {self.version!r}"

    def accepts_floated(self, observed: str) -> bool:
        """Whether a canary's daemon version is what its floating reference may give: the
        pin's series or a later one (a float moves forward, never back past its pin)."""
        return not_older_series(observed, self.version)

    @property
    def pin_series(self) -> str:
        """The series of the pin, as words (``24.11``)."""
        return ".".join(map(str, series_of(self.version))) or self.version

    def floating(self) -> Stack:
        """The stack as the canary lane builds it: its compose build arguments with the
        canary's floating ones in place of the pins (an apt version "", a Go query)."""
        if self.canary is None or self.compose is None or not self.canary.build_args:
            return self
        args = {**self.compose.build_args, **self.canary.build_args}
        return replace(self, compose=replace(self.compose, build_args=args))

    def in_lane(self, lane: str) -> bool:
        if lane == "canary":
            return self.canary is not None
        return lane in self.lanes


@dataclass(frozen=True)
class Manifest:
    """``origins``: per stack and field (dotted path), the ``file:line`` it came from;
    ``catalogue``: the catalogue manifest this one extends, if it does; ``window_origins``:
    per window (``<backend>.window``, ``<backend>.components.<component>``) the ``file:line``
    it was written at (this manifest's file, or the catalogue's)."""

    path: Path
    capabilities: Mapping[str, str]
    backends: Mapping[str, Backend]
    stacks: tuple[Stack, ...]
    origins: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    catalogue: Path | None = None
    window_origins: Mapping[str, str] = field(default_factory=dict)

    def own_window(self, key: str) -> bool:
        """Whether this manifest's own file wrote the window ``key`` (``slurm.window``,
        ``mpi-operator.components.kubernetes``), rather than inheriting the catalogue's: a
        project's pr lane is held to its own windows only (:func:`ci.pr_lane_problems`)."""
        return self.catalogue is None or not self.window_origins.get(key, "").startswith(
            f"{self.catalogue}:")

    @property
    def root(self) -> Path:
        return self.path.parent

    def names(self) -> list[str]:
        return [s.name for s in self.stacks]

    def get(self, name: str) -> Stack:
        for stack in self.stacks:
            if stack.name == name:
                return stack
        raise KeyError(name)
