"""An in-memory Kubernetes control plane behind the same seam the driver uses (``KubeApi``).

:class:`FakeCluster` is an API server (``store``: uids, resourceVersions, namespaces,
ownerReferences, foreground/background/orphan deletion and garbage collection), the batch/v1 Job
controller and kwok's pod lifecycle (``controllers``), and the MPI Operator with its leader
lease (``mpi_operator``), stepped by a background thread every ``tick`` seconds (or by calling
:meth:`FakeCluster.step` with ``autostart=False``); ``commands`` is a ``kubectl`` in front of
it all (:mod:`.kubectl`) for clients that shell out.

It never imports the driver or its builders: it knows the seam's shapes, not the driver's
expectations. What it does not model: RBAC and admission, CRD schema validation beyond
required fields, watches, resourceVersion conflicts on update, pod execution (like kwok),
pod logs (always ""), TTL-after-finished, activeDeadlineSeconds, suspension, gang scheduling,
resource accounting on the node, restart policies other than Never.
"""

from __future__ import annotations

import copy
import secrets
import threading
import time
from collections.abc import Callable, Mapping

from pytest_stacks.backends.kubernetes.api import ApiError, Obj, Objs, meta
from pytest_stacks.backends.kubernetes.fake import controllers, mpi_operator
from pytest_stacks.backends.kubernetes.fake.kubectl import FakeKubectl
from pytest_stacks.backends.kubernetes.fake.store import Store
from pytest_stacks.errors import BackendCallError

OPERATOR_NAMESPACE = "mpi-operator"
LEASE_NAME = "mpi-operator"


