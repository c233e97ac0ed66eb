"""The double's built-in controllers: kwok's pod lifecycle and the batch/v1 Job controller.

kwok (as the real stack configures it): a pod is scheduled on the fake node when its
nodeSelector matches the node's labels, it tolerates the node's taints and the node is Ready;
it runs ``start_after`` seconds after creation and, unless annotated keep-running, finishes
``finish_after`` seconds later with the annotated exit code and termination message
(Succeeded for 0, Failed otherwise). A NotReady node stops all pod progress.
"""

from __future__ import annotations

import copy
import secrets
from collections.abc import Mapping
from typing import Any

from pytest_stacks.backends.kubernetes.api import (
    ANNOTATION_EXIT_CODE,
    ANNOTATION_MESSAGE,
    ANNOTATION_RUNNING,
    JOB_NAME_LABEL,
    Obj,
    annotation_true,
    meta,
    now_rfc3339,
)
from pytest_stacks.backends.kubernetes.fake.store import Store, owner_ref

NODE_NAME = "kwok-node-0"
KWOK_TAINT = {"key": "kwok.x-k8s.io/node", "value": "fake", "effect": "NoSchedule"}


def node(name: str = NODE_NAME) -> Obj:
    return {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"type": "kwok", "kubernetes.io/hostname": name,
                                              "kubernetes.io/role": "agent"},
                     "annotations": {"kwok.x-k8s.io/node": "fake"}},
        "spec": {"taints": [dict(KWOK_TAINT)]},
    }


def set_ready(store: Store, node_obj: Obj, ready: bool) -> None:
    stamp = now_rfc3339()
    node_obj["status"] = {
        "capacity": {"cpu": "32", "memory": "256Gi", "pods": "110"},
        "allocatable": {"cpu": "32", "memory": "256Gi", "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True" if ready else "Unknown",
                        "reason": "KubeletReady" if ready else "NodeStatusUnknown",
                        "message": "kwok node is ready" if ready else
                        "Kubelet stopped posting node status.",
                        "lastHeartbeatTime": stamp, "lastTransitionTime": stamp}],
    }
    store.touch(node_obj)


def node_ready(node_obj: Obj) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node_obj.get("status") or {}).get("conditions") or [])


def _tolerates(tolerations: list[Obj], taint: Mapping[str, Any]) -> bool:
    for tol in tolerations:
        if tol.get("effect") not in (None, "", taint.get("effect")):
            continue
        if tol.get("operator") == "Exists" and tol.get("key") in (None, "", taint.get("key")):
            return True
        if tol.get("key") == taint.get("key") and tol.get("value") == taint.get("value"):
            return True
    return False


def fits(pod: Obj, node_obj: Obj) -> str:
    """Why ``pod`` cannot go on ``node_obj`` ("" when it can)."""
    spec = pod.get("spec") or {}
    labels = meta(node_obj).get("labels") or {}
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
    for taint in (node_obj.get("spec") or {}).get("taints") or []:
        if not _tolerates(spec.get("tolerations") or [], taint):
            return (f"0/1 nodes are available: 1 node(s) had untolerated taint "
                    f"{{{taint['key']}: {taint.get('value', '')}}}.")
    if not node_ready(node_obj):
        return "0/1 nodes are available: 1 node(s) had untolerated taint " \
               "{node.kubernetes.io/not-ready: }."
    return ""


