"""The Slurm driver over slurmrestd (transport ``rest``): the job contract through Slurm's
REST API with a JWT, as a site's web portal or workflow engine reaches Slurm.

Every call is an HTTP request to slurmrestd (the stdlib's urllib) with the token
``scontrol token`` issued for the submit user; nothing goes through the engine behind the
API's back. What the API gives is what the client offers: submit (``job/submit``, the
script and its inputs in the body), status (``jobs``, ``job/{id}``), kill
(``DELETE job/{id}``) and the daemon's version (``ping``, from ``meta.slurm``). slurmrestd
moves no files, so outputs and purge are refused per job with the reason, never fetched
another way. The OpenAPI version is chosen once (:func:`.rest_api.choose_version`) and every
answer must say it was written by that version's plugin (fail closed).
"""

from __future__ import annotations

import json
import shlex
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from pytest_stacks.backends.slurm import parse, rest_api
from pytest_stacks.contract import (
    ActionResult,
    JobHandle,
    JobSpec,
    JobStatus,
    OutputResult,
    SubmitResult,
)
from pytest_stacks.errors import BackendCallError

#: What a refused per-job action says: the API has no file transfer.
NO_FILES = ("slurmrestd moves no files: the REST transport offers no outputs and no purge "
            "(use the stack's local or ssh transport, or the site's shared file system)")


