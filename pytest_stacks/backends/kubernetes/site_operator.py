"""Which MPI Operator a site's cluster runs, asked of the operator itself.

The operator is what its release manifest installs: a Deployment whose pods carry the
release's labels (``app.kubernetes.io/name: mpi-operator``; ``app: mpi-operator`` beside it)
and run a container named ``mpi-operator``. Any other pod says nothing about it, whatever its
image is called (a user's job built from an ``mpi-operator-e2e`` image, a second copy in a test
namespace without the labels). Each ready operator pod has two witnesses: its image's tag, and
the version its binary logs first when it starts (``[API Version: v2 Version: v0.8.2 Git SHA:
...]``: the operator's ``version.Info``, written before anything else). Where both name a
release they must agree; where the tag names none (a digest, ``latest``) the binary's word
stands, and where the log does not say (rotated away, not readable with these credentials)
the tag's. Ready operator pods that name different versions (a rollout half done), or none
that names a release: no version, and what was seen, never a guess from another pod.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pytest_stacks.backends.kubernetes.api import ApiError, KubeApi, Obj, meta

#: Where the release manifest puts it; asked alone by users who may not list every pod.
OPERATOR_NAMESPACE = "mpi-operator"
#: The release manifest's pod labels (either one marks the operator's pod) and container.
OPERATOR_LABELS = ({"app.kubernetes.io/name": "mpi-operator"}, {"app": "mpi-operator"})
CONTAINER = "mpi-operator"
#: A release tag, optionally with a build's hash (a local build: ``v0.8.2-754416ab0c213b38``).
TAG = re.compile(r"v?(\d+\.\d+\.\d+)(?:-[0-9a-f]{7,64})?")
#: The version line the operator logs at its start (``version.Info``, printed with ``%+v``).
LOGGED = re.compile(r"\bVersion: (\S+) Git SHA:")
LOG_BYTES = 65536  # from the log's start: the version line is among the first


@dataclass(frozen=True)
class Sighting:
    """One operator pod: ``version`` "" when it names none; ``said`` how it was told."""

    where: str
    version: str
    said: str


def _ready(pod: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def release(text: str) -> str:
    """``0.8.2`` for a release tag (``v0.8.2``, a local build's ``v0.8.2-<hash>``); "" for a
    pre-release, a floating tag or a development build (``0.9.0-rc.1``, ``latest``, ``dev``)."""
    found = TAG.fullmatch(text)
    return found.group(1) if found else ""


def operator_pods(api: KubeApi) -> list[Obj]:
    """The pods with the operator's labels: the whole cluster's, or (a user who may not list
    every pod) the release manifest's namespace's."""
    found: dict[str, Obj] = {}
    for labels in OPERATOR_LABELS:
        try:
            pods = api.list("Pod", None, labels)
        except ApiError as exc:
            if exc.status != 403:
                raise
            pods = api.list("Pod", OPERATOR_NAMESPACE, labels)
        found.update((str(meta(p).get("uid") or meta(p).get("name")), p) for p in pods)
    return list(found.values())


def sighting(api: KubeApi, pod: Obj) -> Sighting | None:
    """What one pod with the operator's labels says of its version; None when it runs no
    container named ``mpi-operator`` (then it is not the operator's pod after all)."""
    container = next((c for c in (pod.get("spec") or {}).get("containers") or []
                      if c.get("name") == CONTAINER), None)
    if container is None:
        return None
    m = meta(pod)
    image = str(container.get("image", ""))
    where = f"{m.get('namespace')}/{m.get('name')} ({image})"
    if not _ready(pod):
        return Sighting(where, "", "not ready")
    reference = image.split("@", 1)[0]
    tagged = reference.rsplit(":", 1)[1] if ":" in reference.rsplit("/", 1)[-1] else ""
    tag = release(tagged)
    said, how = _logged(api, str(m.get("namespace")), str(m.get("name")))
    binary = release(said)
    if tag and binary and tag != binary:
        return Sighting(where, "", f"its image is tagged {tagged} but its binary says {said}")
    if binary:
        return Sighting(where, binary, how + (f", as its tag {tagged}" if tag else
                                              f" (its tag: {tagged or 'none'})"))
    if tag:
        return Sighting(where, tag, f"its image's tag {tagged} ({how})")
    return Sighting(where, "", f"its tag names no release ({tagged or 'none'}) and {how}")


def _logged(api: KubeApi, namespace: str, name: str) -> tuple[str, str]:
    """(the version the operator's binary logged at its start, "" if none; how it read)."""
    try:
        log = api.logs(namespace, name, LOG_BYTES, container=CONTAINER)
    except ApiError as exc:
        if exc.status in (401, 403):
            return "", "its binary's log cannot be read with these credentials"
        raise
    found = LOGGED.search(log)
    if found:
        return found.group(1), f"its binary says {found.group(1)}"
    return "", f"its binary's log {'names no version' if log else 'is empty or gone'}"


def operator_version(api: KubeApi) -> tuple[str, str]:
    """(the version the cluster's ready operator pods run, what was seen): "" with the
    reason when none is ready, none names a release, or they name different ones."""
    seen = [s for s in (sighting(api, pod) for pod in operator_pods(api)) if s is not None]
    shown = "; ".join(f"{s.where}: {s.said}" for s in seen)
    ready = [s for s in seen if s.said != "not ready"]
    versions = {s.version for s in ready}
    if len(versions) == 1 and "" not in versions:
        return versions.pop(), shown
    if len(versions - {""}) > 1:
        return "", f"the operator's ready pods run different versions: {shown}"
    return "", shown or (f"no pod labelled app.kubernetes.io/name=mpi-operator or "
                         f"app=mpi-operator runs a container named {CONTAINER}")
