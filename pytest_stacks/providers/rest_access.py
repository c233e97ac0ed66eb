"""How a Slurm stack is reached over slurmrestd (transport ``rest``): after the daemons are
ready, a JWT is issued for the submit user through the engine (``scontrol token``, as root,
the only trusted way in), kept in the run directory (0600, never logged or shown), and
slurmrestd on the stack's published 127.0.0.1 port must answer its OpenAPI document with it
before the stack counts as reachable. The client is then the REST one (the adapter makes it
from these endpoints); commands never go through this access.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pytest_stacks.backends.slurm import rest_api
from pytest_stacks.errors import InfrastructureError, StacksError
from pytest_stacks.manifest import Stack
from pytest_stacks.polling import poll_until
from pytest_stacks.providers.base import RunContext, StackInfo
from pytest_stacks.transports import Transport

#: The compose port variable slurmrestd's 6820 is published on (listed in compose.ports).
PORT_VARIABLE = "SLURMRESTD_PORT"
#: How long the token lives unless ``options.rest_token_lifespan`` says (seconds): a run's
#: tests and a kept stack's working day.
LIFESPAN = 8 * 3600
USER = "submitter"


class RestAccess:
    def environment(self, stack: Stack, ctx: RunContext) -> dict[str, str]:
        return {}

    def endpoints(self, stack: Stack, ctx: RunContext, info: StackInfo,
                  services: Mapping[str, Transport]) -> dict[str, str]:
        assert stack.compose is not None
        variable = PORT_VARIABLE
        if variable not in info.ports:
            raise InfrastructureError(stack.name, f"transport rest needs compose.ports to list "
                                      f"{variable} (slurmrestd's published port)")
        channel = services.get(stack.compose.service)
        if channel is None:
            raise InfrastructureError(stack.name, f"no container of service "
                                      f"{stack.compose.service!r} to issue the token in")
        lifespan = token_lifespan(stack)
        token = issue_token(stack.name, channel, USER, lifespan)
        folder = ctx.run_dir / "tokens" / stack.name  # the run's secrets: never in CI's artifacts
        folder.mkdir(parents=True, exist_ok=True)
        folder.chmod(0o700)
        path = folder / "slurmrestd-token"
        write_secret(path, token)
        url = f"http://127.0.0.1:{info.ports[variable]}"
        document = wait_served(stack, url, token)
        served = rest_api.served_versions(document)
        return {"rest_url": url, "rest_token_file": str(path), "rest_user": USER,
                "rest_served": ",".join(served)}

    def transport(self, endpoints: Mapping[str, str]) -> Transport | None:
        return None

    def reach(self, endpoints: Mapping[str, str]) -> str:
        url, token = endpoints.get("rest_url", ""), endpoints.get("rest_token_file", "")
        return (f"curl -H 'X-SLURM-USER-NAME: {endpoints.get('rest_user', USER)}' -H "
                f"\"X-SLURM-USER-TOKEN: $(cat {token})\" {url}/openapi/v3") if url else ""


def token_lifespan(stack: Stack) -> int:
    """``options.rest_token_lifespan`` (seconds, a whole number of at least 1), else 8 h; a
    bad value is a usage error naming the option and the fix, before any token is issued."""
    value = stack.options.get("rest_token_lifespan", LIFESPAN)
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise StacksError(f"manifest: stack {stack.name}: options.rest_token_lifespan is "
                          f"{value!r}; give the token's lifespan in whole seconds (at least "
                          f"1; {LIFESPAN} when left out)")
    return value


def issue_token(stack: str, channel: Transport, user: str, lifespan: int) -> str:
    """``scontrol token`` as root for ``user``; the token itself never enters a message."""
    result = channel.run(["scontrol", "token", f"username={user}", f"lifespan={lifespan}"],
                         user="root", timeout=30)
    if not result.ok:
        said = " ".join((result.stderr or "").split())[:300]
        raise InfrastructureError(stack, f"scontrol token username={user} failed (exit "
                                  f"{result.returncode}): {said} (is AuthAltTypes=auth/jwt in "
                                  f"slurm.conf? the image needs RESTD=slurmrestd)")
    try:
        return rest_api.parse_token(result.stdout)
    except ValueError as exc:
        raise InfrastructureError(stack, str(exc)) from None


def write_secret(path: Path, text: str) -> None:
    """A file only this user reads, made so from its creation (no moment at 0644)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(text)
    path.chmod(0o600)


def wait_served(stack: Stack, url: str, token: str) -> dict[str, Any]:
    """slurmrestd's ``/openapi/v3`` document, asked with the token until it answers (its
    readiness: listening, loading its plugins, accepting the token)."""
    def ask() -> tuple[dict[str, Any] | None, str]:
        request = urllib.request.Request(f"{url}/openapi/v3", headers={
            "X-SLURM-USER-NAME": USER, "X-SLURM-USER-TOKEN": token})
        try:
            with urllib.request.urlopen(request, timeout=15) as response:
                return json.loads(response.read()), ""
        except urllib.error.HTTPError as exc:
            return None, f"HTTP {exc.code}: {exc.read()[:200]!r}"
        except (urllib.error.URLError, OSError, ValueError) as exc:
            return None, str(getattr(exc, "reason", exc))

    try:
        document, _ = poll_until(ask, lambda answer: answer[0] is not None,
                                 timeout=stack.timeouts.ready, interval=0.5,
                                 on_timeout=lambda answer: f"last answer: {answer[1]}")
    except TimeoutError as exc:
        raise InfrastructureError(stack.name, f"slurmrestd at {url} never served its OpenAPI "
                                  f"document: {exc}") from None
    assert document is not None
    return document


#: What ``stack_commands.env`` holds on a ``rest`` stack, so a user's own REST client (or
#: ``curl``) reaches slurmrestd as the reference client does: the URL, the login user, the
#: run's token (``SLURM_JWT``, the name Slurm's own tools read it from) and the OpenAPI
#: version the stack speaks.
URL_ENV, USER_ENV, TOKEN_ENV, API_ENV = ("SLURMRESTD_URL", "SLURMRESTD_USER", "SLURM_JWT",
                                         "SLURMRESTD_API")


def client_environment(stack: Stack, endpoints: Mapping[str, str]) -> dict[str, str]:
    """The REST way in for a person's or a user's client ({} on a stack without slurmrestd).
    The token is read from the run's 0600 file; it is never printed."""
    if "rest_url" not in endpoints:
        return {}
    served = [v for v in endpoints.get("rest_served", "").split(",") if v]
    version = rest_api.choose_version(served, str(stack.options.get(rest_api.VERSION_OPTION,
                                                                    "")))
    return {URL_ENV: endpoints["rest_url"], USER_ENV: endpoints.get("rest_user", USER),
            TOKEN_ENV: Path(endpoints["rest_token_file"]).read_text().strip(),
            API_ENV: version}


def override(stack: Stack) -> dict[str, Any]:
    """The run's compose override on a ``rest`` stack: slurmrestd's 6820 published on
    127.0.0.1 at the port the run chose (compose.ports lists :data:`PORT_VARIABLE`); nothing
    on the other stacks of the image, which publish no port."""
    if stack.transport != "rest" or stack.compose is None:
        return {}
    return {"services": {stack.compose.service: {
        "ports": [f"127.0.0.1:${{{PORT_VARIABLE}}}:6820"]}}}
