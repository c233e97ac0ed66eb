"""Whether a fake may be checked against a recording on disk: only one a real daemon made, of
the real stack it is filed under, at that stack's pinned version, by this scenario.

Fail closed: a recording that does not say where it came from is refused like one that says
it came from a fake; each refusal names the file, what is wrong and the fix (record the stack
again). A recording made in the same run (the real stacks' windows) is not read from disk and
needs none of this.
"""

from __future__ import annotations

from pathlib import Path

from pytest_stacks.manifest import Manifest, Stack
from pytest_stacks.parity.provenance import scenario_digest
from pytest_stacks.parity.store import Recording

#: The providers a recording may come from: each has real daemons.
REAL_PROVIDERS = frozenset({"compose", "kind", "existing"})


def refusals(recording: Recording, path: Path, against: str, manifest: Manifest, *,
             scenario: str | None = None) -> list[str]:
    """Why ``recording`` (read from ``path``) may not stand for the real stack ``against``;
    empty when it may. ``scenario``: the digest of what must have made it (None: the driver
    scenario; a corpus of command lines has its own)."""
    fix = f"re-record with `pytest-stacks record {against}`"
    where = str(path)
    problems: list[str] = []
    provider = recording.provenance.provider
    if not provider:
        problems.append(f"{where} does not say which provider made it (provenance.provider): "
                        f"it may not be a real daemon's recording; {fix}")
    elif provider == "fake":
        problems.append(f"{where} was recorded from a fake (provider fake): a fake is held to "
                        f"what a real daemon answered, never to a fake's answers; {fix}")
    elif provider not in REAL_PROVIDERS:
        problems.append(f"{where}: provenance.provider {provider!r} is none of "
                        f"{', '.join(sorted(REAL_PROVIDERS))}; {fix}")
    recorded = _real(manifest, recording.stack)
    if isinstance(recorded, str):
        problems.append(f"{where}: {recorded}; {fix}")
    elif recording.stack != against:
        problems.append(f"{where} is a recording of {recording.stack}, not of {against} (whose "
                        f"recording this file must be); {fix}")
    real = _real(manifest, against)
    if isinstance(real, str):
        problems.append(f"{where}: {real}: pair the fake with a real stack in parity.yaml")
    elif recording.versions.get("daemon") != real.version:
        problems.append(f"{where} is of daemon {recording.versions.get('daemon')}, but "
                        f"{against} is pinned at {real.version}: the recording is stale; {fix}")
    digest = recording.provenance.scenario
    current = scenario or scenario_digest()
    if digest != current:
        problems.append(f"{where} was made by another scenario (digest {digest or 'missing'}, "
                        f"this one's {current}): it is stale; {fix}")
    return problems


def _real(manifest: Manifest, name: str) -> Stack | str:
    """The real stack ``name``, or why there is none."""
    if name not in manifest.names():
        return f"{name} is no stack of the manifest"
    stack = manifest.get(name)
    if stack.provider == "fake":
        return f"{name} is a fake stack, not a real one"
    return stack
