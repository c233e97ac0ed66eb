"""The double's MPI Operator (kubeflow.org/v2beta1) and its leader lease.

For a valid MPIJob it creates, all owned by the MPIJob: Service ``<name>``, ConfigMap
``<name>-config`` (hostfile), Secret ``<name>-ssh``, worker Pods ``<name>-worker-<i>`` and the
batch/v1 Job ``<name>-launcher``; then sets the conditions Created, Running (launcher and all
workers running), Succeeded / Failed (from the launcher Job) with ``completionTime`` on success.
cleanPodPolicy None keeps the workers. An invalid MPIJob gets one Warning event
``ValidationError`` and no condition at all. A same-named object it does not own is never
adopted: the MPIJob gets a Warning ``ErrResourceExists`` and goes no further.
"""

from __future__ import annotations

import base64
import copy
import secrets

from pytest_stacks.backends.kubernetes.api import (
    MPI_INDEX_LABEL,
    MPI_JOB_NAME_LABEL,
    MPI_ROLE_LABEL,
    ApiError,
    Obj,
    meta,
    now_micro,
    now_rfc3339,
)
from pytest_stacks.backends.kubernetes.fake.store import Store, owner_ref

COMPONENT = "mpi-job-controller"


def validate(job: Obj) -> list[str]:
    """What the operator's validation says about an MPIJob (empty when valid)."""
    specs = (job.get("spec") or {}).get("mpiReplicaSpecs") or {}
    errors = []
    launcher = specs.get("Launcher")
    if not isinstance(launcher, dict):
        errors.append("spec.mpiReplicaSpecs[Launcher]: Required value: must have Launcher "
                      "replica spec")
    else:
        if launcher.get("replicas", 1) != 1:
            errors.append(f"spec.mpiReplicaSpecs[Launcher].replicas: Invalid value: "
                          f"{launcher.get('replicas')}: must be 1")
        if not (launcher.get("template") or {}).get("spec"):
            errors.append("spec.mpiReplicaSpecs[Launcher].template: Required value")
    worker = specs.get("Worker")
    if isinstance(worker, dict) and not (worker.get("template") or {}).get("spec"):
        errors.append("spec.mpiReplicaSpecs[Worker].template: Required value")
    return errors


def _child(job: Obj, kind: str, name: str, labels: dict[str, str] | None = None) -> Obj:
    m = meta(job)
    return {"apiVersion": "batch/v1" if kind == "Job" else "v1", "kind": kind,
            "metadata": {"name": name, "namespace": m["namespace"],
                         "labels": {MPI_JOB_NAME_LABEL: m["name"], **(labels or {})},
                         "ownerReferences": [owner_ref(job)]}}


def _pod_template(job: Obj, role: str, index: int | None = None) -> tuple[Obj, Obj]:
    """(metadata, spec) of a pod of ``role`` from the MPIJob's replica spec."""
    replica = job["spec"]["mpiReplicaSpecs"]["Launcher" if role == "launcher" else "Worker"]
    template = copy.deepcopy(replica.get("template") or {})
    tmeta = template.get("metadata") or {}
    labels = {**(tmeta.get("labels") or {}), MPI_JOB_NAME_LABEL: meta(job)["name"],
              MPI_ROLE_LABEL: role}
    if index is not None:
        labels[MPI_INDEX_LABEL] = str(index)
    spec = template.get("spec") or {}
    spec["restartPolicy"] = replica.get("restartPolicy", "Never")
    return {"labels": labels, "annotations": dict(tmeta.get("annotations") or {})}, spec


def desired(job: Obj) -> list[Obj]:
    """Everything the operator creates for a valid MPIJob, in creation order."""
    name, namespace = meta(job)["name"], meta(job)["namespace"]
    workers = int(job["spec"]["mpiReplicaSpecs"].get("Worker", {}).get("replicas", 0))
    hosts = [f"{name}-worker-{i}.{name}.{namespace}.svc" for i in range(workers)]
    slots = int(job["spec"].get("slotsPerWorker", 1))
    service = _child(job, "Service", name)
    service["spec"] = {"clusterIP": "None", "selector": {MPI_JOB_NAME_LABEL: name},
                       "publishNotReadyAddresses": True}
    config = _child(job, "ConfigMap", f"{name}-config")
    config["data"] = {"hostfile": "".join(f"{h} slots={slots}\n" for h in hosts),
                      "discover_hosts.sh": "#!/bin/sh\n" + "".join(f"echo {h}\n" for h in hosts)}
    secret = _child(job, "Secret", f"{name}-ssh")
    secret["type"] = "kubernetes.io/ssh-auth"
    key = base64.b64encode(secrets.token_bytes(32)).decode()
    secret["data"] = {"ssh-privatekey": key, "ssh-publickey": key}
    made = [service, config, secret]
    for i in range(workers):
        pod = _child(job, "Pod", f"{name}-worker-{i}")
        tmeta, pod["spec"] = _pod_template(job, "worker", i)
        pod["metadata"].update(labels=tmeta["labels"], annotations=tmeta["annotations"])
        pod["spec"].update(hostname=f"{name}-worker-{i}", subdomain=name)
        made.append(pod)
    made.append(_launcher_job(job))
    return made


