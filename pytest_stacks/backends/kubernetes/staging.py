"""Resource-side staging for Kubernetes: a Pod whose job has remote files gets an init
container that downloads its remote inputs into the job's working directory before the
payload, and a container that uploads its remote outputs once the payload has ended, both in
the stack's stager image (``options.stager``: Debian's curl) and on the node, with the node's
trust and the node's credentials directory mounted read-only. The driver writes only URLs
and the directory's path into the Pod: it never holds the bytes or the keys.

A failed download fails the Pod before the payload runs (the init container's exit
:data:`STAGE_IN_FAILED`); a failed upload after a payload that succeeded fails it with
:data:`STAGE_OUT_FAILED` (a payload that failed keeps its own exit code). Either way the
staging container's termination message (its log's tail: curl's words and the store's S3
error document) is the job's reason.

The upload waits for the payload's exit status in a volume of the Pod, and for nothing once
the payload's shell is gone without one (killed: an OOM kills the whole container); the Pod
shares one process namespace so the upload can see that. The credentials are mounted at a
fixed path, only into the staging containers (the payload's container mounts none; a root
payload could still reach them through the shared /proc, as a Slurm job can read its node's
keys: this is a test stack's store, not a vault), and an output that is not a regular file
(a link to the keys) is refused, not uploaded.
"""

from __future__ import annotations

from pytest_stacks.backends import remote_files, s3_curl
from pytest_stacks.backends.kubernetes.api import Obj
from pytest_stacks.contract import JobSpec

JOB = "job"  # the payload's container
STAGE_IN = "stage-in"
STAGE_OUT = "stage-out"
STAGE_IN_FAILED = 90
STAGE_OUT_FAILED = 91
WORKDIR = "/work"  # the job's working directory: an emptyDir shared by all three
STATUS_DIR = "/pytest-stacks-stage"  # the payload's exit status, for the upload
TRUST = "/etc/ssl/certs"  # the node's, which trusts the stack's store
CREDENTIALS = "/pytest-stacks-credentials"  # where the staging containers see the node's
STAGING_CPU = "10m"  # the staging containers only wait and copy


def refusal(spec: JobSpec, real: bool, stager: str, shape: str) -> str:
    """Why this stack cannot give the job its files ("" where it can, or where the job has
    none): a Kubernetes job has no input or output files of bytes, and stages remote ones
    only in a Pod that really runs, on a stack with a stager image."""
    if spec.inputs or spec.outputs:
        return "input and output files are not supported: " + (
            "a job's results are its exit code and its logs (remote files are staged where "
            "the stack has a stager)" if real else
            "pods do not execute on this stack (use backend options message/exit_code)")
    if not (spec.remote_inputs or spec.remote_outputs):
        return ""
    if not real:
        return "remote files are not staged: pods do not execute on this stack"
    if not stager:
        return ("remote files are not staged: the stack names no stager image "
                "(options.stager) for the staging containers")
    if shape != "pod":
        return f"remote files are staged for a Pod, not for shape {shape!r}"
    remote_files.check(spec)
    return ""


def _stager(name: str, script: str, image: str, pull_policy: str) -> Obj:
    container: Obj = {
        "name": name, "image": image, "command": ["/bin/bash", "-c", script],
        "workingDir": WORKDIR,
        "volumeMounts": [
            {"name": "work", "mountPath": WORKDIR},
            {"name": "status", "mountPath": STATUS_DIR},
            {"name": "store-credentials", "mountPath": CREDENTIALS, "readOnly": True},
            {"name": "node-trust", "mountPath": TRUST, "readOnly": True}],
        "resources": {"requests": {"cpu": STAGING_CPU}},
        "terminationMessagePolicy": "FallbackToLogsOnError",
    }
    if pull_policy:
        container["imagePullPolicy"] = pull_policy
    return container


