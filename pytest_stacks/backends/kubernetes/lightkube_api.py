"""The real seam: :class:`~api.KubeApi` over HTTP, with lightkube's kubeconfig handling.

lightkube (pinned 1.0.1) reads the kubeconfig and builds the HTTP client (server URL, CA, client
certificate or token). Requests are plain REST on that client with JSON bodies, so objects
stay the dicts the API server sends (no model round trip that could drop fields the models do
not know, such as an MPIJob's), paths come from the one kind table in :mod:`.api`, and a DELETE
carries ``DeleteOptions`` with a uid precondition, which lightkube's ``delete`` cannot send.

Errors: a connection failure, a timeout or a 5xx raises BackendCallError (the whole call
failed); a 4xx raises :class:`~api.ApiError` with the server's Status reason and message, except
where the seam makes 404 a value (get -> None, delete -> False, logs -> "").
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import httpx2
import yaml
from lightkube.config.client_adapter import Client as http_client
from lightkube.config.client_adapter import ConnectionParams
from lightkube.config.kubeconfig import KubeConfig
from lightkube.core.exceptions import ConfigError

from pytest_stacks.backends.kubernetes.api import (
    ApiError,
    Obj,
    Objs,
    label_selector,
    meta,
    path,
    resource,
)
from pytest_stacks.errors import BackendCallError, redact, said

PAGE = 500


def delete_options(propagation: str, uid: str | None) -> Obj:
    """The body of a DELETE: propagation policy and, when given, the uid precondition."""
    body: Obj = {"kind": "DeleteOptions", "apiVersion": "v1", "propagationPolicy": propagation}
    if uid is not None:
        body["preconditions"] = {"uid": uid}
    return body


def api_error(response: httpx2.Response) -> ApiError:
    """An ApiError from a 4xx answer's Status body (or its text when it is not JSON)."""
    try:
        status = response.json()
    except ValueError:
        status = {}
    if not isinstance(status, dict):
        status = {}
    return ApiError(int(status.get("code") or response.status_code),
                    str(status.get("reason") or response.reason_phrase),
                    str(status.get("message") or response.text[:500]))


def _where(exc: yaml.YAMLError) -> str:
    """Where and what YAML's error is, without the snippet of the file it quotes: that line
    may hold a token or a client key."""
    mark = getattr(exc, "problem_mark", None)
    problem = str(getattr(exc, "problem", "") or "unreadable")
    if mark is None:
        return problem
    return f"line {mark.line + 1}, column {mark.column + 1}: {problem}"


#: A request's deadline: the issue-60 bound for a call in flight to a host that went away.
REQUEST_TIMEOUT_S = 15.0


class LightkubeApi:
    def __init__(self, http: httpx2.Client) -> None:
        self._http = http

    @classmethod
    def from_kubeconfig(cls, path: Path, timeout: float = REQUEST_TIMEOUT_S, *,
                        context: str | None = None,
                        transport: httpx2.BaseTransport | None = None) -> LightkubeApi:
        """From a kubeconfig file (its current context unless ``context``); ``transport``
        replaces the network, for tests. Every request has a deadline (``timeout`` for each
        read and write, at most 10 s to connect): an API server that went away ends a request
        in flight in seconds, as "the API server is unreachable"."""
        try:
            config = KubeConfig.from_file(path).get(context_name=context)
            if config is None:
                raise BackendCallError(f"{path}: no usable context in the kubeconfig")
            deadline = httpx2.Timeout(timeout, connect=min(timeout, 10.0))
            params = ConnectionParams(timeout=deadline, trust_env=False,
                                      transport=transport)
            return cls(http_client(config, params))
        except BackendCallError:
            raise
        except yaml.YAMLError as exc:
            raise BackendCallError(f"{path}: the kubeconfig is not valid YAML or JSON "
                                   f"({_where(exc)}); fix the file") from None
        except (ConfigError, OSError, ValueError, TypeError, KeyError, AttributeError) as exc:
            raise BackendCallError(f"{path}: not a usable kubeconfig ({redact(said(exc))}); "
                                   f"fix the file") from None

    def _send(self, method: str, url: str, *, params: Mapping[str, Any] | None = None,
              body: Obj | None = None) -> httpx2.Response:
        try:
            response = self._http.request(method, url, params=dict(params or {}), json=body)
        except httpx2.HTTPError as exc:  # connection refused, TLS, timeouts
            raise BackendCallError(f"{method} {url}: the API server is unreachable: "
                                   f"{type(exc).__name__}: {exc}") from exc
        if response.status_code >= 500:
            raise BackendCallError(f"{method} {url}: the API server failed: "
                                   f"{response.status_code} {response.text[:500]}")
        if response.status_code >= 400:
            raise api_error(response)
        return response

    def _json(self, response: httpx2.Response) -> Obj:
        try:
            value = response.json()
        except ValueError as exc:
            raise BackendCallError(f"the API server answered non-JSON: {exc}") from exc
        if not isinstance(value, dict):
            raise BackendCallError(f"the API server answered {type(value).__name__}, not an "
                                   "object")
        return value

    def create(self, obj: Obj) -> Obj:
        kind = str(obj.get("kind", ""))
        return self._json(self._send("POST", path(kind, meta(obj).get("namespace")), body=obj))

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        try:
            return self._json(self._send("GET", path(kind, namespace, name)))
        except ApiError as exc:
            if exc.status == 404:
                return None
            raise

    def _list(self, kind: str, namespace: str | None, params: Mapping[str, str]) -> Objs:
        res = resource(kind)
        items: Objs = []
        query = {**params, "limit": str(PAGE)}
        while True:
            page = self._json(self._send("GET", path(kind, namespace), params=query))
            for item in page.get("items") or []:
                # Items of a list carry neither kind nor apiVersion: put them back.
                items.append({"kind": kind, "apiVersion": res.api_version, **item})
            token = (page.get("metadata") or {}).get("continue")
            if not token:
                return items
            query["continue"] = str(token)

    def list(self, kind: str, namespace: str | None = None,
             labels: Mapping[str, str] | None = None) -> Objs:
        selector = label_selector(labels)
        return self._list(kind, namespace, {"labelSelector": selector} if selector else {})

    def delete(self, kind: str, namespace: str | None, name: str, *,
               propagation: str = "Foreground", uid: str | None = None) -> bool:
        try:
            self._send("DELETE", path(kind, namespace, name),
                       body=delete_options(propagation, uid))
        except ApiError as exc:
            if exc.status == 404:
                return False
            raise
        return True

    def events(self, namespace: str, involved_name: str) -> Objs:
        found = self._list("Event", namespace,
                           {"fieldSelector": f"involvedObject.name={involved_name}"})
        return sorted(found, key=lambda e: str(e.get("firstTimestamp") or e.get("eventTime")
                                               or meta(e).get("creationTimestamp") or ""))

    def logs(self, namespace: str, pod: str, limit_bytes: int = 65536, *,
             container: str = "") -> str:
        """The pod's log; "" where the pod has none to give (gone, its container never
        started, a kwok node that serves no logs). A refusal (401, 403: credentials or RBAC)
        is raised: it is a broken stack, not a pod without output."""
        try:
            response = self._send("GET", path("Pod", namespace, pod) + "/log",
                                  params={"limitBytes": str(limit_bytes),
                                          **({"container": container} if container else {})})
        except ApiError as exc:
            if exc.status in (401, 403):
                raise
            return ""
        return response.content[:limit_bytes].decode("utf-8", "replace")

    def version(self) -> Obj:
        return self._json(self._send("GET", "/version"))

    def close(self) -> None:
        self._http.close()
