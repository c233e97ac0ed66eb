"""The Kubernetes API server's (and its client's) words for "the API server is not there" and
for "your request was refused".

The driver's API client (:mod:`.lightkube_api`) says "the API server is unreachable" for a
connection refused, a TLS failure or a timeout, and "the API server failed: 5xx" for a server
error; a 4xx (forbidden, invalid, not found) is a refusal. Those recorded from the pinned
stacks are in tests/data/outages/k8s-*.json.
"""

from __future__ import annotations

from pytest_stacks.backends.outages import OutageWords, Phrase

API = "API server unreachable"

WORDS = OutageWords(
    backend="mpi-operator",
    gone=(
        Phrase(r"the API server is unreachable", API),
        Phrase(r"the API server failed: 5\d\d", "API server failing (5xx)"),
        Phrase(r"\b(ConnectError|ConnectTimeout|ReadTimeout|WriteTimeout|PoolTimeout|"
               r"RemoteProtocolError)\b", API),
        Phrase(r"connection refused|No route to host|Network is unreachable", API),
        Phrase(r"\b(50[234]) (Service Unavailable|Gateway Timeout|Bad Gateway)", API),
        Phrase(r"etcdserver: (request timed out|leader changed|no leader)",
               "etcd not responding"),
    ),
    refused=(
        Phrase(r"\b4(00|03|04|09|22)\b", "request refused"),
        Phrase(r"is invalid|forbidden|Unprocessable", "request refused"),
    ),
)
