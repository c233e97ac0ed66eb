"""The fake's ``kubectl`` (fake-mpi-operator): a client's MPIJob life through it (apply, the
operator's conditions read back, pods by label, the launcher's log, delete, NotFound), kubectl's
option grammar and words for bad input, its printers, and what it says when the API server is
down. The conditions are the fake operator's: kubectl only reads what the API server holds."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_stacks.backends.kubernetes.api import ANNOTATION_EXIT_CODE
from pytest_stacks.backends.kubernetes.fake import FakeCluster
from pytest_stacks.backends.kubernetes.fake.kubectl import CommandResult
from pytest_stacks.backends.kubernetes.fake.kubectl_print import jsonpath

POD = ("      template:\n        metadata: {{annotations: {{{note}}}}}\n        spec:\n"
       "          nodeSelector: {{type: kwok}}\n"
       "          tolerations: [{{key: kwok.x-k8s.io/node, operator: Exists, "
       "effect: NoSchedule}}]\n"
       "          containers: [{{name: {role}, image: mpi:1, command: [mpirun, hostname]}}]\n")
MPIJOB = ("apiVersion: kubeflow.org/v2beta1\nkind: MPIJob\nmetadata: {{name: {name}}}\nspec:\n"
          "  slotsPerWorker: 1\n  mpiReplicaSpecs:\n    Launcher:\n      replicas: 1\n"
          + POD.replace("{role}", "launcher") + "    Worker:\n      replicas: 2\n"
          + POD.replace("{role}", "worker").replace("{note}", ""))
CONDITION = 'jsonpath={{.status.conditions[?(@.type=="{0}")].status}}'


def mpijob(name: str = "pi", exit_code: int | None = 0) -> str:
    """The launcher carries the exit code kwok ends it with (the compose kwok stacks' Stage);
    ``None``: no annotation, so it runs until deleted, as there."""
    note = "" if exit_code is None else f'"{ANNOTATION_EXIT_CODE}": "{exit_code}"'
    return MPIJOB.format(name=name, note=note)


@pytest.fixture
def cluster() -> Iterator[FakeCluster]:
    made = FakeCluster()
    yield made
    made.close()


def kubectl(cluster: FakeCluster, *argv: str, stdin: str = "",
            cwd: Path | None = None) -> CommandResult:
    done = cluster.commands.run(["kubectl", *argv], user="submitter", stdin=stdin,
                                cwd=str(cwd) if cwd else None)
    assert "Traceback" not in done.stderr
    return done


def until(cluster: FakeCluster, *argv: str, want: str, timeout: float = 30) -> CommandResult:
    deadline = time.monotonic() + timeout
    while True:
        done = kubectl(cluster, *argv)
        if done.stdout == want or time.monotonic() > deadline:
            return done
        cluster.wait_idle(2)


def test_an_mpijob_applied_runs_is_read_back_logged_and_deleted(
        cluster: FakeCluster, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "pi.yaml").write_text(mpijob())
    applied = kubectl(cluster, "apply", "-f", "pi.yaml", "-n", "default", cwd=tmp_path)
    assert (applied.returncode, applied.stdout, applied.stderr) == (
        0, "mpijob.kubeflow.org/pi created\n", "")
    done = until(cluster, "get", "mpijob", "pi", "-n", "default", "-o",
                 CONDITION.format("Succeeded"), want="True")
    assert (done.returncode, done.stdout) == (0, "True"), done
    # The conditions the operator wrote, in its order, as the API server holds them.
    types = kubectl(cluster, "get", "mpijob", "pi", "-o", "jsonpath={.status.conditions[*].type}")
    assert types.stdout == "Created Running Succeeded"
    shown = json.loads(kubectl(cluster, "get", "mpijob", "pi", "-n", "default", "-o",
                               "json").stdout)
    stored = cluster.get("MPIJob", "default", "pi")
    assert stored is not None and shown == stored
    raw = kubectl(cluster, "get", "mpijob", "pi", "-o", "jsonpath={.status.conditions}").stdout
    assert json.loads(raw) == stored["status"]["conditions"]
    # Its pods, by the operator's label: the launcher and two workers.
    pods = json.loads(kubectl(cluster, "get", "pods", "-n", "default", "-l",
                              "training.kubeflow.org/job-name=pi", "-o", "json").stdout)
    assert pods["kind"] == "List"
    roles = sorted(p["metadata"]["labels"]["training.kubeflow.org/job-role"]
                   for p in pods["items"])
    assert roles == ["launcher", "worker", "worker"]
    launcher = next(p["metadata"]["name"] for p in pods["items"]
                    if p["metadata"]["labels"]["training.kubeflow.org/job-role"] == "launcher")
    # kwok's node serves no logs: the API server's NotFound, as on k8s-1.36-mpi-0.8, whatever
    # the options (and -f does not wait for what never comes).
    unserved = ("Error from server (NotFound): the server could not find the requested "
                f"resource ( pods/log {launcher})\n")
    for extra in ([], ["--tail=1"], ["-f"], ["-c", "launcher"]):
        answer = kubectl(cluster, "logs", launcher, "-n", "default", *extra)
        assert (answer.returncode, answer.stdout, answer.stderr) == (1, "", unserved), extra
    assert kubectl(cluster, "logs", "job/pi-launcher").stderr == unserved
    deleted = kubectl(cluster, "delete", "mpijob", "pi", "-n", "default")
    assert (deleted.returncode, deleted.stdout) == (
        0, 'mpijob.kubeflow.org "pi" deleted from default namespace\n')
    gone = kubectl(cluster, "get", "mpijob", "pi", "-n", "default", "-o", "json")
    assert (gone.returncode, gone.stdout, gone.stderr) == (
        1, "", 'Error from server (NotFound): mpijobs.kubeflow.org "pi" not found\n')
    again = kubectl(cluster, "delete", "mpijob", "pi")
    assert again.returncode == 1 and "NotFound" in again.stderr
    assert kubectl(cluster, "delete", "mpijob", "pi", "--ignore-not-found").returncode == 0


def test_a_failing_launcher_is_the_operators_failed_condition(cluster: FakeCluster) -> None:
    assert kubectl(cluster, "apply", "-f", "-", stdin=mpijob("bad", exit_code=3)).returncode == 0
    done = until(cluster, "get", "mpijob", "bad", "-o", CONDITION.format("Failed"), want="True")
    assert done.stdout == "True", done
    assert kubectl(cluster, "get", "mpijob", "bad", "-o",
                   CONDITION.format("Succeeded")).stdout == ""


def test_applying_again_is_unchanged_and_a_change_is_configured(cluster: FakeCluster) -> None:
    config = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg}\ndata: {a: b}\n"
    assert kubectl(cluster, "apply", "-f", "-", stdin=config).stdout == "configmap/cfg created\n"
    assert kubectl(cluster, "apply", "-f", "-", stdin=config).stdout == \
        "configmap/cfg unchanged\n"
    changed = kubectl(cluster, "apply", "-f", "-", stdin=config.replace("a: b", "a: c"))
    assert changed.stdout == "configmap/cfg configured\n"
    assert kubectl(cluster, "get", "cm", "cfg", "-o", "jsonpath={.data.a}").stdout == "c"


@pytest.mark.parametrize(("argv", "stdin", "stderr"), [
    (["frobnicate"], "", 'error: unknown command "frobnicate" for "kubectl"\n'),
    (["get", "pods", "--bogus"], "",
     "error: unknown flag: --bogus\nSee 'kubectl get --help' for usage.\n"),
    (["get", "pods", "-z"], "",
     "error: unknown shorthand flag: 'z' in -z\nSee 'kubectl get --help' for usage.\n"),
    (["get", "pods", "-n"], "",
     "error: flag needs an argument: 'n' in -n\nSee 'kubectl get --help' for usage.\n"),
    (["get", "pods", "--namespace"], "",
     "error: flag needs an argument: --namespace\nSee 'kubectl get --help' for usage.\n"),
    (["version", "-o", "xml"], "", "error: --output must be 'yaml' or 'json'\n"),
    (["apply"], "", "error: must specify one of -f and -k\n"),
    (["apply", "-f", "nope.yaml"], "", 'error: the path "nope.yaml" does not exist\n'),
    (["apply", "-f", "-"], "a: [\n", "error: error parsing STDIN: error converting YAML to "
     "JSON: yaml: line 2: expected the node content, but found '<stream end>'\n"),
    (["apply", "-f", "-"], "apiVersion: v1\nkind: Foo\nmetadata: {name: x}\n",
     'error: resource mapping not found for name: "x" namespace: "" from "STDIN": no matches '
     'for kind "Foo" in version "v1"\nensure CRDs are installed first\n'),
    (["apply", "-f", "-", "-n", "a"], "apiVersion: v1\nkind: ConfigMap\n"
     "metadata: {name: x, namespace: b}\n", 'error: the namespace from the provided object '
     '"b" does not match the namespace "a". You must pass \'--namespace=b\' to perform this '
     "operation.\n"),
    (["apply", "-f", "-", "-n", "nowhere"], "apiVersion: v1\nkind: ConfigMap\n"
     "metadata: {name: x}\n", 'Error from server (NotFound): error when creating "STDIN": '
     'namespaces "nowhere" not found\n'),
    (["get", "widgets"], "", 'error: the server doesn\'t have a resource type "widgets"\n'),
    (["logs"], "", "error: expected 'logs [-f] [-p] (POD | TYPE/NAME) [-c CONTAINER]'.\n"
     "POD or TYPE/NAME is a required argument for the logs command\n"
     "See 'kubectl logs -h' for help and examples\n"),
    (["logs", "nope"], "", 'Error from server (NotFound): pods "nope" not found\n'),
    (["delete", "mpijob"], "", "error: resource(s) were provided, but no name was specified\n"),
])
def test_bad_input_gets_kubectls_words_and_exit_1(cluster: FakeCluster, argv: list[str],
                                                   stdin: str, stderr: str,
                                                   tmp_path: Path) -> None:
    done = kubectl(cluster, *argv, stdin=stdin, cwd=tmp_path)
    assert (done.returncode, done.stdout, done.stderr) == (1, "", stderr)


@pytest.mark.parametrize("argv", [["describe", "mpijob", "x"], ["get", "pods", "-w"],
                                  ["apply", "--server-side", "-f", "x.yaml"],
                                  ["get", "mpijob", "x", "-o", "custom-columns=N:.metadata"],
                                  ["get", "mpijobs", "-o",
                                   "jsonpath={range .items[*]}{.metadata.name}{end}"]])
def test_real_kubectl_features_the_fake_lacks_are_named_not_unknown(
        cluster: FakeCluster, argv: list[str]) -> None:
    if argv[0] == "get" and argv[1].startswith("mpijob"):
        kubectl(cluster, "apply", "-f", "-", stdin=mpijob("x"))
    done = kubectl(cluster, *argv)
    assert done.returncode == 1 and done.stderr.startswith("error: ")
    assert "fake's kubectl" in done.stderr and "unknown" not in done.stderr


def test_version_is_what_the_pinned_kubectl_prints(cluster: FakeCluster) -> None:
    # Recorded from this project's kubectl v1.36.3 build (`version --client -o json`).
    assert kubectl(cluster, "version", "--client").stdout == \
        "Client Version: v1.36.3\nKustomize Version: v5.8.1\n"
    shown = json.loads(kubectl(cluster, "version", "--client", "-o", "json").stdout)
    assert shown == {"clientVersion": {
        "major": "1", "minor": "36", "gitVersion": "v1.36.3", "gitCommit": "$Format:%H$",
        "gitTreeState": "clean", "buildDate": "1970-01-01T00:00:00Z", "goVersion": "go1.26.8",
        "compiler": "gc", "platform": "linux/amd64"}, "kustomizeVersion": "v5.8.1"}
    both = kubectl(cluster, "version")
    assert both.stdout.endswith("Server Version: v1.36.3\n")


def test_an_unreachable_api_server_is_said_not_raised(cluster: FakeCluster) -> None:
    cluster.set_api_down("connection refused")
    done = kubectl(cluster, "get", "mpijobs")
    assert done.returncode == 1
    assert done.stderr.startswith("Unable to connect to the server: ")
    client_only = kubectl(cluster, "version", "--client")
    assert client_only.returncode == 0


def test_options_go_anywhere_in_every_spelling(cluster: FakeCluster) -> None:
    config = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cfg, namespace: mpi-operator}\n"
    assert kubectl(cluster, "apply", "-f", "-", stdin=config).returncode == 0
    for argv in (["-n", "mpi-operator", "get", "cm", "cfg"], ["get", "cm", "cfg", "-nmpi-operator"],
                 ["get", "cm/cfg", "--namespace=mpi-operator"],
                 ["get", "-n=mpi-operator", "configmaps", "cfg"]):
        done = kubectl(cluster, *argv, "-o", "name")
        assert (done.returncode, done.stdout) == (0, "configmap/cfg\n"), (argv, done)
    empty = kubectl(cluster, "get", "mpijobs", "-n", "mpi-operator")
    assert (empty.stdout, empty.stderr) == ("", "No resources found in mpi-operator namespace.\n")


def test_an_internal_failure_is_an_error_line_not_a_traceback(
        cluster: FakeCluster, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken(*_: Any, **__: Any) -> Any:
        raise RuntimeError("disk on fire")

    monkeypatch.setattr(cluster, "list", broken)
    done = kubectl(cluster, "get", "pods")
    assert (done.returncode, done.stdout) == (1, "")
    assert done.stderr == "error: the fake's kubectl could not answer (RuntimeError: disk on " \
                          "fire)\n"


@pytest.mark.parametrize(("template", "want"), [
    ("{.status.phase}", "Running"),
    ("{.items[0]}", ""),
    ("{.spec.containers[*].name}", "a b"),
    ("{.spec.containers[-1].image}", "img:2"),
    ('{.status.conditions[?(@.type=="Ready")].status}', "True"),
    ("{.status.conditions[?(@.reason)].type}", "Ready"),
    ("{.metadata.labels['app.kubernetes.io/name']}", "pi"),
    ('{.metadata.name}{"\\n"}', "p\n"),
    ("name={.metadata.name} ok", "name=p ok"),
    ("{.status.missing}", ""),
    ("{.spec.containers[0].ports}", '[{"containerPort":22}]'),
    ("{.spec.replicas} {.spec.suspend}", "2 false"),
])
def test_jsonpath_prints_as_kubectl(template: str, want: str) -> None:
    obj = {"metadata": {"name": "p", "labels": {"app.kubernetes.io/name": "pi"}},
           "spec": {"replicas": 2, "suspend": False,
                    "containers": [{"name": "a", "image": "img:1", "ports": [
                        {"containerPort": 22}]}, {"name": "b", "image": "img:2"}]},
           "status": {"phase": "Running", "conditions": [
               {"type": "Ready", "status": "True", "reason": "Up"},
               {"type": "Other", "status": "False"}]}}
    assert jsonpath(template, obj) == want


def test_yaml_is_the_same_document_as_json(cluster: FakeCluster) -> None:
    import yaml

    assert kubectl(cluster, "apply", "-f", "-", stdin=mpijob("y")).returncode == 0
    # The fake's operator writes the job's status meanwhile: a pair read between two of its
    # writes differs for that reason alone, so the pair is read again (a few times at most).
    for _ in range(20):
        as_yaml = yaml.safe_load(kubectl(cluster, "get", "mpijob", "y", "-o", "yaml").stdout)
        as_json = json.loads(kubectl(cluster, "get", "mpijob", "y", "-o", "json").stdout)
        if as_yaml == as_json:
            break
    assert as_yaml == as_json and as_json["metadata"]["name"] == "y"


def test_logs_of_a_pod_that_cannot_start_and_of_an_unknown_container(
        cluster: FakeCluster) -> None:
    # No toleration of kwok's taint: the launcher's pod stays Pending, as on the real stack.
    stuck = mpijob("stuck").replace("          tolerations: [{key: kwok.x-k8s.io/node, "
                                    "operator: Exists, effect: NoSchedule}]\n", "")
    assert kubectl(cluster, "apply", "-f", "-", stdin=stuck).returncode == 0
    until(cluster, "get", "pods", "-l", "training.kubeflow.org/job-name=stuck", "-o",
          "jsonpath={.items[*].status.phase}", want="Pending Pending Pending")
    pod = kubectl(cluster, "get", "pods", "-l", "training.kubeflow.org/job-role=launcher",
                  "-o", "jsonpath={.items[0].metadata.name}").stdout
    waiting = kubectl(cluster, "logs", pod)
    assert (waiting.returncode, waiting.stderr) == (
        1, f'Error from server (BadRequest): container "launcher" in pod "{pod}" is waiting '
           f"to start: ContainerCreating\n")
    unknown = kubectl(cluster, "logs", pod, "-c", "nope")
    assert unknown.stderr == f"Error from server (BadRequest): container nope is not valid " \
                             f"for pod {pod}\n"


def test_delete_waits_until_the_object_is_gone() -> None:
    # Foreground: the MPIJob goes once the garbage collector removed its dependents, which
    # only step() runs here.
    still = FakeCluster(autostart=False)
    try:
        for name in ("a", "b"):
            assert kubectl(still, "apply", "-f", "-", stdin=mpijob(name)).returncode == 0
        still.wait_idle(5)
        quick = kubectl(still, "delete", "mpijob", "a", "--cascade=foreground", "--wait=false")
        assert quick.stdout == 'mpijob.kubeflow.org "a" deleted from default namespace\n'
        terminating = still.get("MPIJob", "default", "a")
        assert terminating is not None and terminating["metadata"]["deletionTimestamp"]
        late = kubectl(still, "delete", "mpijob", "b", "--cascade=foreground",
                       "--timeout=0.2s")
        assert (late.returncode, late.stderr) == (
            1, "error: timed out waiting for the condition on mpijobs/b\n")
        bad = kubectl(still, "delete", "mpijob", "b", "--cascade=sideways")
        assert bad.stderr.startswith("error: invalid cascade value (sideways).")
    finally:
        still.close()
    moving = FakeCluster()
    try:
        assert kubectl(moving, "apply", "-f", "-", stdin=mpijob("c")).returncode == 0
        until(moving, "get", "pod", "c-worker-0", "-o", "name", want="pod/c-worker-0\n")
        done = kubectl(moving, "delete", "mpijob", "c", "--cascade=foreground")
        assert done.returncode == 0, done.stderr
        assert moving.get("MPIJob", "default", "c") is None  # kubectl waited for it
        assert moving.get("Pod", "default", "c-worker-0") is None
    finally:
        moving.close()


def test_printers_match_what_the_pinned_kubectl_printed(cluster: FakeCluster) -> None:
    # Recorded from kubectl v1.36.3 (`create configmap x --from-literal=k='<b>&é'
    # --from-literal=n=1 --dry-run=client -o ...`): Go's HTML escaping, 4-space JSON, maps in
    # jsonpath as compact JSON, `.*` as the values, a missing field as nothing.
    obj = {"data": {"k": "<b>&é", "n": "1"}, "metadata": {"name": "x"}}
    assert jsonpath("{.data}|{.data.k}|{.metadata.missing}|{.data.*}|{.metadata}", obj) == \
        '{"k":"\\u003cb\\u003e\\u0026é","n":"1"}|<b>&é||<b>&é 1|{"name":"x"}'
    config = ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n"
              "data: {k: '<b>&é', m: \"l1\\nl2\\n\"}\n")
    assert kubectl(cluster, "apply", "-f", "-", stdin=config).returncode == 0
    shown = kubectl(cluster, "get", "cm", "x", "-o", "json").stdout
    assert '\n    "data": {\n        "k": "\\u003cb\\u003e\\u0026é",\n' in shown
    assert "  m: |\n    l1\n    l2\n" in kubectl(cluster, "get", "cm", "x", "-o", "yaml").stdout
    unclosed = kubectl(cluster, "get", "cm", "x", "-o", "jsonpath={.data.k")
    assert (unclosed.returncode, unclosed.stderr) == (
        1, "error: error parsing jsonpath {.data.k, unclosed action\n")


def test_wait_for_the_operators_condition_and_for_deletion(cluster: FakeCluster) -> None:
    assert kubectl(cluster, "apply", "-f", "-", stdin=mpijob("pi")).returncode == 0
    met = kubectl(cluster, "wait", "--for=condition=Succeeded", "mpijob/pi", "--timeout=30s")
    assert (met.returncode, met.stdout, met.stderr) == (
        0, "mpijob.kubeflow.org/pi condition met\n", "")
    assert cluster.get("MPIJob", "default", "pi")["status"]["conditions"][-1]["type"] == \
        "Succeeded"
    # The job succeeded: waiting for Failed times out, in kubectl's words; 0 checks once.
    never = kubectl(cluster, "wait", "mpijob", "pi", "--for", "condition=Failed",
                    "--timeout=0.2s")
    assert (never.returncode, never.stderr) == (
        1, "error: timed out waiting for the condition on mpijobs/pi\n")
    once = kubectl(cluster, "wait", "mpijob/pi", "--for=condition=Failed", "--timeout=0")
    assert once.stderr == "error: condition not met for mpijobs.kubeflow.org/pi\n"
    path = 'jsonpath={.status.conditions[?(@.type=="Succeeded")].status}=True'
    assert kubectl(cluster, "wait", "mpijob/pi", f"--for={path}").returncode == 0
    assert kubectl(cluster, "delete", "mpijob", "pi", "--wait=false").returncode == 0
    gone = kubectl(cluster, "wait", "--for=delete", "mpijob/pi", "--timeout=10s")
    assert (gone.returncode, gone.stderr) == (0, "")
    missing = kubectl(cluster, "wait", "--for=condition=Succeeded", "mpijob/pi")
    assert missing.stderr == 'Error from server (NotFound): mpijobs.kubeflow.org "pi" not ' \
                             'found\n'
    assert kubectl(cluster, "wait", "--for=sunrise", "mpijob/pi").stderr == \
        'error: unrecognized condition: "sunrise"\n'


_WORDS = ["apply", "get", "delete", "wait", "logs", "version", "describe", "frob", "-f", "-",
          "x.yaml", "mpijob", "mpijobs", "pods", "po", "job", "cm", "ns", "node", "pi",
          "mpijob/pi", "pod/pi-worker-0", "job/pi-launcher", "pi-worker-0", "default", "-n",
          "-nx", "--namespace=default", "-A", "-l", "a=b", "a!=b", "-o", "json", "yaml", "name",
          "wide", "jsonpath={.status}", "jsonpath={.items[?(@.x)]}", "jsonpath={", "-o=json",
          "--for=condition=Succeeded", "--for=delete", "--for=jsonpath={.a}=1", "--for",
          "--timeout=0", "--timeout=0.1s", "--wait=false", "--wait=maybe", "--cascade=orphan",
          "--cascade", "--ignore-not-found", "-c", "--tail=1", "--tail=x", "-p", "--client",
          "--", "-", "-h", "-Ao", "--bogus", "-z", "", "é", "--grace-period=0"]


def test_no_command_line_makes_it_fail_unexplained() -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    cluster = FakeCluster()
    try:
        assert kubectl(cluster, "apply", "-f", "-", stdin=mpijob("pi")).returncode == 0

        @settings(max_examples=300, deadline=None,
                  suppress_health_check=[HealthCheck.too_slow])
        @given(argv=st.tuples(st.sampled_from(["apply", "get", "delete", "wait", "logs",
                                                "version", "-n"]),
                              st.lists(st.sampled_from(_WORDS) | st.text(max_size=8),
                                       max_size=7)).map(lambda t: [t[0], *t[1]]),
               stdin=st.sampled_from(["", "a: [", mpijob("pj"), "kind: List\nitems: [1]\n",
                                      "- 1\n", "apiVersion: v1\nkind: Pod\n"]))
        def one(argv: list[str], stdin: str) -> None:
            done = cluster.commands.run(["kubectl", *argv], stdin=stdin, timeout=0.5)
            assert done.returncode in (0, 1), done
            assert "could not answer" not in done.stderr, done  # an unexplained exception
            assert done.returncode == 0 or done.stderr.strip(), done

        one()
    finally:
        cluster.close()


def test_a_launcher_without_an_exit_code_runs_until_deleted_as_under_kwok(
        cluster: FakeCluster) -> None:
    """The compose kwok stacks end a pod only by its exit-code annotation (their Stage): a
    user's MPIJob without it stays Running there, and so it does here (the real plane's half
    of this is tests/backend/test_kubectl_real.py)."""
    assert kubectl(cluster, "apply", "-f", "-", stdin=mpijob("plain", exit_code=None)
                   ).returncode == 0
    running = kubectl(cluster, "wait", "--for=condition=Running", "mpijob/plain",
                      "--timeout=30s")
    assert running.returncode == 0, running.stderr
    done = kubectl(cluster, "wait", "--for=condition=Succeeded", "mpijob/plain",
                   "--timeout=1s")
    assert (done.returncode, done.stderr) == (
        1, "error: timed out waiting for the condition on mpijobs/plain\n")
    phases = kubectl(cluster, "get", "pods", "-l", "training.kubeflow.org/job-name=plain",
                     "-o", "jsonpath={.items[*].status.phase}").stdout.split()
    assert phases == ["Running"] * 3, phases
