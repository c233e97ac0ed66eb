"""Raw, validated manifest data -> the typed model."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pytest_stacks import registry
from pytest_stacks.manifest.model import (
    Backend,
    BaseImage,
    CanarySpec,
    ComposeSpec,
    ExistingSpec,
    ImageRef,
    KindSpec,
    Manifest,
    NodeBuild,
    Stack,
    Timeouts,
    Window,
)
from pytest_stacks.versions import Role, role

#: A component beside the backend (``Backend.components``) and the build argument that pins
#: it, in the stack's compose project or its kind node image; a kind node image from a
#: registry pins Kubernetes by its tag.
COMPONENT_PINS = {"kubernetes": "K8S_VERSION"}


def component_pins(raw: dict[str, Any]) -> dict[str, str]:
    """The components a raw stack pins, by component: its own pins, without the ``v``."""
    kind = raw.get("kind") or {}
    args = {**(raw.get("compose") or {}).get("build_args", {}),
            **(kind.get("node_build") or {}).get("build_args", {})}
    found = {component: str(args[arg]).lstrip("v")
             for component, arg in COMPONENT_PINS.items() if arg in args}
    if "node_image" in kind:
        found.setdefault("kubernetes", str(kind["node_image"]["tag"]).lstrip("v"))
    return found


def _components(raw: dict[str, Any], backend: Backend) -> tuple[dict[str, str],
                                                                dict[str, Role]]:
    """A stack's components: written ones (a fake says what it answers as) under its pins
    (the reference pass refuses a written version its pin contradicts). A pin is a component
    only where the backend has a window for it (K8S_VERSION is a mere build argument
    elsewhere)."""
    pinned = {c: v for c, v in component_pins(raw).items() if c in backend.components}
    versions = {**raw.get("components", {}), **pinned}
    roles = {name: role(version, backend.components[name].anchor,
                        backend.components[name].leading_edge)
             for name, version in versions.items() if name in backend.components}
    return versions, roles


def _backends(data: dict[str, Any]) -> dict[str, Backend]:
    return {name: Backend(name=name, window=Window(**raw["window"]),
                          description=raw.get("description", ""),
                          components={c: Window(**w)
                                      for c, w in raw.get("components", {}).items()})
            for name, raw in data["backends"].items()}


def build(data: dict[str, Any], path: Path) -> Manifest:
    backends = _backends(data)
    stacks = []
    for raw in data["stacks"]:
        window = backends[raw["backend"]].window
        components, component_roles = _components(raw, backends[raw["backend"]])
        compose = raw.get("compose")
        kind = raw.get("kind")
        canary = raw.get("canary")
        base = raw.get("base_image")
        image = raw.get("image")
        stacks.append(Stack(
            name=raw["name"],
            backend=raw["backend"],
            version=raw["version"],
            provider=raw["provider"],
            transport=raw["transport"],
            capabilities=frozenset(raw["capabilities"]),
            configuration=raw["configuration"],
            lanes=tuple(raw["lanes"]),
            role=role(raw["version"], window.anchor, window.leading_edge),
            description=raw.get("description", ""),
            requires=tuple(raw.get("requires", _default_requires(raw["provider"]))),
            base_image=BaseImage(**base) if base else None,
            image=ImageRef(**image) if image else None,
            compose=ComposeSpec(
                directory=(path.parent / compose["directory"]).resolve(),
                service=compose["service"],
                build_args=dict(compose.get("build_args", {})),
                ports=tuple(compose.get("ports", ())),
                privileged_reason=compose.get("privileged_reason"),
            ) if compose else None,
            kind=KindSpec(
                kind_version=kind["kind_version"],
                node_image=ImageRef(**kind["node_image"]) if "node_image" in kind else None,
                node_build=NodeBuild(
                    directory=(path.parent / kind["node_build"]["directory"]).resolve(),
                    base_image=BaseImage(**kind["node_build"]["base_image"]),
                    build_args=dict(kind["node_build"]["build_args"]),
                ) if "node_build" in kind else None,
                operator_version=kind["operator_version"],
                worker_image=ImageRef(**kind["worker_image"]) if "worker_image" in kind else None,
                operator_image=(ImageRef(**kind["operator_image"]) if "operator_image" in kind
                                else None),
                nodes=int(kind.get("nodes", 1)),
            ) if kind else None,
            canary=CanarySpec(
                build_args=dict(canary.get("build_args", {})),
                image_tag=canary.get("image", {}).get("tag"),
            ) if canary else None,
            existing=_existing(raw.get("existing")),
            options=dict(raw.get("options", {})),
            timeouts=Timeouts(**raw.get("timeouts", {})),
            components=components,
            component_roles=component_roles,
        ))
    return Manifest(path=path.resolve(), capabilities=dict(data["capabilities"]),
                    backends=backends, stacks=tuple(stacks))


def _default_requires(provider: str) -> list[str]:
    """In-process doubles and deployments that already exist need no engine here."""
    spec = registry.PROVIDERS.get(provider)
    return ["docker"] if spec is not None and spec.engine else []


def _existing(raw: dict[str, Any] | None) -> ExistingSpec | None:
    if raw is None:
        return None
    return ExistingSpec(versions=raw.get("versions", ""),
                        kubernetes_versions=raw.get("kubernetes_versions", ""),
                        ssh=raw.get("ssh"), kubeconfig=raw.get("kubeconfig"),
                        context=raw.get("context"), namespace=raw.get("namespace"),
                        job_root=raw.get("job_root", ""))
