"""The pure half of the REST transport (:mod:`pytest_stacks.backends.slurm.rest_api`) and the
REST client's reading of answers, fed with what slurmrestd 24.11.5 and 26.05.5 answered here
(``tests/data/slurm-rest``; the OpenAPI documents are kept as their paths only)."""

from __future__ import annotations

import base64
import json
import re
import subprocess
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.backends.slurm import parse, rest_api
from pytest_stacks.backends.slurm.rest import NO_FILES, RestSlurmClient
from pytest_stacks.contract import JobHandle, JobSpec, JobState
from pytest_stacks.errors import BackendCallError

DATA = Path(__file__).parent.parent / "data" / "slurm-rest"


def _answer(version: str, name: str) -> dict[str, Any]:
    return json.loads((DATA / version / name).read_text())


def test_the_versions_served_are_read_from_each_daemon_s_document() -> None:
    assert rest_api.served_versions(_answer("24.11", "openapi-v3-paths.json")) == [
        "v0.0.40", "v0.0.41", "v0.0.42"]
    assert rest_api.served_versions(_answer("26.05", "openapi-v3-paths.json")) == [
        "v0.0.42", "v0.0.43", "v0.0.44", "v0.0.45"]
    with pytest.raises(ValueError, match="no 'paths'"):
        rest_api.served_versions({"openapi": "3.0.3"})


def test_the_version_asked_or_the_newest_is_chosen() -> None:
    served = ["v0.0.40", "v0.0.41", "v0.0.42"]
    assert rest_api.choose_version(served) == "v0.0.42"
    assert rest_api.choose_version(served, "v0.0.40") == "v0.0.40"
    assert rest_api.choose_version(served, "0.0.41") == "v0.0.41"


@pytest.mark.parametrize(("asked", "why"), [
    ("v0.0.40", "no longer serves it"), ("v0.0.46", "does not serve it yet")])
def test_a_version_not_served_is_refused_naming_the_served_and_the_fix(asked: str,
                                                                       why: str) -> None:
    served = rest_api.served_versions(_answer("26.05", "openapi-v3-paths.json"))
    with pytest.raises(rest_api.RestVersionError) as refused:
        rest_api.choose_version(served, asked)
    said = str(refused.value)
    assert why in said and f"OpenAPI {asked}" in said, said
    assert "served: v0.0.42, v0.0.43, v0.0.44, v0.0.45" in said
    assert "options.rest_api_version" in said and "v0.0.45" in said


def test_a_daemon_serving_no_job_api_is_refused() -> None:
    with pytest.raises(rest_api.RestVersionError, match="openapi/slurmctld"):
        rest_api.choose_version([], "")


def test_release_and_plugin_come_from_the_answer_s_meta() -> None:
    ping = _answer("26.05", "ping.v0.0.45.json")
    assert (rest_api.release(ping), rest_api.data_parser(ping)) == ("26.05.5", "v0.0.45")
    jobs = _answer("24.11", "jobs.v0.0.41.json")
    assert (rest_api.release(jobs), rest_api.data_parser(jobs)) == ("24.11.5", "v0.0.41")
    no_release = {"meta": {"slurm": {"version": {"major": "24", "minor": "11", "micro": "5"}}}}
    assert rest_api.release(no_release) == "24.11.5"
    with pytest.raises(ValueError, match="no Slurm release"):
        rest_api.release({"meta": {}})


@pytest.mark.parametrize(("version", "name", "up", "said"), [
    ("26.05", "ping.v0.0.45.json", True, "No error"),
    ("26.05", "ping.v0.0.42.json", True, "UP"),
    ("26.05", "ping-expired-token.v0.0.45.json", False, "Protocol authentication error"),
    ("24.11", "ping-expired-token.v0.0.41.json", False, "DOWN"),
])
def test_a_ping_is_up_only_where_slurmctld_answered(version: str, name: str, up: bool,
                                                    said: str) -> None:
    answered, seen = rest_api.ping_up(_answer(version, name))
    assert answered is up and said in seen, seen
    assert rest_api.ping_up({"pings": []}) == (False, "no ping in the answer")