def _stage_in(spec: JobSpec) -> str:
    return "\n".join([s3_curl.helper(CREDENTIALS),
                      *(s3_curl.download(name, url, f"exit {STAGE_IN_FAILED}")
                        for name, url in spec.remote_inputs.items())]) + "\n"


def _stage_out(spec: JobSpec) -> str:
    """Wait for the payload's status; a payload gone without one (its shell's pid no longer
    answers, the status still missing) leaves its own exit code standing: nothing is sent."""
    status, pid = f"{STATUS_DIR}/status", f"{STATUS_DIR}/pid"
    return "\n".join([
        s3_curl.helper(CREDENTIALS),
        f"until [ -s {status} ]; do",
        f'    if [ -s {pid} ] && ! kill -0 "$(cat {pid})" 2>/dev/null && [ ! -s {status} ]; then',
        "        echo 'pytest-stacks: the payload ended without an exit status (killed?): "
        "nothing uploaded' >&2; exit 0",
        "    fi",
        "    sleep 0.2",
        "done",
        f"read -r __status < {status}",
        "__failed=0",
        *(s3_curl.upload(name, url, "__failed=1") for name, url in spec.remote_outputs.items()),
        f'[ "$__failed" -eq 0 ] || [ "$__status" -ne 0 ] || exit {STAGE_OUT_FAILED}',
    ]) + "\n"


def _wrapped(body: str) -> str:
    """The payload in a subshell (its ``exit`` ends only the payload), then its exit status
    where the upload waits for it; the container still ends with the payload's code."""
    return (f"echo $$ > {STATUS_DIR}/pid\n(\n:\n{body.rstrip(chr(10))}\n)\n__status=$?\n"
            f"echo \"$__status\" > {STATUS_DIR}/status\nexit \"$__status\"\n")


def add_staging(pod_spec: Obj, spec: JobSpec, *, stager: str, pull_policy: str) -> None:
    """Give the Pod spec (one container, the payload's) its staging containers and volumes."""
    [job] = pod_spec["containers"]
    job["workingDir"] = WORKDIR
    job.setdefault("volumeMounts", []).extend([{"name": "work", "mountPath": WORKDIR},
                                               {"name": "status", "mountPath": STATUS_DIR}])
    # A credentials directory missing on the node is made (empty): the download then fails
    # at once with curl's words, where a missing hostPath would hold the Pod until its
    # deadline.
    pod_spec.setdefault("volumes", []).extend([
        {"name": "work", "emptyDir": {}},
        {"name": "status", "emptyDir": {}},
        {"name": "store-credentials", "hostPath": {"path": spec.credentials,
                                                   "type": "DirectoryOrCreate"}},
        {"name": "node-trust", "hostPath": {"path": TRUST, "type": "Directory"}}])
    if spec.remote_inputs:
        pod_spec.setdefault("initContainers", []).append(
            _stager(STAGE_IN, _stage_in(spec), stager, pull_policy))
    if spec.remote_outputs:
        job["command"] = [*job["command"][:2], _wrapped(job["command"][2])]
        pod_spec["shareProcessNamespace"] = True  # the upload sees a payload killed early
        pod_spec["containers"].append(_stager(STAGE_OUT, _stage_out(spec), stager, pull_policy))


def failed_staging(pod: Obj) -> tuple[int, str] | None:
    """(exit code, reason) of a staging container that failed, or None."""
    status = pod.get("status") or {}
    for entry in [*(status.get("initContainerStatuses") or []),
                  *(status.get("containerStatuses") or [])]:
        if entry.get("name") not in (STAGE_IN, STAGE_OUT):
            continue
        ended = (entry.get("state") or {}).get("terminated") or {}
        if ended.get("exitCode") not in (None, 0):
            said = str(ended.get("message") or "").strip()
            return (int(ended["exitCode"]), f"{entry['name']} failed (exit "
                    f"{ended['exitCode']}){': ' + said if said else ''}")
    return None
