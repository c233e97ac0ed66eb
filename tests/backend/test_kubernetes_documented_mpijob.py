"""Where the ranks of an MPIJob written as the MPI Operator's documentation shows it run, by the
MPI implementation of the worker image: a fact of the operator versions in the window,
recorded like HTCondor's one-shot retrieval.

Both operator versions of the window (0.7.0 and 0.8.2) tell the launcher where the workers are
only through Open MPI 4's variable, ``OMPI_MCA_orte_default_hostfile``. Open MPI 5's launcher
(PRRTE) reads ``PRTE_MCA_prte_default_hostfile`` instead, finds no hostfile, and runs every
rank on the launcher pod: the job succeeds and silently loses its distribution. The reference
driver adds PRRTE's variable (``objects.DRIVER_LAUNCHER_ENV``), so the contract's ``mpi`` test
passes on every stack; ``documented: true`` submits without it, as a user's own MPIJob would
be. The implementation and its version are the launcher's own (``mpirun --version``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.backends.kubernetes.identities import ROLE_LAUNCHER_POD, ROLE_WORKER
from pytest_stacks.contract import JobSpec, JobState, submitted, wait_for
from pytest_stacks.manifest import Stack

pytestmark = [pytest.mark.for_backend("mpi-operator"),
              pytest.mark.requires("submit", "status", "mpi", "execution")]

#: Where the documented MPIJob's ranks run, by (implementation, major version) of the MPI the
#: worker image holds, for the operator versions 0.7 and 0.8. MPICH's Hydra reads the
#: operator's HYDRA_HOST_FILE (set for spec.mpiImplementation: MPICH).
PLACEMENT = {("Open MPI", "4"): "workers", ("Open MPI", "5"): "launcher",
             ("MPICH", "4"): "workers"}

#: The launcher's command of the operator's examples (`mpirun -n 2 <program>`), run as root
#: here (Open MPI then needs --allow-run-as-root), after the MPI's own version lines.
LAUNCH = {"OpenMPI": "mpirun --allow-run-as-root -n 2", "MPICH": "mpirun -n 2"}


def test_a_documented_mpijob_runs_its_ranks_where_the_operator_says(
        backend: Any, stack: Stack, tmp_path: Path) -> None:
    launch = LAUNCH[str(stack.options.get("mpi_implementation", "OpenMPI"))]
    script = f"mpirun --version | head -n 3\n{launch} pytest-stacks-rank\n"
    spec = JobSpec(script=script, name="documented",
                   backend_options={"shape": "mpijob", "workers": 2, "documented": True})
    handles = submitted(backend.submit([spec]))
    wait_for(backend, handles, timeout=stack.timeouts.job)
    [status] = backend.status(handles)
    [result] = backend.fetch_outputs(handles, tmp_path)
    text = "\n".join(p.read_text() for p in result.files.values())
    assert status.state is JobState.COMPLETED and status.exit_code == 0, f"{status}\n{text}"
    found = re.search(r"\((Open MPI)\)\s+(\d+)\.\d+", text) or re.search(
        r"HYDRA build details:\s+Version:\s+(\d+)", text)
    assert found, f"the launcher named no MPI implementation:\n{text}"
    implementation, major = (("Open MPI", found.group(2)) if found.re.groups == 2
                             else ("MPICH", found.group(1)))
    where = PLACEMENT.get((implementation, major))
    assert where is not None, (f"{implementation} {major} is not in PLACEMENT: run this once, "
                               f"read where the ranks ran, and record it:\n{text}")
    identities = backend.identities(handles)
    workers = sorted(i.name for i in identities if i.role == ROLE_WORKER)
    [launcher_pod] = [i for i in identities if i.role == ROLE_LAUNCHER_POD]
    # The operator names the launcher's host (spec.hostname: <mpijob>-launcher), not its pod.
    pod = backend.api.get("Pod", launcher_pod.namespace, launcher_pod.name) or {}
    launcher = str((pod.get("spec") or {}).get("hostname") or launcher_pod.name)
    hosts = sorted(re.findall(r"rank=\d+ size=2 host=(\S+)", text))
    assert len(hosts) == 2, text
    expected = workers if where == "workers" else [launcher, launcher]
    assert hosts == expected, (
        f"{implementation} {major} with operator {stack.version}: the documented MPIJob's "
        f"ranks ran on {hosts}, the record says {where} ({expected})")