@pytest.mark.parametrize("version", ["24.11", "26.05"])
def test_an_expired_token_is_slurmctld_s_authentication_error(version: str) -> None:
    name = {"24.11": "jobs-expired-token.v0.0.41.json",
            "26.05": "jobs-expired-token.v0.0.45.json"}[version]
    assert rest_api.errors(_answer(version, name)) == [
        (rest_api.AUTH_ERROR, "Protocol authentication error / Unable to query jobs")]


def test_a_refused_submission_says_why() -> None:
    answer = _answer("24.11", "submit-bad-partition.v0.0.41.json")
    assert "Invalid partition name specified" in rest_api.error_text(answer)
    assert _answer("24.11", "submit.v0.0.41.json")["job_id"] == 1


def test_job_answers_read_as_the_squeue_json_they_share() -> None:
    old = parse.parse_squeue_json((DATA / "24.11" / "jobs.v0.0.41.json").read_text())
    assert (old["1"].native_state, old["1"].exit_code) == ("FAILED", 3)
    assert old["2"].native_state == "CANCELLED"
    new = parse.parse_squeue_json((DATA / "26.05" / "jobs-failed-exit3.v0.0.45.json")
                                  .read_text())
    [job] = new.values()
    assert (parse.normalise(job.native_state), job.exit_code) == (JobState.FAILED, 3)


def _jwt(payload: dict[str, Any]) -> str:
    body = base64.urlsafe_b64encode(json.dumps(payload).encode()).decode().rstrip("=")
    return f"eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.{body}.c2ln"


def test_a_token_s_expiry_and_scontrol_s_line() -> None:
    token = _jwt({"exp": 1796662251, "iat": 1796661651, "sun": "submitter"})
    assert rest_api.token_expiry(token) == 1796662251
    assert rest_api.token_expiry("not-a-jwt") is None
    assert rest_api.token_expiry("a.%%%.c") is None
    assert rest_api.parse_token(f"SLURM_JWT={token}\n") == token
    with pytest.raises(ValueError, match="SLURM_JWT"):
        rest_api.parse_token("scontrol: error: JWT authentication disabled\n")


def test_inputs_embedded_in_the_script_land_byte_for_byte(tmp_path: Path) -> None:
    files = {"a.bin": bytes(range(256)) * 3, "empty": b"", "name with space": b"x\n"}
    script = rest_api.embedded_inputs(files, str(tmp_path / "job"))
    subprocess.run(["bash", "-c", script], check=True, timeout=30)
    assert {p.name: p.read_bytes() for p in (tmp_path / "job").iterdir()} == files


def test_the_submit_body_carries_an_environment_and_set_numbers() -> None:
    body = rest_api.submit_body(script="#!/bin/bash\ntrue\n", name="j", workdir="/w",
                                environment={"PATH": "/bin"}, cpus=2, minutes=3, nodes=2)
    job = body["job"]
    assert job["environment"] == ["PATH=/bin"] and job["cpus_per_task"] == 2
    assert job["time_limit"] == {"set": True, "infinite": False, "number": 3}
    assert (job["minimum_nodes"], job["tasks_per_node"]) == (2, 1)


# ---------------------------------------------------------------- the client over replies


class _Replay(BaseHTTPRequestHandler):
    """Answers every request with the recording the test named (and its HTTP status)."""

    reply: tuple[int, bytes] = (200, b"{}")

    def _answer(self) -> None:
        status, body = self.reply
        self.send_response(status)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_DELETE = _answer

    def log_message(self, *args: Any) -> None:
        """Quiet."""


@pytest.fixture
def replay() -> Iterator[tuple[str, type[_Replay]]]:
    handler = type("Replay", (_Replay,), {})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", handler
    server.shutdown()
    server.server_close()


