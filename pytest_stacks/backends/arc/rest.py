"""A-REX's REST interface (``/arex/rest/1.1``) over https with a client certificate: the
standard library only (``ssl`` + ``http.client``), so the backend needs no extra.

Every job-management call is one POST for the whole bulk, answered with one entry per job
(``status-code``, ``reason``, ``id`` and the action's own keys); the service answers one
entry as a JSON object and several as a list, which :func:`entries` evens out. A call the
service refuses as a whole (TLS refused, HTTP error on the collection) raises
:class:`~pytest_stacks.errors.BackendCallError`, per job refusals are values.
"""

from __future__ import annotations

import http.client
import json
import ssl
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote, urlencode, urlsplit

from pytest_stacks.errors import BackendCallError

API = "rest/1.1"


@dataclass(frozen=True)
class Credentials:
    """Where this run's copies of the stack's per-start certificates are: the test CA the
    service's host certificate is signed by, and the user's certificate and key."""

    ca: str
    cert: str
    key: str


@dataclass(frozen=True)
class Answer:
    status: int
    body: bytes

    def json(self) -> Any:
        try:
            return json.loads(self.body or b"{}")
        except ValueError:
            raise BackendCallError(f"A-REX answered HTTP {self.status} with no JSON: "
                                   f"{self.body[:300]!r}") from None


class ArexRest:
    """One A-REX endpoint (``https://localhost:PORT/arex``), reached with ``credentials``."""

    def __init__(self, url: str, credentials: Credentials, *, timeout: float = 60.0) -> None:
        parts = urlsplit(url)
        if parts.scheme != "https" or not parts.hostname:
            raise BackendCallError(f"A-REX endpoint {url!r} is not an https URL")
        self.url = url.rstrip("/")
        self._host, self._port = parts.hostname, parts.port or 443
        self._base = parts.path.rstrip("/") + "/" + API
        self._timeout = timeout
        try:
            context = ssl.create_default_context(cafile=credentials.ca)
        except (OSError, ssl.SSLError) as exc:
            raise BackendCallError(f"cannot load the stack's CA certificate {credentials.ca}: "
                                   f"{exc}. Fix: bring the stack up again (its adapter copies "
                                   "it per run).") from None
        try:
            context.load_cert_chain(credentials.cert, credentials.key)
        except (OSError, ssl.SSLError) as exc:
            raise BackendCallError(f"cannot load the client certificate {credentials.cert}: "
                                   f"{exc}. Fix: bring the stack up again (its adapter copies "
                                   "it per run).") from None
        self._context = context

    def request(self, method: str, path: str, *, params: Mapping[str, str] | None = None,
                body: bytes | None = None, content_type: str = "",
                accept: str = "application/json") -> Answer:
        """One exchange; BackendCallError when the service cannot be reached at all."""
        target = self._base + path + (f"?{urlencode(params)}" if params else "")
        headers = {"Accept": accept}
        if content_type:
            headers["Content-Type"] = content_type
        connection = http.client.HTTPSConnection(self._host, self._port, context=self._context,
                                                 timeout=self._timeout)
        try:
            connection.request(method, target, body=body, headers=headers)
            response = connection.getresponse()
            return Answer(response.status, response.read())
        except (OSError, http.client.HTTPException) as exc:
            raise BackendCallError(f"A-REX at {self.url} did not answer {method} {path}: "
                                   f"{exc}") from None
        finally:
            connection.close()

    def info(self) -> Any:
        """The service's GLUE2 information document (what the readiness asks for)."""
        answer = self.request("GET", "/info")
        if answer.status != 200:
            raise BackendCallError(f"A-REX info: HTTP {answer.status} {answer.body[:200]!r}")
        return answer.json()

    def manage(self, action: str, job_ids: Sequence[str]) -> list[dict[str, Any]]:
        """``POST jobs?action=ACTION`` for every id at once; one entry per id, in order."""
        if not job_ids:
            return []
        payload = json.dumps({"job": [{"id": job_id} for job_id in job_ids]}).encode()
        answer = self.request("POST", "/jobs", params={"action": action}, body=payload,
                              content_type="application/json")
        if answer.status not in (200, 201, 202):
            raise BackendCallError(f"A-REX refused action={action}: HTTP {answer.status} "
                                   f"{answer.body[:300]!r}")
        found = entries(answer.json())
        by_id = {str(entry.get("id", "")): entry for entry in found}
        return [by_id.get(job_id, {"id": job_id, "status-code": "404",
                                   "reason": "not in A-REX's answer"}) for job_id in job_ids]

    def create(self, description: str) -> list[dict[str, Any]]:
        """``POST jobs?action=new`` with an xRSL description (``+`` joins several)."""
        answer = self.request("POST", "/jobs", params={"action": "new"},
                              body=description.encode(), content_type="application/rsl")
        if answer.status not in (200, 201):
            raise BackendCallError(f"A-REX refused the submission: HTTP {answer.status} "
                                   f"{answer.body[:300]!r}")
        return entries(answer.json())

    def put_file(self, job_id: str, name: str, data: bytes) -> Answer:
        return self.request("PUT", f"/jobs/{quote(job_id)}/session/{quote(name)}", body=data,
                            content_type="application/octet-stream", accept="*/*")

    def get_file(self, job_id: str, name: str) -> Answer:
        return self.request("GET", f"/jobs/{quote(job_id)}/session/{quote(name)}",
                            accept="*/*")


def entries(document: Any) -> list[dict[str, Any]]:
    """The per-job entries of a jobs answer: a list, or the one object REST 1.0 sends."""
    jobs = document.get("job", []) if isinstance(document, dict) else []
    if isinstance(jobs, dict):
        return [jobs]
    return [job for job in jobs if isinstance(job, dict)]


def code(entry: Mapping[str, Any]) -> int:
    """An entry's own HTTP status (``status-code``), 0 when it has none."""
    try:
        return int(entry.get("status-code", 0))
    except (TypeError, ValueError):
        return 0
