"""Record one scenario run of a client, or one replay of a corpus of command lines: what the
flow of a recording is, in one place."""

from __future__ import annotations

from pathlib import Path

from pytest_stacks.contract import JobClient, Tappable
from pytest_stacks.errors import StacksError
from pytest_stacks.parity.corpus import WORK, Corpus, LoginNode, replay
from pytest_stacks.parity.provenance import Provenance
from pytest_stacks.parity.scenario import run_scenario
from pytest_stacks.parity.store import Recording
from pytest_stacks.parity.tap import Recorder


class NotTappable(StacksError):
    """The client offers no ``tapped`` (see :class:`~pytest_stacks.contract.Tappable`)."""


def record(client: JobClient, *, stack: str, backend: str, run_dir: Path,
           timeout: float, provider: str, capabilities: frozenset[str] | None = None,
           run_id: str | None = None) -> Recording:
    """Run the scenario through ``client.tapped`` and return the normalised recording.

    ``run_dir`` holds the outputs fetched; it and the stack's name become placeholders (a
    driver's local folders are named after its stack, which a fake and a daemon do not share).
    ``provider`` (the stack's: ``fake`` for a fake) and ``run_id`` go into its provenance, so
    a fake's own recording can never pass for a daemon's.
    """
    if not isinstance(client, Tappable):
        raise NotTappable(f"the client of {stack} ({type(client).__name__}) has no tapped(): "
                          f"its exchanges cannot be recorded")
    recorder = Recorder()
    tapped = client.tapped(recorder.tap)
    outputs = run_dir / "parity-outputs"
    outputs.mkdir(parents=True, exist_ok=True)
    run_scenario(tapped, recorder, outputs, timeout=timeout, capabilities=capabilities)
    # Names the client made up for its run (a Kubernetes namespace, its jobs' prefix).
    made: dict[str, str] = getattr(tapped, "parity_names", dict)()
    return Recording.of(stack, backend, client.versions(), recorder,
                        {str(run_dir): "<run_dir>", stack: "<stack>", **made},
                        Provenance.now(provider, run_id))


def record_corpus(corpus: Corpus, node: LoginNode, *, stack: str, backend: str,
                  versions: dict[str, str], workdir: str, timeout: float, provider: str,
                  run_id: str | None = None) -> Recording:
    """Replay ``corpus`` on ``node`` in ``workdir`` and return the normalised recording; its
    provenance names the corpus (its digest), not the driver scenario."""
    recorder = replay(corpus, node, workdir, timeout=timeout)
    return Recording.of(stack, backend, versions, recorder, {workdir: WORK, stack: "<stack>"},
                        Provenance.now(provider, run_id, corpus.digest))
