"""``kubectl logs`` of the fake's kubectl: ``POD [CONTAINER]``, ``pod/NAME`` or ``job/NAME``
(the launcher Job of an MPIJob: its first pod), ``-c``, ``--tail``, ``--limit-bytes``, ``-f``.

The text is what the API server holds for the container (the seam's ``logs``); the fake's pods
run nothing (kwok's), so it is empty there, as on a kwok node. What kubectl checks before it
asks is modelled: an unknown pod, an unknown container, a pod still waiting to start, no
previous container (``-p``: the fake's pods never restart). ``-f`` waits for the pod to finish,
then prints what it holds (there is no stream to follow).
"""

from __future__ import annotations

from collections.abc import Callable

from pytest_stacks.backends.kubernetes.api import JOB_NAME_LABEL, KubeApi, Obj, meta
from pytest_stacks.backends.kubernetes.fake.kubectl_args import Failed, Parsed, kind_of, plural

USAGE = ("error: expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.\n"
         "POD or TYPE/NAME is a required argument for the logs command\n"
         "See 'kubectl logs -h' for help and examples")
DONE = ("Succeeded", "Failed")


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


def logs(api: KubeApi, parsed: Parsed, out: list[str], *, timeout: float,
         wait_for: Callable[[Callable[[], bool], float], bool]) -> tuple[int, str]:
    """``kubectl logs``: (exit code, stderr); the log text appended to ``out``."""
    words = parsed.positionals
    if not words or len(words) > 2:
        raise Failed(USAGE)
    namespace = parsed.namespace
    pod = _pod(api, namespace, words[0])
    name = meta(pod)["name"]
    containers = [str(c.get("name")) for c in (pod.get("spec") or {}).get("containers") or []]
    chosen = parsed.last("container") or (words[1] if len(words) == 2 else "")
    err = ""
    if not chosen:
        default = (meta(pod).get("annotations") or {}).get(
            "kubectl.kubernetes.io/default-container", "")
        chosen = default if default in containers else (containers[0] if containers else "")
        if len(containers) > 1:
            err = f'Defaulted container "{chosen}" out of: {", ".join(containers)}\n'
    if chosen not in containers:
        raise Failed(f"Error from server (BadRequest): container {chosen} is not valid for pod "
                     f"{name}")
    if parsed.flag("previous"):
        raise Failed(f'Error from server (BadRequest): previous terminated container '
                     f'"{chosen}" in pod "{name}" not found')
    if parsed.flag("follow"):

        def finished() -> bool:
            now = api.get("Pod", namespace, name)
            return now is None or (now.get("status") or {}).get("phase") in DONE

        wait_for(finished, timeout)
        pod = api.get("Pod", namespace, name) or pod
    if (pod.get("status") or {}).get("phase", "Pending") == "Pending":
        raise Failed(f'Error from server (BadRequest): container "{chosen}" in pod "{name}" '
                     f"is waiting to start: ContainerCreating")
    limit = _number(parsed.last("limit-bytes", "0"), "limit-bytes")
    text = api.logs(namespace, name, limit or 65536, container=chosen)
    tail = _number(parsed.last("tail", "-1"), "tail")
    if tail >= 0:
        lines = text.splitlines(keepends=True)
        text = "".join(lines[len(lines) - tail:]) if tail else ""
    out.append(text)
    return 0, err


def _number(text: str, option: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise Failed(f'error: invalid argument "{text}" for "--{option}" flag: '
                     f'strconv.ParseInt: parsing "{text}": invalid syntax') from None
