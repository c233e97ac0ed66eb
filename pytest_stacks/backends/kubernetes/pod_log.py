"""A finished pod's log, whole.

A CRI runtime reports a container's exit before its log file is whole: containerd's CRI logger
takes each stream through an in-memory pipe into a goroutine that writes the file afterwards,
and the exit waits on the pipe, not on that write. A log read at the exit can lack the
payload's last line (seen in CI on the kind node: stderr's last line missing from the log and
from the kubelet's own termination message, which is read at the exit too).
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_stacks import cancellation
from pytest_stacks.backends.kubernetes.api import KubeApi

#: How long a real node's log must stay unchanged to count as whole.
LOG_SETTLE_S = 0.3
#: Reads after the first before a log still growing is returned as it stands.
LOG_SETTLE_READS = 10


def settled_log(read: Callable[[], str], settle: float) -> str:
    """The log once two reads ``settle`` seconds apart agree (one read where ``settle`` is 0)."""
    text = read()
    for _ in range(LOG_SETTLE_READS if settle > 0 else 0):
        cancellation.sleep(settle)
        again = read()
        if again == text:
            break
        text = again
    return text


def pod_log(api: KubeApi, namespace: str, pod: str, limit_bytes: int, *, container: str,
            real: bool) -> str:
    """The container's log; on a real node (``real``), read until it has stopped growing.
    A simulated node (kwok, the double) writes no log after the fact: one read."""
    return settled_log(lambda: api.logs(namespace, pod, limit_bytes, container=container),
                       LOG_SETTLE_S if real else 0.0)
