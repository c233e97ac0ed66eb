"""How long a name may be: the bound every provider can carry, derived from their limits.

A stack's name becomes part of engine and Kubernetes object names, with prefixes and
suffixes of ours and of kind's around it. A name too long for one of them loads, then fails
minutes later deep in a bring-up (or is cut short and collides with another stack's), so the
manifest refuses it at load time, with the limit and why.

Where a stack name goes (the prefixes and suffixes are the providers'):

- kind: the cluster ``pst-<8 hex of the run id>-<name>`` (:func:`providers.kind.cluster_name`);
  kind names its control-plane node container ``<cluster>-control-plane`` and makes that the
  node's hostname, which the kubelet registers as the Node's name and as the value of its
  ``kubernetes.io/hostname`` label: a Kubernetes label value and a DNS-1123 label, at most 63
  characters. 63 - len("pst-") - 8 - len("-") - len("-control-plane") = 36. (Workers are
  ``<cluster>-worker``, ``-worker2``...: shorter while a cluster has fewer than 10^7 nodes.)
- compose: the project ``pst-<name>-<8 hex>`` (:func:`providers.compose.project_name`) and its
  containers ``<project>-<service>-<n>``: Docker names have no length limit of their own, and
  the containers' hostnames are the services' (never the name); 36 leaves a service name of
  up to 63 - 13 - 36 - 3 = 11 characters room inside one DNS label, should a container be
  looked up by name.
- labels on Docker objects (``io.pytest-stacks.stack``): no limit of the engine's.

So the bound is the kind cluster's, 36, for every stack: a project's stack may be moved to
another provider by ``extends``, and one manifest's names must mean the same everywhere.
A Kubernetes namespace given in the manifest (``existing.namespace``) is a DNS-1123 label
itself: at most 63 lowercase letters, digits and '-', starting and ending with one of the
first two.
"""

from __future__ import annotations

import re

DNS_LABEL_MAX = 63  # RFC 1123 label; Kubernetes label values and namespace names alike
KIND_CLUSTER_PREFIX = "pst-"  # providers.kind_owners.CLUSTER_PREFIX
RUN_SUFFIX_CHARS = 8  # the run id's last part (hex) that cluster and project names carry
KIND_LONGEST_NODE_SUFFIX = "-control-plane"  # kind's name for a cluster's first node
STACK_NAME_MAX = (DNS_LABEL_MAX - len(KIND_CLUSTER_PREFIX) - RUN_SUFFIX_CHARS - len("-")
                  - len(KIND_LONGEST_NODE_SUFFIX))
DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
SHOWN = 40  # characters of a refused name that a message shows


def shortened(value: str, limit: int = SHOWN) -> str:
    """``value`` quoted, cut to ``limit`` characters (with its length) when longer."""
    return repr(value) if len(value) <= limit else \
        f"{value[:limit]!r}... ({len(value)} characters)"


def stack_name_problem(name: str) -> str:
    """'' when ``name`` fits every provider; else what is wrong and the fix."""
    if len(name) <= STACK_NAME_MAX:
        return ""
    return (f"{shortened(name)} is {len(name)} characters long, over the {STACK_NAME_MAX} a "
            f"stack name may have: it becomes the kind cluster {KIND_CLUSTER_PREFIX}<run>-"
            f"<name>, whose node <cluster>{KIND_LONGEST_NODE_SUFFIX} must be a Kubernetes "
            f"name of at most {DNS_LABEL_MAX} characters (every provider is held to the "
            f"same bound). Shorten the name")


def namespace_problem(value: str) -> str:
    """'' when ``value`` is a valid Kubernetes namespace name (a DNS-1123 label)."""
    if len(value) <= DNS_LABEL_MAX and DNS_LABEL.fullmatch(value):
        return ""
    return (f"{shortened(value)} is not a Kubernetes namespace name: at most {DNS_LABEL_MAX} "
            f"lowercase letters, digits and '-', starting and ending with a letter or digit "
            f"(a DNS-1123 label). Name the namespace as `kubectl get namespaces` lists it")
