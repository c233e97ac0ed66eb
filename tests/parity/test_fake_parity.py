"""Fakes proven against their daemons (pytest_stacks.parity).

On a fake stack: the scenario's exchanges with the fake are compared with the recording of the
real stack it claims to be (tests/parity/parity.yaml pairs them); the recording is committed,
so this runs in the fake lane, every minute, without Docker. On a real stack: the scenario is
recorded afresh (written under ``$PYTEST_STACKS_RECORD_TO``, default
``.pytest-stacks/recordings``; CI uploads it) and compared at once with each fake that claims
this stack, so a pin that moves turns this red in its own PR, with the diff.

A committed recording is trusted only when it says it came from the real stack it is filed
under, at that stack's pinned version, made by this scenario (pytest_stacks.parity.admission).
A declaration that excused nothing is said in the report, never failed on: a race of the real
side need not happen in one run.
"""

from __future__ import annotations

import dataclasses
import os
from pathlib import Path

import pytest

from pytest_stacks.contract import JobClient
from pytest_stacks.manifest import Stack
from pytest_stacks.parity.admission import refusals
from pytest_stacks.parity.compare import compare
from pytest_stacks.parity.recording_run import NotTappable, record
from pytest_stacks.parity.store import Pairing, ParityFile, Recording, read_parity_file
from pytest_stacks.plugin.state import state
from pytest_stacks.providers import fake_factory

PARITY_FILE = Path(__file__).with_name("parity.yaml")
#: What the scenario needs at least; execution, inputs and outputs are used where offered.
CAPABILITIES = ("submit", "status", "kill", "purge")


def _fake_run(fake: Stack, pairing: Pairing, run_dir: Path) -> Recording:
    """The scenario on the fake, configured as the daemons it is checked against are."""
    configured = dataclasses.replace(fake, options={**fake.options, **pairing.options})
    client, _logs, close = fake_factory(configured)(configured, run_dir)
    try:
        return record(client, stack=fake.name, backend=fake.backend, run_dir=run_dir,
                      timeout=fake.timeouts.job, capabilities=fake.capabilities,
                      provider=fake.provider)
    finally:
        close()


def _check(parity: ParityFile, fake: Stack, real: Recording, run_dir: Path) -> tuple[str, str]:
    """The readable diff ("" when the fake answered as the recording says), and what the
    report says of the declarations that excused nothing ("" when none)."""
    pairing = parity.pairings[fake.name]
    answered = _fake_run(fake, pairing, run_dir)
    # The daemons' versions must agree; a client's may differ on purpose (the LTS-client
    # fake drives the same schedd), and what it changes shows in the exchanges.
    if answered.versions.get("daemon") != real.versions.get("daemon"):
        return (f"{fake.name} claims daemon {answered.versions.get('daemon')}, but the "
                f"recording of {real.stack} ({real.source}) is of "
                f"{real.versions.get('daemon')}: record it "
                f"again, or move the fake's pin with the daemon's"), ""
    comparison = compare(fake.backend, real.steps, answered.steps, parity.declared)
    stale = (f"{fake.name}: {len(comparison.stale)} declaration(s) excused nothing "
             f"({', '.join(d.name for d in comparison.stale)})" if comparison.stale else "")
    if comparison.same:
        return "", stale
    return comparison.render(real.mismatch_title(fake.name, PARITY_FILE.name)), stale


@pytest.mark.requires(*CAPABILITIES)
def test_the_fake_answers_as_its_daemon(
        request: pytest.FixtureRequest, stack: Stack, backend: JobClient, tmp_path: Path,
        record_property: pytest.RecordProperty) -> None:
    parity = read_parity_file(PARITY_FILE)
    manifest = state(request.config).manifest
    assert manifest is not None
    if stack.provider == "fake":
        pairing = parity.pairings.get(stack.name)
        assert pairing is not None, (
            f"{stack.name} is checked against no recording: pair it with the real stack it "
            f"claims to be under 'fakes' in {PARITY_FILE}")
        path = parity.recording_path(pairing.against)
        assert path.is_file(), (
            f"no recording of {pairing.against} at {path}: make it with "
            f"`pytest-stacks record {pairing.against}` (it needs a Docker engine)")
        real = Recording.read(path)
        checked = (f"checked against {real.stack} {real.versions.get('daemon', '')} "
                   f"recorded {real.recorded_at}")
        record_property("pytest-stacks:parity", checked)
        refused = refusals(real, path, pairing.against, manifest)
        assert not refused, "\n".join(refused)
        diff, stale = _check(parity, stack, real, tmp_path / "fake")
        record_property("pytest-stacks:parity", "; ".join(filter(None, [checked, stale])))
        assert not diff, diff
        return
    pool = state(request.config).pool
    try:
        fresh = record(backend, stack=stack.name, backend=stack.backend,
                       run_dir=tmp_path / "real", timeout=stack.timeouts.job,
                       capabilities=stack.capabilities, provider=stack.provider,
                       run_id=pool.ctx.run_id if pool is not None else None)
    except NotTappable as exc:
        pytest.skip(str(exc))
    target = Path(os.environ.get("PYTEST_STACKS_RECORD_TO", ".pytest-stacks/recordings"))
    written = fresh.write(target / f"{stack.name}.json")
    record_property("pytest-stacks:parity", f"recorded to {written}")
    fakes = [s for s in manifest.stacks if s.name in
             {p.fake for p in parity.fakes_of(stack.name)}]
    if not fakes:
        pytest.skip(f"recorded to {written}; no fake claims {stack.name} in {PARITY_FILE.name}")
    checks = [_check(parity, fake, fresh, tmp_path / fake.name) for fake in fakes]
    record_property("pytest-stacks:parity", "; ".join(
        [f"recorded to {written}", *(stale for _diff, stale in checks if stale)]))
    assert not any(diff for diff, _stale in checks), "\n\n".join(d for d, _s in checks if d)
