"""``kubectl logs`` of the fake's kubectl: ``POD [CONTAINER]``, ``pod/NAME`` or ``job/NAME``
(the launcher Job of an MPIJob: its first pod), ``-c``, ``--tail``, ``--limit-bytes``, ``-f``.

The fake's pods run on its kwok node, which serves no logs: on the compose kwok stacks the API
server answers a started pod's log with ``Error from server (NotFound): the server could not
find the requested resource ( pods/log NAME)`` and kubectl exits 1, also with ``-f`` (seen on
k8s-1.36-mpi-0.8: tests/backend/test_kubectl_real.py), and so does the fake. What the API
server checks before it asks the node is modelled: an unknown pod, an unknown container, a pod
still waiting to start, no previous container (``-p``: the fake's pods never restart).
"""

from __future__ import annotations

from pytest_stacks.backends.kubernetes.api import JOB_NAME_LABEL, KubeApi, Obj, meta
from pytest_stacks.backends.kubernetes.fake.kubectl_args import Failed, Parsed, kind_of, plural

USAGE = ("error: expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.\n"
         "POD or TYPE/NAME is a required argument for the logs command\n"
         "See 'kubectl logs -h' for help and examples")
#: What the API server answers for the log of a pod on a kwok node (kwok serves none).
NOT_SERVED = ("Error from server (NotFound): the server could not find the requested resource "
              "( pods/log {name})")


def _pod(api: KubeApi, namespace: str, target: str) -> Obj:
    kind, slash, name = target.partition("/")
    kind = kind_of(kind) if slash else "Pod"
    name = name if slash else target
    if kind == "Pod":
        pod = api.get("Pod", namespace, name)
        if pod is None:
            raise Failed(f'Error from server (NotFound): pods "{name}" not found')
        return pod
    if kind != "Job":
        raise Failed(f"error: cannot get the logs from {plural(kind)}: the fake's kubectl "
                     f"reads logs of pods and of Jobs (the launcher: job/NAME-launcher)")
    if api.get("Job", namespace, name) is None:
        raise Failed(f'Error from server (NotFound): jobs.batch "{name}" not found')
    pods = sorted(api.list("Pod", namespace, {JOB_NAME_LABEL: name}),
                  key=lambda p: meta(p)["name"])
    if not pods:
        raise Failed(f"error: timed out waiting for the condition (no pod of job {name} yet)")
    return pods[0]


def logs(api: KubeApi, parsed: Parsed) -> tuple[int, str]:
    """``kubectl logs``: kubectl's answer for a pod of the kwok node, raised as
    :class:`Failed` (the fake holds no log to print)."""
    words = parsed.positionals
    if not words or len(words) > 2:
        raise Failed(USAGE)
    namespace = parsed.namespace
    pod = _pod(api, namespace, words[0])
    name = meta(pod)["name"]
    containers = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]
    chosen = parsed.last("container") or (words[1] if len(words) == 2 else "")
    said = ""  # kubectl's note on stderr, before the server's answer
    if not chosen:
        default = (meta(pod).get("annotations") or {}).get(
            "kubectl.kubernetes.io/default-container", "")
        chosen = default if default in containers else (containers[0] if containers else "")
        if len(containers) > 1:
            said = f'Defaulted container "{chosen}" out of: {", ".join(containers)}\n'
    if chosen not in containers:
        raise Failed(f"Error from server (BadRequest): container {chosen} is not valid for pod "
                     f"{name}")
    if parsed.flag("previous"):
        raise Failed(f'Error from server (BadRequest): previous terminated container '
                     f'"{chosen}" in pod "{name}" not found')
    _number(parsed.last("limit-bytes", "0"), "limit-bytes")  # kubectl's own flag checks
    _number(parsed.last("tail", "-1"), "tail")
    if (pod.get("status") or {}).get("phase", "Pending") == "Pending":
        raise Failed(f'{said}Error from server (BadRequest): container "{chosen}" in pod '
                     f'"{name}" is waiting to start: ContainerCreating')
    raise Failed(said + NOT_SERVED.format(name=name))


def _number(text: str, option: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise Failed(f'error: invalid argument "{text}" for "--{option}" flag: '
                     f'strconv.ParseInt: parsing "{text}": invalid syntax') from None
