"""Fakes that speak the real command line, proven (issue 55): the corpus of command lines
public clients send (tests/parity/corpus.yaml) is replayed on a fake's own command line and
compared with its replay on the real stack the fake claims (recordings/NAME.corpus.json,
made by ``pytest-stacks record NAME``); on a real stack it is recorded afresh and compared at
once with each fake that claims it. Differences pass only where parity.yaml declares them.
"""

from __future__ import annotations

import dataclasses
import os
import uuid
from pathlib import Path

import docker
import pytest

from pytest_stacks import registry
from pytest_stacks.contract import JobClient
from pytest_stacks.manifest import Stack
from pytest_stacks.parity.admission import refusals
from pytest_stacks.parity.compare import compare
from pytest_stacks.parity.corpus import Corpus, read_corpus
from pytest_stacks.parity.recording_run import record_corpus
from pytest_stacks.parity.store import ParityFile, Recording, read_parity_file
from pytest_stacks.plugin.state import state
from pytest_stacks.providers import fake_factory
from pytest_stacks.transports.docker_exec import DockerExecTransport
from tests.parity.login_nodes import FakeLoginNode, TransportLoginNode

PARITY_FILE = Path(__file__).with_name("parity.yaml")
CORPUS_FILE = Path(__file__).with_name("corpus.yaml")
#: Where the corpus's working folder is made on a real stack's login container (a folder the
#: submit user may create, which the scheduler's daemons see at the same path).
REAL_WORK_ROOT = {"slurm": "/work/jobs", "htcondor": "/tmp"}
SUBMIT_USER = "submitter"


def _fake_replay(fake: Stack, parity: ParityFile, corpus: Corpus, folder: Path) -> Recording:
    """The corpus on a fake's command line, the fake configured as its daemons are."""
    pairing = parity.pairings[fake.name]
    configured = dataclasses.replace(fake, options={**fake.options, **pairing.options})
    client, _logs, close = fake_factory(configured)(configured, folder / "run")
    try:
        double = getattr(client, registry.BACKENDS[fake.backend].fake_double or "")
        work = folder / f"corpus-{uuid.uuid4().hex[:12]}"
        node = FakeLoginNode(double.commands, SUBMIT_USER, work)
        return record_corpus(corpus, node, stack=fake.name, backend=fake.backend,
                             versions=dict(client.versions()), workdir=str(work),
                             timeout=fake.timeouts.job, provider=fake.provider)
    finally:
        close()


def _diff(parity: ParityFile, fake: Stack, real: Recording, answered: Recording) -> str:
    comparison = compare(fake.backend, real.steps, answered.steps, parity.declared)
    if comparison.same:
        return ""
    return comparison.render(
        f"{fake.name} does not answer the clients' command lines as {real.stack} "
        f"{real.versions} did (recorded {real.recorded_at}); update the fake, or declare the "
        f"difference with its reason in {PARITY_FILE.name}:")


@pytest.mark.requires("submit", "status")
def test_the_fake_answers_the_clients_command_lines_as_its_daemon(
        request: pytest.FixtureRequest, stack: Stack, backend: JobClient,
        stack_info: dict[str, object], tmp_path: Path,
        record_property: pytest.RecordProperty) -> None:
    if stack.backend not in REAL_WORK_ROOT:
        pytest.skip(f"the corpus holds command lines of Slurm and HTCondor, not {stack.backend}")
    parity = read_parity_file(PARITY_FILE)
    corpus = read_corpus(CORPUS_FILE, stack.backend)
    manifest = state(request.config).manifest
    assert manifest is not None
    if stack.provider == "fake":
        pairing = parity.pairings.get(stack.name)
        assert pairing is not None, f"pair {stack.name} with a real stack in {PARITY_FILE}"
        path = parity.recording_path(pairing.against, "corpus")
        assert path.is_file(), (f"no corpus recording of {pairing.against} at {path}: make it "
                                f"with `pytest-stacks record {pairing.against}`")
        real = Recording.read(path)
        refused = refusals(real, path, pairing.against, manifest, scenario=corpus.digest)
        assert not refused, "\n".join(refused)
        record_property("pytest-stacks:parity", f"corpus checked against {real.stack} "
                                                f"recorded {real.recorded_at}")
        answered = _fake_replay(stack, parity, corpus, tmp_path)
        diff = _diff(parity, stack, real, answered)
        assert not diff, diff
        return
    if not parity.fakes_of(stack.name):
        pytest.skip(f"no fake is held to {stack.name} in {PARITY_FILE.name}: the corpus is "
                    f"recorded on the stacks the fakes answer as (`pytest-stacks record` for "
                    f"evidence elsewhere)")
    container = stack_info.get("container")
    if not isinstance(container, str) or not container:
        pytest.skip(f"{stack.name} has no login container here to replay the corpus in")
    transport = DockerExecTransport(docker.from_env().containers.get(container))
    node = TransportLoginNode(transport, SUBMIT_USER)
    work = f"{REAL_WORK_ROOT[stack.backend]}/corpus-{uuid.uuid4().hex[:12]}"
    pool = state(request.config).pool
    try:
        fresh = record_corpus(corpus, node, stack=stack.name, backend=stack.backend,
                              versions=dict(backend.versions()), workdir=work,
                              timeout=stack.timeouts.job, provider=stack.provider,
                              run_id=pool.ctx.run_id if pool is not None else None)
    finally:
        node.remove(work)
    target = Path(os.environ.get("PYTEST_STACKS_RECORD_TO", ".pytest-stacks/recordings"))
    written = fresh.write(target / f"{stack.name}.corpus.json")
    record_property("pytest-stacks:parity", f"corpus recorded to {written}")
    fakes = [s for s in manifest.stacks
             if s.name in {p.fake for p in parity.fakes_of(stack.name)}]
    diffs = [_diff(parity, fake, fresh, _fake_replay(fake, parity, corpus,
                                                     tmp_path / fake.name))
             for fake in fakes]
    assert not any(diffs), "\n\n".join(d for d in diffs if d)
