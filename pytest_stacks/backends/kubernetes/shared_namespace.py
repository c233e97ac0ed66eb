"""The run's objects in a namespace it does not own: for users of a site's cluster who may not
create namespaces (``existing.namespace``). Everything the run makes carries its run label
already; here the namespace is neither created nor deleted, and the run's end deletes its
objects by that label and proves them gone, so a colleague's objects beside them are safe."""

from __future__ import annotations

from pytest_stacks.backends.kubernetes.cleanup import delete_labelled
from pytest_stacks.backends.kubernetes.driver import KubernetesClient


class SharedNamespaceClient(KubernetesClient):
    def ensure_namespace(self) -> None:
        """The namespace is the user's: it exists, and is not ours to make or wait on."""
        self._namespace_ready = True

    def end_run(self, timeout: float = 120.0) -> list[str]:
        with self._whole_call(f"delete run {self.run_id}'s objects in {self.namespace}"):
            return delete_labelled(self._api, self.namespace, self.run_id,
                                   self.recorded_identities(), timeout=timeout)
