"""Kubernetes with the Kubeflow MPI Operator: the third backend.

Split so the double never learns from the driver what to answer:

- ``api``: the seam (:class:`~api.KubeApi`, dict-shaped objects as the API server returns them),
  the kind -> API group/version/plural table and the labels and annotations the backend uses.
  Both the driver and the double import it; nothing else is shared.
- ``objects``: pure builders of the Pod / MPIJob manifests a :class:`JobSpec` becomes.
- ``driver``: :class:`~driver.KubernetesClient`, the job contract over the seam.
- ``identities``: API-assigned identities (UIDs) and the ownership-chain check.
- ``groups``: the fail-closed verdict over a group of participants.
- ``cleanup``: proof that a run left nothing behind, and reaping of dead runs' namespaces.
- ``lightkube_api``: the real seam, over lightkube's HTTP client and a kubeconfig.
- ``node_images``: the pause and MPI worker images a real node imports (no registry).
- ``fake``: an in-memory API server with garbage collector, Job controller, MPI Operator and
  kwok-style pod lifecycle behind the same seam.

Pods do not execute on a kwok-based stack: a pod's outcome is what its annotations say
(``pytest-stacks.io/exit-code``, ``.../message``, ``.../keep-running``), which a kwok Stage on
the real stack and the double's pod lifecycle both read. On a real kubelet node (stack option
``execution: real``) nothing is simulated: the script runs and the container's exit code and
logs are the outcome.
"""
