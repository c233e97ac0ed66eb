"""Pure builders of the Namespace, Pod and MPIJob manifests (dicts) a run and its jobs become,
and pure readers of the state the API server stores in them.

``JobSpec.backend_options`` keys read here:

- ``shape``: ``"pod"`` (one Pod) or ``"mpijob"`` (one kubeflow.org/v2beta1 MPIJob);
- ``workers``: MPIJob worker replicas;
- ``image``: the container image (pin it by digest on a real stack); a job's own
  ``JobSpec.container`` comes first: every container of the job runs in that image;
- ``exit_code`` (int, default 0), ``message`` (str), ``keep_running`` (bool): the simulated
  outcome. **Pods do not execute on a kwok-based stack**: the script is carried in the pod
  for the record, but what a pod ends with is exactly what these annotations say, read by a
  kwok Stage (real stack) or the double's pod lifecycle. Without ``keep_running`` the pod (the
  launcher, for an MPIJob) finishes shortly after it runs: Succeeded with exit 0, or Failed
  with the annotated non-zero exit code and message. With it, it stays Running until deleted.
  Where a kubelet runs the pods (:class:`Runtime` ``real``) these three are ignored: the
  script runs in the image's shell and the container's own exit code and logs are the outcome;
  an MPIJob's workers serve sshd and its launcher runs the script (``mpirun ...``).
- ``launcher_replicas`` (int, default 1): only to build an MPIJob the operator refuses, for
  tests of the harness's handling of invalid jobs.
- ``ttl_seconds`` (int): the MPIJob's ``runPolicy.ttlSecondsAfterFinished``.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from pytest_stacks.backends.kubernetes import staging
from pytest_stacks.backends.kubernetes.api import (
    ANNOTATION_EXIT_CODE,
    ANNOTATION_MESSAGE,
    ANNOTATION_RUNNING,
    KWOK_NODE_SELECTOR,
    KWOK_TOLERATION,
    LABEL_JOB,
    LABEL_RUN,
    RESOURCES,
    Obj,
)
from pytest_stacks.contract import JobSpec

SHAPES = ("pod", "mpijob")
PULL_POLICIES = ("", "Always", "IfNotPresent", "Never")
SSHD = ["/usr/sbin/sshd", "-De"]
LABEL_MPI_ROLE = "pytest-stacks.io/mpi-role"  # on the workers of a spread MPIJob
MPI_HOSTFILE = "/etc/mpi/hostfile"  # where the operator mounts its <job>-config hostfile
REAL_GRACE_SECONDS = 3  # `sh -c` as PID 1 ignores SIGTERM: a killed job goes in seconds


@dataclass(frozen=True)
class Runtime:
    """How pods meet their node, per stack.

    ``real=False`` (kwok, the double): pods are pinned to the simulated nodes and end as their
    annotations say. ``real=True`` (a kubelet): nothing is simulated; ``pull_policy`` is every
    container's imagePullPolicy ("" leaves the API's default; ``Never`` where the images were
    imported and no registry exists) and ``cpu_request``, if set, replaces every container's
    CPU request (a one-node cluster of 2 cores cannot place an MPIJob's 3 pods at 1 CPU each).
    ``mpi``: the MPI of the worker image, as the operator's ``spec.mpiImplementation`` names
    it (``OpenMPI`` or ``MPICH``): the operator sets that implementation's launcher variables.
    """

    real: bool = False
    pull_policy: str = ""
    cpu_request: str = ""
    mpi: str = "OpenMPI"
    #: One worker per node (a required pod anti-affinity on the node's hostname): ranks on
    #: distinct nodes, not only distinct pods. A cluster with too few nodes leaves a worker
    #: Pending, which the job's wait reports; never a silent fallback to one node.
    spread: bool = False
    #: The image of a job's staging containers (:mod:`staging`); "" stages nothing.
    stager: str = ""


SIMULATED = Runtime()


@dataclass(frozen=True)
class JobOptions:
    shape: str
    workers: int
    image: str
    exit_code: int = 0
    message: str = ""
    keep_running: bool = False
    launcher_replicas: int = 1
    ttl_seconds: int | None = None
    runtime: Runtime = SIMULATED
    #: The MPIJob as the operator's documentation writes it: without what this driver adds
    #: to the launcher (:data:`DRIVER_LAUNCHER_ENV`), so a test can show what a user's own
    #: MPIJob gets from the operator alone.
    documented: bool = False


def options_of(spec: JobSpec, *, shape: str, workers: int, image: str,
               runtime: Runtime = SIMULATED) -> JobOptions:
    """The spec's backend options over the client's defaults; ValueError names a bad one."""
    raw: Mapping[str, Any] = spec.backend_options or {}
    opts = JobOptions(
        shape=str(raw.get("shape", shape)),
        workers=_int(raw, "workers", workers),
        image=spec.container or str(raw.get("image", image)),
        exit_code=_int(raw, "exit_code", 0),
        message=str(raw.get("message", "")),
        keep_running=_bool(raw, "keep_running"),
        launcher_replicas=_int(raw, "launcher_replicas", 1),
        ttl_seconds=_int(raw, "ttl_seconds", -1) if "ttl_seconds" in raw else None,
        runtime=runtime,
        documented=_bool(raw, "documented"),
    )
    if runtime.pull_policy not in PULL_POLICIES:
        raise ValueError(f"image pull policy {runtime.pull_policy!r}: expected one of "
                         f"{PULL_POLICIES[1:]}")
    if opts.shape not in SHAPES:
        raise ValueError(f"backend option shape={opts.shape!r}: expected one of {SHAPES}")
    if opts.workers < 0:
        raise ValueError(f"backend option workers={opts.workers}: must be >= 0")
    if not 0 <= opts.exit_code <= 255:
        raise ValueError(f"backend option exit_code={opts.exit_code}: must be 0..255")
    if not opts.image:
        raise ValueError("no image: give the client an image or backend option image")
    return opts


def _int(raw: Mapping[str, Any], key: str, default: int) -> int:
    value = raw.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"backend option {key}={value!r}: expected an integer")
    return value


def _bool(raw: Mapping[str, Any], key: str) -> bool:
    value = raw.get(key, False)
    if not isinstance(value, bool):
        raise ValueError(f"backend option {key}={value!r}: expected true or false")
    return value


def namespace(name: str, run_id: str) -> Obj:
    return {"apiVersion": "v1", "kind": "Namespace",
            "metadata": {"name": name, "labels": {LABEL_RUN: run_id}}}


def outcome_annotations(opts: JobOptions) -> dict[str, str]:
    """What a simulated pod ends with; nothing where a kubelet really runs it."""
    if opts.runtime.real:
        return {}
    return {ANNOTATION_EXIT_CODE: str(opts.exit_code), ANNOTATION_MESSAGE: opts.message,
            ANNOTATION_RUNNING: "true" if opts.keep_running else "false"}


def _labels(run_id: str, job: str) -> dict[str, str]:
    return {LABEL_RUN: run_id, LABEL_JOB: job}


def _container(spec: JobSpec, opts: JobOptions, env: Mapping[str, str] | None = None) -> Obj:
    runtime = opts.runtime
    container: Obj = {
        "name": "job",
        "image": opts.image,
        "command": ["/bin/sh", "-c", spec.body],
        "env": [{"name": k, "value": v} for k, v in {**(env or {}), **spec.env}.items()],
        "resources": {"requests": {"cpu": runtime.cpu_request or str(spec.cpus)}},
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    if runtime.pull_policy:
        container["imagePullPolicy"] = runtime.pull_policy
    if spec.args:
        container["args"] = [spec.name, *spec.args]  # sh -c SCRIPT $0 $1 ...
    return container


def _pod_spec(spec: JobSpec, opts: JobOptions, *, restart: bool = True,
              env: Mapping[str, str] | None = None) -> Obj:
    pod_spec: Obj = {"containers": [_container(spec, opts, env)]}
    if opts.runtime.real:
        pod_spec["terminationGracePeriodSeconds"] = REAL_GRACE_SECONDS
    else:
        pod_spec.update(nodeSelector=dict(KWOK_NODE_SELECTOR), tolerations=[dict(KWOK_TOLERATION)])
    if restart:  # an MPIJob sets restartPolicy on the replica spec, not in the template
        pod_spec["restartPolicy"] = "Never"
        pod_spec["activeDeadlineSeconds"] = spec.walltime_s
    return pod_spec


def _sshd_worker(template: Obj) -> Obj:
    """A real MPI worker: the image's sshd in the foreground, Ready once it accepts
    connections (the launcher waits for that: launcherCreationPolicy WaitForWorkersReady)."""
    worker = copy.deepcopy(template)
    [container] = worker["containers"]
    container["command"] = list(SSHD)
    container.pop("args", None)
    # Every 3 s, not every second: workers of finished MPIJobs stay up (cleanPodPolicy None)
    # and OpenSSH 10 execs an sshd-session per probe connection; at 1 s, ~40 idle workers
    # late in a suite drove a 2-core host to a load of 300 (a cold window, kind).
    container["readinessProbe"] = {"tcpSocket": {"port": 22}, "periodSeconds": 3}
    return worker


def _behind_entrypoint(template: Obj) -> None:
    """The launcher's command as the operator's examples give it: in ``args``, so the worker
    image's entrypoint runs first and waits until the workers' names resolve
    (stacks/mpi-worker/mpi-entrypoint.sh); ``command`` would pass it by, and an MPI that meets
    a name not yet in DNS fails at once."""
    [container] = template["containers"]
    container["args"] = [*container.pop("command"), *container.get("args", [])]


def pod(spec: JobSpec, opts: JobOptions, *, name: str, namespace: str, run_id: str) -> Obj:
    """One Pod; with staging containers where the job has remote files (the driver checks
    first that they can be staged: :func:`refusal`)."""
    pod_spec = _pod_spec(spec, opts)
    if spec.remote_inputs or spec.remote_outputs:
        staging.add_staging(pod_spec, spec, stager=opts.runtime.stager,
                            pull_policy=opts.runtime.pull_policy)
    return {
        "apiVersion": RESOURCES["Pod"].api_version, "kind": "Pod",
        "metadata": {"name": name, "namespace": namespace, "labels": _labels(run_id, name),
                     "annotations": outcome_annotations(opts)},
        "spec": pod_spec,
    }


def _replica(replicas: int, template_spec: Obj, labels: Mapping[str, str],
             annotations: Mapping[str, str]) -> Obj:
    return {"replicas": replicas, "restartPolicy": "Never",
            "template": {"metadata": {"labels": dict(labels), "annotations": dict(annotations)},
                         "spec": copy.deepcopy(template_spec)}}


#: What the driver adds to a real MPIJob's launcher beyond what the operator sets. Open MPI 5
#: (PRRTE) ignores the operator's OMPI_MCA_orte_default_hostfile (Open MPI 4's name), so an
#: MPIJob as documented runs every rank on the launcher there; naming the operator's hostfile
#: the way PRRTE reads it makes a plain `mpirun` use the workers. The report names it per
#: stack (``adapter.driver_note``); the backend option ``documented: true`` leaves it out.
DRIVER_LAUNCHER_ENV = {"PRTE_MCA_prte_default_hostfile": MPI_HOSTFILE}


def mpijob(spec: JobSpec, opts: JobOptions, *, name: str, namespace: str, run_id: str) -> Obj:
    """One MPIJob: a Launcher that ends as annotated (simulated) or runs the script (real),
    Workers that stay up (simulated; really sshd) until the MPIJob is deleted (cleanPodPolicy
    None keeps them after the launcher finishes)."""
    labels = _labels(run_id, name)
    real = opts.runtime.real
    launcher_env = (dict(DRIVER_LAUNCHER_ENV)
                    if real and not opts.documented and opts.runtime.mpi == "OpenMPI" else {})
    template = _pod_spec(spec, opts, restart=False, env=launcher_env)
    if real and not spec.container:
        _behind_entrypoint(template)
    worker_template = _sshd_worker(_pod_spec(spec, opts, restart=False)) if real else template
    workers = {} if real else {ANNOTATION_RUNNING: "true"}
    worker_labels = dict(labels)
    if real and opts.runtime.spread:
        worker_labels[LABEL_MPI_ROLE] = "worker"
        worker_template["affinity"] = {"podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [{
                "topologyKey": "kubernetes.io/hostname",
                "labelSelector": {"matchLabels": {**labels, LABEL_MPI_ROLE: "worker"}}}]}}
    job_spec: Obj = {
        "slotsPerWorker": 1,
        "runPolicy": {"cleanPodPolicy": "None", "backoffLimit": 0,
                      "activeDeadlineSeconds": spec.walltime_s,
                      **({"ttlSecondsAfterFinished": opts.ttl_seconds}
                         if opts.ttl_seconds is not None else {})},
        "mpiReplicaSpecs": {
            "Launcher": _replica(opts.launcher_replicas, template, labels,
                                 outcome_annotations(opts)),
            "Worker": _replica(opts.workers, worker_template, worker_labels, workers),
        },
    }
    if real:
        job_spec.update(launcherCreationPolicy="WaitForWorkersReady",
                        mpiImplementation=opts.runtime.mpi)
    return {
        "apiVersion": RESOURCES["MPIJob"].api_version, "kind": "MPIJob",
        "metadata": {"name": name, "namespace": namespace, "labels": labels},
        "spec": job_spec,
    }


# ---------------------------------------------------------------- pure readers of what is stored

POD_PHASES = {"Pending": "pending", "Running": "running", "Succeeded": "completed",
              "Failed": "failed"}


def terminated(pod: Obj | None) -> Obj:
    """The terminated state of a pod's payload container (the one named ``job``: ours, and
    an MPIJob launcher's from our template; else the first), or {}."""
    statuses = ((pod or {}).get("status") or {}).get("containerStatuses") or [{}]
    ours = [s for s in statuses if s.get("name") == staging.JOB] or statuses
    return dict((ours[0].get("state") or {}).get("terminated") or {})


def conditions(obj: Obj) -> dict[str, Obj]:
    """The object's conditions that are True, by type."""
    return {str(c.get("type")): c for c in (obj.get("status") or {}).get("conditions") or []
            if c.get("status") == "True"}


def pod_state(pod: Obj) -> tuple[str, str, int | None, str]:
    """(JobState value, native state, exit code, reason) of a pod from its phase and its
    container's terminated state. Evicted and deadline-exceeded pods show their reason."""
    status = pod.get("status") or {}
    phase = str(status.get("phase") or "Pending")
    state = POD_PHASES.get(phase, "unknown")
    exit_code = terminated(pod).get("exitCode")
    if state == "completed" and exit_code is None:
        exit_code = 0
    reason = " ".join(str(x) for x in (status.get("reason"), status.get("message")) if x)
    if state == "pending" and not reason:
        reason = "; ".join(str(c.get("message", "")) for c in status.get("conditions") or []
                           if c.get("type") == "PodScheduled" and c.get("status") == "False")
    if state == "failed" and not exit_code and (stage := staging.failed_staging(pod)):
        exit_code, reason = stage[0], "; ".join(x for x in (reason, stage[1]) if x)
    native = f"{phase}/{status['reason']}" if status.get("reason") else phase
    return state, native, None if exit_code is None else int(exit_code), reason


def finished_at(pod: Obj) -> str | None:
    """When the pod's last container ended (a staging upload ends after the payload)."""
    times = [str(t) for entry in (pod.get("status") or {}).get("containerStatuses") or []
             if (t := ((entry.get("state") or {}).get("terminated") or {}).get("finishedAt"))]
    return max(times) if times else None


def refusal(spec: JobSpec, opts: JobOptions, nodes: Callable[[], list[Obj]]) -> str:
    """Why the job is refused at submit ("" where it is not): files it cannot have, then an
    image it needs (its own, the stager where it stages) that no node has."""
    runtime = opts.runtime
    staged = bool(spec.remote_inputs or spec.remote_outputs)
    said = staging.refusal(spec, runtime.real, runtime.stager, opts.shape)
    for image in (spec.container, runtime.stager if staged else ""):
        said = said or (image_refusal(image, runtime, nodes) if image else "")
    return said


def image_refusal(image: str, runtime: Runtime, nodes: Callable[[], list[Obj]]) -> str:
    """Where nothing is pulled (``imagePullPolicy: Never``, no registry), a job in an image no
    node reports would wait in ErrImageNeverPull until its deadline: why it is refused at
    submit instead ("" where a node has it, or where images are pulled), by the nodes' own
    list of their images (``status.images``)."""
    if not runtime.real or runtime.pull_policy != "Never":
        return ""
    wanted = {image, f"docker.io/{image}", f"docker.io/library/{image}"}
    present = {name for node in nodes() for entry in (node.get("status") or {}).get("images")
               or [] for name in entry.get("names") or []}
    if wanted & present:
        return ""
    return (f"refused at submit: no node has image {image!r} and this stack pulls nothing "
            "(imagePullPolicy Never); import it into the nodes first")