def test_the_client_names_an_expired_token_and_the_fix(replay: tuple[str, Any]) -> None:
    url, handler = replay
    handler.reply = (500, (DATA / "26.05" / "jobs-expired-token.v0.0.45.json").read_bytes())
    token = _jwt({"exp": int(time.time()) - 60, "sun": "submitter"})
    client = RestSlurmClient(url, token, "s", api_version="v0.0.45")
    with pytest.raises(BackendCallError) as refused:
        client.status([JobHandle("s", "7")])
    said = str(refused.value)
    assert "expired at" in said and "scontrol token username=submitter" in said
    assert token not in said


def test_the_client_refuses_what_the_api_cannot_give(replay: tuple[str, Any]) -> None:
    url, handler = replay
    handler.reply = (404, b"Unable find requested URL. Please view /openapi/v3 for API reference.")
    client = RestSlurmClient(url, _jwt({"exp": int(time.time()) + 600}), "s",
                             api_version="v0.0.40")
    with pytest.raises(BackendCallError, match=re.escape("does not serve OpenAPI v0.0.40")):
        client.versions()
    [out] = client.fetch_outputs([JobHandle("s", "1")], Path("/nonexistent"))
    assert out.error == NO_FILES
    [refused] = client.submit([JobSpec(script="true\n", outputs=("out.txt",))])
    assert refused.handle is None and "cannot come back" in refused.error


def test_an_answer_from_another_version_s_plugin_fails_closed(replay: tuple[str, Any]) -> None:
    url, handler = replay
    handler.reply = (200, (DATA / "26.05" / "ping.v0.0.45.json").read_bytes())
    client = RestSlurmClient(url, _jwt({"exp": int(time.time()) + 600}), "s",
                             api_version="v0.0.44")
    with pytest.raises(BackendCallError, match=re.escape("its v0.0.45 plugin, not v0.0.44")):
        client.versions()
    good = RestSlurmClient(url, "t", "s", api_version="v0.0.45")
    assert good.versions() == {"daemon": "26.05.5", "api": "v0.0.45"}


@pytest.mark.parametrize("asked", ["latest", "0.0", "v0.0.42x", "v.0.0.42"])
def test_an_option_that_is_no_version_is_refused_naming_it(asked: str) -> None:
    with pytest.raises(rest_api.RestVersionError,
                       match=r"options\.rest_api_version is .*not an OpenAPI version.*"
                             r"v0\.0\.40, v0\.0\.41, v0\.0\.42"):
        rest_api.choose_version(["v0.0.40", "v0.0.41", "v0.0.42"], asked)
    assert rest_api.choose_version(["v0.0.41", "v0.0.42"], " v0.0.41 ") == "v0.0.41"


@pytest.mark.parametrize("value", ["8h", 0, -5, 3.9, True, None])
def test_a_token_lifespan_that_is_no_whole_number_of_seconds_is_refused(value: Any) -> None:
    import dataclasses

    from pytest_stacks.errors import StacksError
    from pytest_stacks.manifest import load
    from pytest_stacks.providers.rest_access import token_lifespan

    real = load(DATA.parents[2] / "manifest.yaml").get("slurm-24.11-rest")
    bad = dataclasses.replace(real, options={**real.options, "rest_token_lifespan": value})
    with pytest.raises(StacksError, match=r"options\.rest_token_lifespan is .*whole seconds"):
        token_lifespan(bad)


@pytest.mark.parametrize(("options", "words"), [
    ({"partition": "short"}, "backend_options ['partition'] are not sent over slurmrestd"),
    ({"memory_mb": 64}, "backend_options ['memory_mb'] are not sent over slurmrestd"),
    ({"workers": "two"}, "backend_options['workers'] must be a whole number above 0"),
])
def test_options_the_rest_client_cannot_honour_refuse_the_job_alone(
        replay: tuple[str, Any], options: dict[str, Any], words: str) -> None:
    url, handler = replay
    handler.reply = (200, (DATA / "24.11" / "submit.v0.0.41.json").read_bytes())
    client = RestSlurmClient(url, _jwt({"exp": int(time.time()) + 600}), "slurm-24.11-rest",
                             api_version="v0.0.41")
    bad, good = client.submit([JobSpec(script="true\n", backend_options=options),
                               JobSpec(script="true\n")])
    assert not bad.ok and words in bad.error, bad
    assert good.ok, good