class Kwok:
    """Pod lifecycle on the fake node, by elapsed time since each step."""

    def __init__(self, store: Store, *, start_after: float = 0.05,
                 finish_after: float = 0.1) -> None:
        self.store = store
        self.start_after = start_after
        self.finish_after = finish_after
        self._since: dict[str, float] = {}  # pod uid -> monotonic time of its last step

    def step(self, now: float) -> None:
        node_obj = self.store.get("Node", None, NODE_NAME)
        if node_obj is None or not node_ready(node_obj):
            return
        for pod in self.store.list("Pod"):
            m = meta(pod)
            if m.get("deletionTimestamp"):
                continue
            since = self._since.setdefault(str(m["uid"]), now)
            phase = pod["status"].get("phase")
            if phase == "Pending" and now - since >= self.start_after:
                self._schedule(pod, node_obj, now)
            elif phase == "Running" and now - since >= self.finish_after and finishes(pod):
                self._finish(pod)

    def _schedule(self, pod: Obj, node_obj: Obj, now: float) -> None:
        why = fits(pod, node_obj)
        stamp = now_rfc3339()
        if why:
            if not pod["status"].get("conditions"):
                pod["status"]["conditions"] = [{"type": "PodScheduled", "status": "False",
                                                "reason": "Unschedulable", "message": why}]
                self.store.touch(pod)
                self.store.record_event(pod, "Warning", "FailedScheduling", why,
                                        "default-scheduler")
            return
        pod["spec"]["nodeName"] = meta(node_obj)["name"]
        # The shape kwok gives a running pod on 1.36.3, as recorded (tests/parity).
        pod["status"] = {
            "phase": "Running", "startTime": stamp, "hostIP": "10.0.0.1", "podIP": "10.0.0.2",
            "hostIPs": [{"ip": "10.0.0.1"}], "podIPs": [{"ip": "10.0.0.2"}],
            "conditions": [{"type": t, "status": "True", "lastProbeTime": None,
                            "lastTransitionTime": stamp}
                           for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready")],
            "containerStatuses": [{"name": c["name"], "image": c["image"], "imageID": "",
                                   "ready": True, "restartCount": 0, "lastState": {},
                                   "state": {"running": {"startedAt": stamp}}}
                                  for c in pod["spec"]["containers"]],
            "qosClass": pod["status"].get("qosClass", "BestEffort"),
        }
        self._since[str(meta(pod)["uid"])] = now
        self.store.touch(pod)
        # As kube-scheduler does on every binding (kwok then runs the pod).
        self.store.record_event(pod, "Normal", "Scheduled", f"Successfully assigned "
                                f"{meta(pod).get('namespace')}/{meta(pod)['name']} to "
                                f"{meta(node_obj)['name']}", "default-scheduler")

    def _finish(self, pod: Obj) -> None:
        annotations = meta(pod).get("annotations") or {}
        try:
            code = int(annotations.get(ANNOTATION_EXIT_CODE) or 0)
        except ValueError:
            code = 1
        stamp = now_rfc3339()
        status = pod["status"]
        status["phase"] = "Succeeded" if code == 0 else "Failed"
        for cond in status["conditions"]:
            if cond["type"] in ("Ready", "ContainersReady"):
                cond.update(status="False", lastTransitionTime=stamp,
                            reason="PodCompleted" if code == 0 else "PodFailed")
        for cs in status["containerStatuses"]:
            started = cs["state"].get("running", {}).get("startedAt", stamp)
            cs.update(ready=False, started=False)
            terminated = {"exitCode": code, "reason": "Completed" if code == 0 else "Error",
                          "message": annotations.get(ANNOTATION_MESSAGE, ""),
                          "startedAt": started, "finishedAt": stamp}
            if not terminated["message"]:
                del terminated["message"]  # omitempty, as the server shows it
            cs["state"] = {"terminated": terminated}
        self.store.touch(pod)


def finishes(pod: Obj) -> bool:
    """Whether kwok ends this running pod: as the stack's Stage selects it
    (stacks/k8s-controlplane/stages/pod-outcome.yaml), only a pod with an exit code and not
    marked to keep running. Any other pod runs until it is deleted, as on the compose kwok
    stacks: a user's own MPIJob without the annotation never finishes there either."""
    annotations = meta(pod).get("annotations") or {}
    return (ANNOTATION_EXIT_CODE in annotations
            and not annotation_true(annotations.get(ANNOTATION_RUNNING)))


def job_step(store: Store) -> None:
    """The batch/v1 Job controller, for Jobs of one completion (the MPI launcher)."""
    for job in store.list("Job"):
        m = meta(job)
        status = job["status"]
        if m.get("deletionTimestamp") or status.get("completionTime") or _failed(job):
            continue
        pods = [p for p in store.dependents(str(m["uid"])) if p["kind"] == "Pod"]
        phases = [p["status"].get("phase") for p in pods]
        backoff = int(job["spec"].get("backoffLimit", 6))
        stamp = now_rfc3339()
        status.setdefault("startTime", stamp)
        status.update(succeeded=phases.count("Succeeded"), failed=phases.count("Failed"))
        active = [p for p in pods if p["status"].get("phase") in ("Pending", "Running")
                  and not meta(p).get("deletionTimestamp")]
        status["active"] = len(active)
        if status["succeeded"] >= 1:
            _conclude(job, ("SuccessCriteriaMet", "Complete"), "CompletionsReached",
                      "Reached expected number of succeeded pods")
            status["completionTime"] = stamp
        elif status["failed"] > backoff:
            _conclude(job, ("FailureTarget", "Failed"), "BackoffLimitExceeded",
                      "Job has reached the specified backoff limit")
        elif not active:
            store.create(_job_pod(job))
            status["active"] = 1
        store.touch(job)


def _failed(job: Obj) -> bool:
    return any(c.get("type") == "Failed" and c.get("status") == "True"
               for c in job["status"].get("conditions") or [])


def _conclude(job: Obj, types: tuple[str, ...], reason: str, message: str) -> None:
    stamp = now_rfc3339()
    job["status"].setdefault("conditions", []).extend(
        {"type": t, "status": "True", "reason": reason, "message": message,
         "lastProbeTime": stamp, "lastTransitionTime": stamp} for t in types)
    job["status"]["active"] = 0


def _job_pod(job: Obj) -> Obj:
    m = meta(job)
    template = copy.deepcopy(job["spec"].get("template") or {})
    tmeta = template.get("metadata") or {}
    labels = {**(tmeta.get("labels") or {}), JOB_NAME_LABEL: m["name"],
              "batch.kubernetes.io/job-name": m["name"], "controller-uid": m["uid"],
              "batch.kubernetes.io/controller-uid": m["uid"]}
    return {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": f"{m['name']}-{secrets.token_hex(3)[:5]}",
                     "namespace": m["namespace"], "labels": labels,
                     "annotations": dict(tmeta.get("annotations") or {}),
                     "ownerReferences": [owner_ref(job)]},
        "spec": template.get("spec") or {},
    }


def serviceaccount_step(store: Store) -> None:
    """The service-account controller: every active namespace gets its ``default`` account."""
    for ns in store.list("Namespace"):
        name = ns["metadata"]["name"]
        if ns["metadata"].get("deletionTimestamp"):
            continue
        if store.get("ServiceAccount", name, "default") is None:
            store.create({"apiVersion": "v1", "kind": "ServiceAccount",
                          "metadata": {"name": "default", "namespace": name}})