class FakeCluster:
    def __init__(self, kubernetes_version: str = "1.36.3", operator_version: str = "0.8.2", *,
                 tick: float = 0.01, start_after: float = 0.02, finish_after: float = 0.05,
                 autostart: bool = True) -> None:
        self.kubernetes_version = kubernetes_version
        self.operator_version = operator_version
        self.tick = tick
        self.store = Store()
        self.kwok = controllers.Kwok(self.store, start_after=start_after,
                                     finish_after=finish_after)
        self.operator = mpi_operator.MpiOperator(self.store)
        #: ``kubectl`` against this API server (``stack_fake.commands``): see .kubectl.
        self.commands = FakeKubectl(self, kubernetes_version, mutate=self.mutate)
        self._down: str = ""
        self._renew_lease = True
        self._last_renew = 0.0
        self._stop = threading.Event()
        self._bootstrap()
        self._thread: threading.Thread | None = None
        self._passes = 0
        self._passed = threading.Condition()
        if autostart:
            self._thread = threading.Thread(target=self._loop, name="fake-kubernetes",
                                            daemon=True)
            self._thread.start()

    def _bootstrap(self) -> None:
        for name in ("default", "kube-system", "kube-node-lease", OPERATOR_NAMESPACE):
            self.store.create({"apiVersion": "v1", "kind": "Namespace",
                               "metadata": {"name": name}})
        node = self.store.create(controllers.node())
        controllers.set_ready(self.store, node, True)
        self.store.create(mpi_operator.lease(OPERATOR_NAMESPACE, LEASE_NAME,
                                             f"mpi-operator-{secrets.token_hex(5)}"))

    # ------------------------------------------------------------ the control loop

    def _loop(self) -> None:
        while not self._stop.wait(self.tick):
            self.step()
            with self._passed:
                self._passes += 1
                self._passed.notify_all()

    def step(self) -> None:
        """One pass of every controller, in the order a real cluster converges."""
        now = time.monotonic()
        with self.store.lock:
            self.kwok.step(now)
            controllers.serviceaccount_step(self.store)
            controllers.job_step(self.store)
            self.operator.step()
            self.store.collect()
            if self._renew_lease and now - self._last_renew >= 0.2:
                mpi_operator.renew(self.store, OPERATOR_NAMESPACE, LEASE_NAME)
                self._last_renew = now

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    # ------------------------------------------------------------ the seam (KubeApi)

    def _reachable(self) -> None:
        if self._down:
            raise BackendCallError(f"the API server is unreachable: {self._down}")

    def create(self, obj: Obj) -> Obj:
        self._reachable()
        with self.store.lock:
            return copy.deepcopy(self.store.create(obj))

    def get(self, kind: str, namespace: str | None, name: str) -> Obj | None:
        self._reachable()
        with self.store.lock:
            return copy.deepcopy(self.store.get(kind, namespace, name))

    def list(self, kind: str, namespace: str | None = None,
             labels: Mapping[str, str] | None = None) -> Objs:
        self._reachable()
        with self.store.lock:
            return copy.deepcopy(self.store.list(kind, namespace, labels))

    def delete(self, kind: str, namespace: str | None, name: str, *,
               propagation: str = "Foreground", uid: str | None = None) -> bool:
        self._reachable()
        return self.store.delete(kind, namespace, name, propagation=propagation, uid=uid)

    def events(self, namespace: str, involved_name: str) -> Objs:
        self._reachable()
        with self.store.lock:
            found = [e for e in self.store.list("Event", namespace)
                     if (e.get("involvedObject") or {}).get("name") == involved_name]
            return copy.deepcopy(sorted(found, key=lambda e: str(e.get("firstTimestamp"))))

    def logs(self, namespace: str, pod: str, limit_bytes: int = 65536, *,
             container: str = "") -> str:
        """kwok pods have no logs: always "" (the seam's "unavailable")."""
        self._reachable()
        return ""

    def version(self) -> Obj:
        self._reachable()
        major, minor = self.kubernetes_version.split(".")[:2]
        return {"major": major, "minor": minor, "gitVersion": f"v{self.kubernetes_version}",
                "platform": "linux/amd64", "goVersion": "go1.25"}

    def daemon_log(self, limit: int = 200) -> str:
        """The cluster's events, oldest first: what the controllers did and refused."""
        with self.store.lock:
            events = sorted(self.store.list("Event"), key=lambda e: str(e.get("lastTimestamp")))
            lines = [f"{e.get('lastTimestamp')} {e.get('type')} {e.get('reason')} "
                     f"{(e.get('involvedObject') or {}).get('kind')} "
                     f"{meta(e).get('namespace')}/{(e.get('involvedObject') or {}).get('name')}: "
                     f"{e.get('message')} (x{e.get('count', 1)})" for e in events[-limit:]]
        return "\n".join(lines) or "(no events)"

    # ------------------------------------------------------------ knobs for tests

    def set_api_down(self, why: str = "connection refused") -> None:
        """Every seam call raises BackendCallError until :meth:`set_api_up`."""
        self._down = why

    def set_api_up(self) -> None:
        self._down = ""

    def stop_operator(self, *, release: bool = False) -> None:
        """The operator stops reconciling and renewing its lease; ``release`` empties the
        holder, as a leader does that steps down cleanly."""
        with self.store.lock:
            self.operator.running = False
            self._renew_lease = False
            held = self.store.get("Lease", OPERATOR_NAMESPACE, LEASE_NAME)
            if release and held is not None:
                held["spec"]["holderIdentity"] = ""
                self.store.touch(held)

    def start_operator(self) -> None:
        """The operator is back: it takes the lease again and reconciles."""
        with self.store.lock:
            self.operator.running = True
            self._renew_lease = True
            held = self.store.get("Lease", OPERATOR_NAMESPACE, LEASE_NAME)
            if held is not None and not held["spec"].get("holderIdentity"):
                held["spec"]["holderIdentity"] = "fake-mpi-operator"
                held["spec"]["leaseTransitions"] = held["spec"].get("leaseTransitions", 0) + 1
                self.store.touch(held)

    def set_node_ready(self, ready: bool) -> None:
        with self.store.lock:
            node = self.store.get("Node", None, controllers.NODE_NAME)
            if node is not None:
                controllers.set_ready(self.store, node, ready)

    def evict(self, namespace: str, pod: str) -> None:
        """What the kubelet's eviction manager leaves: Failed, reason Evicted."""
        self.mutate("Pod", namespace, pod, _evicted)

    def mutate(self, kind: str, namespace: str | None, name: str,
               change: Callable[[Obj], None]) -> None:
        """Change a stored object in place, as another client's update would (tests only)."""
        with self.store.lock:
            obj = self.store.get(kind, namespace, name)
            if obj is None:
                raise ApiError(404, "NotFound", f"{kind} {namespace}/{name} not found")
            change(obj)
            self.store.touch(obj)

    def wait_idle(self, steps: int = 3, timeout: float = 30.0) -> None:
        """Return once the control loop has run ``steps`` more whole passes (counted, not
        slept for: a loaded machine runs fewer passes in the same time)."""
        if self._thread is None:
            for _ in range(steps):
                self.step()
            return
        with self._passed:
            target = self._passes + steps
            if not self._passed.wait_for(lambda: self._passes >= target, timeout=timeout):
                raise TimeoutError(f"the fake cluster's control loop ran "
                                   f"{self._passes - target + steps} of {steps} passes in "
                                   f"{timeout:.0f} s")


def _evicted(pod: Obj) -> None:
    status = pod.setdefault("status", {})
    status.update(phase="Failed", reason="Evicted",
                  message="The node was low on resource: memory.")
    meta(pod).setdefault("annotations", {})


__all__ = ["LEASE_NAME", "OPERATOR_NAMESPACE", "FakeCluster"]
