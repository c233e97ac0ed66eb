"""The container variant of the contract: a job that requests an image runs in that image,
proven from inside the job, or it is refused at submit with the reason. Never a silent run on
the bare node: that is the one outcome both tests fail on."""

from __future__ import annotations

import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.contract import JobClient, JobSpec, JobState, submitted, wait_for
from pytest_stacks.manifest import Stack

from .nodes import node_containers, on_node

MARKER = "/etc/pytest-stacks-probe"  # exists only in the probe image (stacks/container-probe)
OS_RELEASE = "/etc/os-release"
#: Knobs the Kubernetes driver reads (one Pod, not an MPIJob whose workers need sshd);
#: the other drivers ignore them.
ONE_POD = {"shape": "pod"}


def _from_image(image: str, path: str) -> str:
    """A file as the image itself has it, read by running the image on this host's engine
    (never pulled: the probe is built here, a registry's image of that name is not it)."""
    done = subprocess.run(["docker", "run", "--rm", "--pull=never", "--network=none", image,
                           "cat", path],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, f"cannot read {path} from image {image}: {done.stderr}"
    return done.stdout


def _between(text: str, start: str, end: str) -> str:
    assert start in text and end in text, f"the job's report is incomplete:\n{text[-2000:]}"
    return text.split(start, 1)[1].split(end, 1)[0].lstrip("\n")


@pytest.mark.requires("submit", "status", "container")
def test_a_job_runs_in_the_image_it_requests(backend: JobClient, stack: Stack,
                                             stack_info: dict[str, Any],
                                             tmp_path: Path) -> None:
    """The job prints the probe image's marker file and os-release from inside; both must be
    the image's own (read from the image on the host), and no node of the stack may have
    either: a job run on the bare node prints Debian's os-release and no marker."""
    image = str(stack.options.get("container_probe") or "")
    assert image, f"stack {stack.name} declares container but names no options.container_probe"
    tag = uuid.uuid4().hex[:8]
    begin, middle, end = (f"=={tag}:{part}==" for part in ("marker", "os-release", "end"))
    report = f"echo '{begin}'; cat {MARKER}; echo '{middle}'; cat {OS_RELEASE}; echo '{end}'"
    files = ("probe.txt",) if "outputs" in stack.capabilities else ()
    script = f"{{ {report}; }} | tee probe.txt\n" if files else f"{report}\n"
    spec = JobSpec(script=script, name="in-image", container=image, outputs=files,
                   backend_options=ONE_POD)
    [handle] = submitted(backend.submit([spec]))
    [status] = wait_for(backend, [handle], timeout=stack.timeouts.job)
    [result] = backend.fetch_outputs([handle], tmp_path)
    text = "\n".join(p.read_text(errors="replace") for p in result.files.values())
    assert status.state is JobState.COMPLETED, f"{status}\n{text[-2000:]}"
    assert result.ok, result.error
    marker, os_release = _between(text, begin, middle), _between(text, middle, end)
    assert marker == _from_image(image, MARKER), text[-2000:]
    assert os_release == _from_image(image, OS_RELEASE), text[-2000:]
    for node in node_containers(stack, stack_info):
        assert on_node(node, f"test -e {MARKER}").returncode == 1, f"node {node} has {MARKER}"
        seen = on_node(node, f"cat {OS_RELEASE}")
        assert seen.returncode == 0 and seen.stdout.strip(), seen.stderr
        assert seen.stdout != os_release, f"node {node} runs the same OS as the image"


@pytest.mark.requires("submit", "status", "container.refused")
def test_a_job_that_requests_an_image_is_refused_at_submit(backend: JobClient,
                                                           stack: Stack) -> None:
    """Refused per job, with the reason, in the submit's own answer: the other job of the same
    bulk submit is accepted and runs."""
    in_image = JobSpec(script="true\n", name="in-image",
                       container="docker.io/library/debian:trixie-slim", backend_options=ONE_POD)
    refused, accepted = backend.submit([in_image, JobSpec(script="true\n", name="plain")])
    assert not refused.ok, "a job in a container image was accepted where none can run"
    assert "container" in refused.error.lower(), refused.error
    [handle] = submitted([accepted])
    [status] = wait_for(backend, [handle], timeout=stack.timeouts.job)
    assert status.state is JobState.COMPLETED, status