class RestSlurmClient:
    def __init__(self, url: str, token: str, stack: str, *, api_version: str,
                 user: str = "submitter", job_root: str = "/work/jobs",
                 timeout: float = 30.0) -> None:
        """``url``: slurmrestd's base (``http://127.0.0.1:PORT``); ``token``: the JWT for
        ``user``; ``api_version``: the OpenAPI version to speak (``v0.0.41``), already
        chosen from what the daemon serves."""
        self._url = url.rstrip("/")
        self._token = token
        self._stack = stack
        self._version = api_version
        self._user = user
        self._job_root = job_root.rstrip("/")
        self._timeout = timeout
        self._versions: dict[str, str] | None = None

    @property
    def api_version(self) -> str:
        """The OpenAPI version this client speaks (``v0.0.41``)."""
        return self._version

    # ------------------------------------------------------------ HTTP

    def call(self, method: str, path: str, body: Mapping[str, Any] | None = None,
             ) -> tuple[int, dict[str, Any]]:
        """(HTTP status, JSON answer) of one request; BackendCallError when slurmrestd does
        not answer, answers no JSON, or slurmctld refused the token."""
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self._url}{path}", data=data, method=method,
            headers={"X-SLURM-USER-NAME": self._user, "X-SLURM-USER-TOKEN": self._token,
                     "Content-Type": "application/json", "Accept": "application/json"})
        try:
            with urllib.request.urlopen(request, timeout=self._timeout) as response:
                status, raw = response.status, response.read()
        except urllib.error.HTTPError as exc:
            status, raw = exc.code, exc.read()
        except (urllib.error.URLError, OSError) as exc:
            raise BackendCallError(f"slurmrestd at {self._url} does not answer {method} "
                                   f"{path}: {getattr(exc, 'reason', exc)}") from None
        try:
            answer = json.loads(raw or b"{}")
        except ValueError:
            answer = None
        if not isinstance(answer, dict):
            words = raw[:300].decode("utf-8", "replace").strip()
            if status == 401:
                raise BackendCallError(self._refused(f"HTTP 401: {words}"))
            if status == 404:  # "Unable find requested URL": no such path (or version)
                return status, {}
            raise BackendCallError(f"slurmrestd answered {method} {path} with HTTP {status} "
                                   f"and no JSON: {words!r}")
        if any(number == rest_api.AUTH_ERROR for number, _ in rest_api.errors(answer)):
            raise BackendCallError(self._refused(rest_api.error_text(answer)))
        return status, answer

    def _refused(self, said: str) -> str:
        """Why slurmctld refused the token, and the fix: an expired one says when."""
        expiry = rest_api.token_expiry(self._token)
        if expiry is not None and expiry <= time.time():
            stamp = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(expiry))
            why = f"the token for user {self._user!r} expired at {stamp}"
        else:
            why = (f"slurmctld refused the token for user {self._user!r} (not signed with "
                   f"this stack's JWT key, or not a token)")
        return (f"{why} ({said}). Fix: issue a new one as root or SlurmUser with `scontrol "
                f"token username={self._user} lifespan=SECONDS` (pytest-stacks issues one per "
                f"bring-up: bring the stack up again, or raise options.rest_token_lifespan)")

    def _api(self, method: str, tail: str, body: Mapping[str, Any] | None = None,
             ) -> tuple[int, dict[str, Any]]:
        """A request to this version's job API; the answer must come from its plugin."""
        status, answer = self.call(method, f"/slurm/{self._version}/{tail}", body)
        spoke = rest_api.data_parser(answer)
        if status == 404 and not spoke:
            raise BackendCallError(f"slurmrestd has no {method} /slurm/{self._version}/{tail} "
                                   f"(HTTP 404): it does not serve OpenAPI {self._version}")
        if spoke and spoke != self._version:
            raise BackendCallError(f"slurmrestd answered /slurm/{self._version}/{tail} with "
                                   f"its {spoke} plugin, not {self._version}")
        return status, answer

    # ------------------------------------------------------------ versions

    def versions(self) -> dict[str, str]:
        """slurmctld's release as slurmrestd reports it after pinging slurmctld with the
        token (``meta.slurm.release``), and the OpenAPI version spoken. A ping that does not
        reach slurmctld UP is an error: the release would then be slurmrestd's word alone."""
        if self._versions is None:
            _, answer = self._api("GET", "ping/")
            up, seen = rest_api.ping_up(answer)
            if not up:
                expiry = rest_api.token_expiry(self._token)
                if expiry is not None and expiry <= time.time():
                    raise BackendCallError(self._refused(f"ping: {seen}"))
                raise BackendCallError(f"slurmrestd cannot reach slurmctld (ping: {seen}) "
                                       f"{rest_api.error_text(answer)}".strip())
            self._versions = {"daemon": rest_api.release(answer), "api": self._version}
        return dict(self._versions)

    # ------------------------------------------------------------ submit

    def submit(self, specs: Sequence[JobSpec]) -> list[SubmitResult]:
        results = []
        for spec in specs:
            refused = _refused_spec(spec)
            if refused:
                results.append(SubmitResult(None, refused))
                continue
            workdir = f"{self._job_root}/{uuid.uuid4().hex[:12]}"
            exports = "".join(f"export {k}={shlex.quote(v)}\n" for k, v in spec.env.items())
            args = " ".join(shlex.quote(a) for a in spec.args)
            script = (f"#!/bin/bash\n{rest_api.embedded_inputs(spec.inputs, workdir)}"
                      f"{exports}set -- {args}\n{spec.body}\n")
            workers = spec.backend_options.get("workers")
            body = rest_api.submit_body(
                script=script, name=spec.name, workdir=self._job_root,
                environment={"PATH": "/usr/local/bin:/usr/bin:/bin"}, cpus=spec.cpus,
                minutes=max(1, -(-spec.walltime_s // 60)),
                nodes=int(workers) if workers is not None else None)
            try:
                _, answer = self._api("POST", "job/submit", body)
            except BackendCallError as exc:
                results.append(SubmitResult(None, str(exc)))
                continue
            job_id = str(answer.get("job_id") or (answer.get("result") or {}).get("job_id")
                         or "")
            if rest_api.errors(answer) or not job_id.isdigit():
                results.append(SubmitResult(None, rest_api.error_text(answer)
                                            or f"job/submit gave no job id: {answer!r:.300}"))
                continue
            results.append(SubmitResult(JobHandle(self._stack, job_id)))
        return results

    # ------------------------------------------------------------ status

    def _jobs(self) -> dict[str, parse.SlurmJob]:
        status, answer = self._api("GET", "jobs/")
        if status >= 400 or rest_api.errors(answer):
            raise BackendCallError(f"slurmrestd GET jobs failed (HTTP {status}): "
                                   f"{rest_api.error_text(answer)}")
        return parse.parse_squeue_json(json.dumps(answer))

    def in_live_queue(self, handles: Sequence[JobHandle]) -> list[bool]:
        live = self._jobs()
        return [handle.job_id in live for handle in handles]

    def status(self, handles: Sequence[JobHandle]) -> list[JobStatus]:
        live = self._jobs() if any(h.job_id.isdigit() for h in handles) else {}
        return [_to_status(handle, live.get(handle.job_id)) for handle in handles]

    # ------------------------------------------------------------ outputs, kill, purge

    def fetch_outputs(self, handles: Sequence[JobHandle], dest: Path) -> list[OutputResult]:
        return [OutputResult(handle, error=NO_FILES) for handle in handles]

    def kill(self, handles: Sequence[JobHandle]) -> list[ActionResult]:
        results = []
        for handle in handles:
            if not handle.job_id.isdigit():
                results.append(ActionResult(handle, "not a Slurm job id"))
                continue
            status, answer = self._api("DELETE", f"job/{handle.job_id}")
            error = rest_api.error_text(answer) or (f"HTTP {status}" if status >= 400 else "")
            results.append(ActionResult(handle, error))
        return results

    def purge(self, handles: Sequence[JobHandle]) -> list[ActionResult]:
        return [ActionResult(handle, NO_FILES) for handle in handles]

    # ------------------------------------------------------------ diagnostics

    def describe_jobs(self, handles: Sequence[JobHandle]) -> str:
        parts = []
        for handle in handles:
            try:
                _, answer = self._api("GET", f"job/{handle.job_id}")
            except BackendCallError as exc:
                parts.append(f"GET job/{handle.job_id}: {exc}")
                continue
            shown = [{k: job.get(k) for k in ("job_id", "job_state", "state_reason",
                                              "exit_code", "nodes", "standard_output")}
                     for job in answer.get("jobs") or []]
            parts.append(f"GET /slurm/{self._version}/job/{handle.job_id}: "
                         f"{json.dumps(shown)[:3000]} {rest_api.error_text(answer)}")
        return "\n".join(parts)

    def close(self) -> None:
        """Nothing to release: each call is its own HTTP request."""


def _refused_spec(spec: JobSpec) -> str:
    """Why this client cannot run the job as asked ("" when it can)."""
    if spec.container:
        return (f"refused at submit: container {spec.container!r} is not offered over "
                "slurmrestd by this client (use the local transport's sbatch --container)")
    if spec.remote_inputs or spec.remote_outputs:
        return ("refused at submit: remote staging (s3:// inputs or outputs) is not offered "
                "over slurmrestd by this client")
    if spec.outputs:
        return f"refused at submit: outputs {list(spec.outputs)} cannot come back: {NO_FILES}"
    unsent = sorted({"partition", "memory_mb"} & set(spec.backend_options))
    if unsent:
        return (f"refused at submit: backend_options {unsent} are not sent over slurmrestd by "
                "this client (the local transport's sbatch takes them): the job would run "
                "elsewhere than asked")
    workers = spec.backend_options.get("workers")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        return f"refused at submit: backend_options['workers'] must be a whole number above 0, " \
               f"not {workers!r}"
    return ""


def _to_status(handle: JobHandle, job: parse.SlurmJob | None) -> JobStatus:
    return parse.job_status(handle, job, "not known to slurmctld")