def _launcher_job(job: Obj) -> Obj:
    tmeta, spec = _pod_template(job, "launcher")
    launcher = _child(job, "Job", f"{meta(job)['name']}-launcher",
                      {MPI_ROLE_LABEL: "launcher"})
    launcher["spec"] = {
        "backoffLimit": int((job["spec"].get("runPolicy") or {}).get("backoffLimit", 6)),
        "template": {"metadata": tmeta, "spec": spec},
    }
    return launcher


class MpiOperator:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.running = True
        self._warned: set[str] = set()

    def step(self) -> None:
        if not self.running:
            return
        for job in self.store.list("MPIJob"):
            if meta(job).get("deletionTimestamp") or _finished(job):
                continue
            self._reconcile(job)

    def _warn(self, job: Obj, reason: str, message: str) -> None:
        self.store.record_event(job, "Warning", reason, message, COMPONENT)

    def _reconcile(self, job: Obj) -> None:
        errors = validate(job)
        if errors:
            if meta(job)["uid"] not in self._warned:
                self._warned.add(meta(job)["uid"])
                self._warn(job, "ValidationError", "Found validation errors: "
                           + "; ".join(errors))
            return
        for want in desired(job):
            if not self._ensure(job, want):
                return
        self._set_conditions(job)

    def _ensure(self, job: Obj, want: Obj) -> bool:
        m = meta(want)
        have = self.store.get(want["kind"], m["namespace"], m["name"])
        if have is None:
            try:
                self.store.create(want)
            except ApiError as exc:
                self._warn(job, "FailedCreate", str(exc))
                return False
            return True
        if not any(r.get("uid") == meta(job)["uid"]
                   for r in meta(have).get("ownerReferences") or []):
            self._warn(job, "ErrResourceExists", f'Resource "{m["name"]}" already exists and '
                       "is not managed by MPIJob")
            return False
        return True

    def _set_conditions(self, job: Obj) -> None:
        name, namespace = meta(job)["name"], meta(job)["namespace"]
        status = job["status"]
        status.setdefault("startTime", now_rfc3339())
        _condition(job, "Created", "MPIJobCreated", f"MPIJob {namespace}/{name} is created.")
        launcher = self.store.get("Job", namespace, f"{name}-launcher") or {"status": {}}
        jconds = {c["type"] for c in launcher["status"].get("conditions") or []
                  if c.get("status") == "True"}
        workers = self.store.list("Pod", namespace, {MPI_JOB_NAME_LABEL: name,
                                                     MPI_ROLE_LABEL: "worker"})
        lpods = self.store.list("Pod", namespace, {"job-name": f"{name}-launcher"})
        if "Complete" in jconds:
            _condition(job, "Running", "MPIJobSucceeded", "", "False")
            _condition(job, "Succeeded", "MPIJobSucceeded",
                       f"MPIJob {namespace}/{name} successfully completed.")
            status["completionTime"] = now_rfc3339()
        elif "Failed" in jconds:
            _condition(job, "Running", "MPIJobFailed", "", "False")
            _condition(job, "Failed", "MPIJobFailed", f"MPIJob {namespace}/{name} has failed: "
                       "the launcher Job reached its backoff limit")
        elif (any(p["status"].get("phase") == "Running" for p in lpods)
              and all(p["status"].get("phase") == "Running" for p in workers)):
            _condition(job, "Running", "MPIJobRunning",
                       f"MPIJob {namespace}/{name} is running.")
        status["replicaStatuses"] = {
            "Launcher": {"active": int(launcher["status"].get("active", 0)),
                         "succeeded": int(launcher["status"].get("succeeded", 0)),
                         "failed": int(launcher["status"].get("failed", 0))},
            "Worker": {"active": sum(p["status"].get("phase") == "Running" for p in workers)}}
        self.store.touch(job)


def _finished(job: Obj) -> bool:
    return any(c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or [])


def _condition(job: Obj, ctype: str, reason: str, message: str, value: str = "True") -> None:
    conds = job["status"].setdefault("conditions", [])
    stamp = now_rfc3339()
    for cond in conds:
        if cond["type"] == ctype:
            if cond["status"] != value:
                cond.update(status=value, reason=reason, lastTransitionTime=stamp,
                            lastUpdateTime=stamp, **({"message": message} if message else {}))
            return
    if value == "True":
        conds.append({"type": ctype, "status": value, "reason": reason, "message": message,
                      "lastTransitionTime": stamp, "lastUpdateTime": stamp})


def lease(namespace: str, name: str, holder: str) -> Obj:
    stamp = now_micro()
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": namespace},
            "spec": {"holderIdentity": holder, "leaseDurationSeconds": 15, "acquireTime": stamp,
                     "renewTime": stamp, "leaseTransitions": 0}}


def renew(store: Store, namespace: str, name: str) -> None:
    held = store.get("Lease", namespace, name)
    if held is not None:
        held["spec"]["renewTime"] = now_micro()
        store.touch(held)
