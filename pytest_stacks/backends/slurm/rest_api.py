"""What slurmrestd answers, read into plain values: the OpenAPI versions it serves, the one a
client speaks, the daemon's release, the errors of an answer, a token's expiry, and the body
of a batch submission.

Pure functions over the JSON slurmrestd sends (tests feed them answers recorded on the real
daemons under ``tests/data/slurm-rest``), so the REST client (:mod:`.rest`) only moves bytes.
The OpenAPI plugins (``data_parser/v0.0.4x``) come and go release by release: 24.11 serves
v0.0.40 to v0.0.42, 26.05 none of those it dropped; which ones a daemon serves is read from
its own ``/openapi/v3`` document, never assumed from its version number.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import shlex
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_stacks.errors import StacksError

#: ``/slurm/v0.0.41/job/submit``: the job API of one OpenAPI version.
_SUBMIT_PATH = re.compile(r"^/slurm/(v\d+\.\d+\.\d+)/job/submit/?$")
#: The stack option naming the OpenAPI version the client must speak.
VERSION_OPTION = "rest_api_version"
#: slurmctld's "Protocol authentication error": the token was refused (expired, or not
#: signed with the key this slurmctld holds).
AUTH_ERROR = 1007
#: The capability a stack declares for each OpenAPI version it serves (``rest.v0_0_40``).
CAPABILITY_PREFIX = "rest."


class RestVersionError(StacksError):
    """The client asked for an OpenAPI version this slurmrestd does not serve."""


_VERSION = re.compile(r"v\d+\.\d+\.\d+")


def _key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.lstrip("v").split("."))


def served_versions(openapi: Mapping[str, Any]) -> list[str]:
    """The OpenAPI versions whose job API slurmrestd serves, oldest first, read from the
    paths of its ``/openapi/v3`` document (``/slurm/v0.0.41/job/submit``)."""
    paths = openapi.get("paths")
    if not isinstance(paths, Mapping):
        raise ValueError("slurmrestd's /openapi/v3 answer has no 'paths' object")
    found = {m.group(1) for path in paths if (m := _SUBMIT_PATH.match(str(path)))}
    return sorted(found, key=_key)


def choose_version(served: Sequence[str], asked: str = "") -> str:
    """The version to speak: ``asked`` (the stack's ``options.rest_api_version``) if the
    daemon serves it, else the newest it serves; RestVersionError naming what it serves and
    the fix where it does not serve the one asked (or none at all)."""
    if not served:
        raise RestVersionError("slurmrestd serves no job API (no /slurm/v0.0.x/job/submit in "
                               "its /openapi/v3): its openapi/slurmctld plugin is not loaded")
    asked = asked.strip()
    if not asked:
        return served[-1]
    wanted = asked if asked.startswith("v") else f"v{asked}"
    if not _VERSION.fullmatch(wanted):
        raise RestVersionError(
            f"options.{VERSION_OPTION} is {asked!r}: not an OpenAPI version of slurmrestd. Fix: "
            f"one of {', '.join(served)} (the form v0.0.N), or leave it out for the newest")
    if wanted in served:
        return wanted
    return _refuse(wanted, served)


def _refuse(wanted: str, served: Sequence[str]) -> str:
    if _key(wanted) < _key(served[0]):
        why = "no longer serves it (its plugin was removed before this release)"
    elif _key(wanted) > _key(served[-1]):
        why = "does not serve it yet (newer than this release's)"
    else:
        why = "does not serve it"
    raise RestVersionError(
        f"slurmrestd {why}: OpenAPI {wanted} asked by options.{VERSION_OPTION}, served: "
        f"{', '.join(served)}. Fix: set options.{VERSION_OPTION} to one of those (or leave it "
        f"out for the newest, {served[-1]}), or run the client against a stack whose Slurm "
        f"serves {wanted}")


def capability(version: str) -> str:
    """``v0.0.40`` -> ``rest.v0_0_40`` (capability names take no dots inside a part)."""
    return CAPABILITY_PREFIX + version.replace(".", "_")


def release(answer: Mapping[str, Any]) -> str:
    """The daemon's release from any answer's ``meta.slurm`` (``24.11.5``): slurmrestd fills
    it from its own build, which is slurmctld's on a stack of ours (one package build)."""
    slurm = (answer.get("meta") or {}).get("slurm") or {}
    text = str(slurm.get("release") or "")
    if re.fullmatch(r"\d+\.\d+\.\d+", text):
        return text
    version = slurm.get("version") or {}
    parts = [str(version.get(k, "")) for k in ("major", "minor", "micro")]
    if all(p.isdigit() for p in parts):
        return ".".join(parts)
    raise ValueError(f"slurmrestd's answer names no Slurm release in meta.slurm: {slurm!r}")


def ping_up(answer: Mapping[str, Any]) -> tuple[bool, str]:
    """Whether slurmrestd reached slurmctld, and what it said: up to v0.0.42 each ping has
    ``pinged: "UP"``, v0.0.45 ``responding: true`` and a ``status`` (both where v0.0.42 is
    served by 26.05). A refused token reads as not responding (``pinged: "DOWN"`` on 24.11,
    ``status: "Protocol authentication error"`` on 26.05), never as an HTTP error."""
    seen, up = [], False
    for ping in answer.get("pings") or []:
        if not isinstance(ping, Mapping):
            continue
        responding = ping.get("responding")
        alive = responding if isinstance(responding, bool) else ping.get("pinged") == "UP"
        up = up or alive
        said = ping.get("pinged") or ping.get("status") or ("responding" if alive else "down")
        seen.append(f"{ping.get('hostname', '?')} {said}")
    return up, ", ".join(seen) or "no ping in the answer"


def data_parser(answer: Mapping[str, Any]) -> str:
    """Which OpenAPI plugin wrote the answer (``data_parser/v0.0.41`` -> ``v0.0.41``): the
    daemon's own word that it spoke the version asked."""
    plugin = str(((answer.get("meta") or {}).get("plugin") or {}).get("data_parser") or "")
    return plugin.rpartition("/")[2]


def errors(answer: Mapping[str, Any]) -> list[tuple[int, str]]:
    """The answer's ``errors`` as (Slurm error number, what it says)."""
    found = []
    for item in answer.get("errors") or []:
        if not isinstance(item, Mapping):
            continue
        number = item.get("error_number")
        words = " / ".join(str(item[k]) for k in ("error", "description") if item.get(k))
        found.append((number if isinstance(number, int) else 0, words or str(item)))
    return found


def error_text(answer: Mapping[str, Any]) -> str:
    return "; ".join(words for _, words in errors(answer))


def token_expiry(token: str) -> int | None:
    """The ``exp`` (seconds since the epoch) of a JWT as ``scontrol token`` issues it, read
    from its payload without checking the signature (slurmctld does that); None if the
    token is not a JWT."""
    parts = token.split(".")
    if len(parts) != 3:
        return None
    padded = parts[1] + "=" * (-len(parts[1]) % 4)
    try:
        payload = json.loads(base64.urlsafe_b64decode(padded))
    except (binascii.Error, ValueError):
        return None
    exp = payload.get("exp") if isinstance(payload, dict) else None
    return exp if isinstance(exp, int) else None


def parse_token(scontrol_token: str) -> str:
    """``SLURM_JWT=eyJ...`` (what ``scontrol token`` prints) -> the token."""
    for line in scontrol_token.splitlines():
        name, _, value = line.strip().partition("=")
        if name == "SLURM_JWT" and value.count(".") == 2:
            return value
    raise ValueError("scontrol token printed no SLURM_JWT=<token> line")


def submit_body(*, script: str, name: str, workdir: str, environment: Mapping[str, str],
                cpus: int, minutes: int, nodes: int | None = None) -> dict[str, Any]:
    """The ``job/submit`` body every served version takes (v0.0.40 on): the script inside
    ``job``, numbers as ``{"set", "number"}``, and an environment, which slurmctld requires
    (without one it answers "I/O error writing script/environment to file")."""
    job: dict[str, Any] = {
        "script": script,
        "name": name,
        "current_working_directory": workdir,
        "standard_output": f"{workdir}/slurm-%j.out",
        "standard_error": f"{workdir}/slurm-%j.err",
        "environment": [f"{k}={v}" for k, v in environment.items()],
        "cpus_per_task": cpus,
        "time_limit": {"set": True, "infinite": False, "number": minutes},
    }
    if nodes is not None:
        job["minimum_nodes"] = nodes
        job["maximum_nodes"] = nodes
        job["tasks_per_node"] = 1
        job["tasks"] = nodes
    return {"job": job}


def embedded_inputs(files: Mapping[str, bytes], workdir: str) -> str:
    """Shell lines that write each input into the job's folder from the script itself
    (base64 in a here-document): slurmrestd moves no files, the script is the only way in."""
    lines = [f"mkdir -p {shlex.quote(workdir)} && cd {shlex.quote(workdir)} || exit 97"]
    for name, data in files.items():
        encoded = base64.b64encode(data).decode()
        lines.append(f"base64 -d > {shlex.quote(name)} <<'PYTEST_STACKS_INPUT'\n{encoded}\n"
                     "PYTEST_STACKS_INPUT")
    return "\n".join(lines) + "\n"
