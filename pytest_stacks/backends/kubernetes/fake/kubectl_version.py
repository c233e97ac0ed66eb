"""What the fake's ``kubectl`` says about itself: ``version`` (``--client``, ``-o json|yaml``)
as this project's pinned kubectl builds print it (recorded from them: ``gobuild`` stamps the
version; the commit, build date and tree state are the module build's), the server's version
from the API server, and the help text naming the commands the fake answers.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_stacks.backends.kubernetes.api import KubeApi
from pytest_stacks.backends.kubernetes.fake import kubectl_print as show
from pytest_stacks.backends.kubernetes.fake.kubectl_args import Failed, Parsed
from pytest_stacks.errors import BackendCallError

#: What this project's pinned builds of kubectl print (observed on them; gobuild's ldflags).
KUSTOMIZE = {"1.34": "v5.7.1", "1.36": "v5.8.1", "1.37": "v5.8.1"}
GO_VERSION = "go1.26.8"


def version(api: KubeApi, kubernetes_version: str, parsed: Parsed,
            out: list[str]) -> tuple[int, str]:
    """``kubectl version``: (exit code, stderr); what it prints appended to ``out``."""
    major, minor = kubernetes_version.split(".")[:2]
    client: dict[str, Any] = {
        "major": major, "minor": minor, "gitVersion": f"v{kubernetes_version}",
        "gitCommit": "$Format:%H$", "gitTreeState": "clean",
        "buildDate": "1970-01-01T00:00:00Z", "goVersion": GO_VERSION, "compiler": "gc",
        "platform": "linux/amd64"}
    shown: dict[str, Any] = {"clientVersion": client}
    if kustomize := KUSTOMIZE.get(f"{major}.{minor}"):
        shown["kustomizeVersion"] = kustomize
    output = parsed.last("output")
    if output not in ("", "json", "yaml"):
        raise Failed("error: --output must be 'yaml' or 'json'")
    err = ""
    if not parsed.flag("client"):
        try:
            shown["serverVersion"] = api.version()
        except BackendCallError as exc:
            err = f"Unable to connect to the server: {exc}\n"
    if output == "json":
        out.append(json.dumps(shown, indent=2) + "\n")
    elif output == "yaml":
        out.append(show.as_yaml(shown) + "\n")
    else:
        out.append(f"Client Version: {client['gitVersion']}\n")
        if kustomize:
            out.append(f"Kustomize Version: {kustomize}\n")
        if "serverVersion" in shown:
            out.append(f"Server Version: {shown['serverVersion'].get('gitVersion')}\n")
    return (1 if err else 0), err


def usage(command: str) -> str:
    """What ``kubectl`` alone and ``--help`` print: what the fake answers."""
    if command:
        return (f"kubectl {command}: the fake's kubectl (pytest-stacks, fake-mpi-operator). "
                f"See docs/your-own-client.md for what it models.\n")
    return ("kubectl controls the Kubernetes cluster manager (the fake's kubectl of "
            "pytest-stacks).\n\nBasic Commands:\n  get           Display one or many resources"
            "\n  delete        Delete resources by file names, stdin, resources and names, or "
            "by resources and label selector\n\nAdvanced Commands:\n  apply         Apply a "
            "configuration to a resource by file name or stdin\n\nTroubleshooting and "
            "Debugging Commands:\n  logs          Print the logs for a container in a pod\n\n"
            "Other Commands:\n  version       Print the client and server version "
            "information\n")
