"""A kind cluster's nodes as its API server lists them."""

from __future__ import annotations

from collections.abc import Callable, Sequence

from pytest_stacks import polling
from pytest_stacks.errors import InfrastructureError

KUBELET_VERSIONS = "jsonpath={.items[*].status.nodeInfo.kubeletVersion}"


def registered_kubelets(check: Callable[[Sequence[str]], str], kubectl: Sequence[str],
                        nodes: int, stack: str, timeout: float) -> list[str]:
    """The kubelet versions of the cluster's nodes, once ``nodes`` of them are registered.

    kind returns when a worker's ``kubeadm join`` has; its kubelet registers the Node a moment
    later (seen in a loaded run: one node when kind returned, and ``kubectl wait --all`` waits
    only for the nodes that exist). ``check`` runs a command and returns its output.
    """
    def versions() -> list[str]:
        return check([*kubectl, "get", "nodes", "-o", KUBELET_VERSIONS]).split()

    try:
        return polling.poll_until(versions, lambda found: len(found) >= nodes, timeout=timeout,
                                  interval=0.5, first_interval=0.25,
                                  on_timeout=lambda found: f"{len(found)} node(s)")
    except TimeoutError as exc:
        raise InfrastructureError(stack, f"the cluster has registered {exc} after "
                                  f"{timeout:.0f} s; kind.nodes asks {nodes}") from None
