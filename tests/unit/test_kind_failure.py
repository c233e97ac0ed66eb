"""What a report says when ``kind create cluster`` fails: the reason, not the stack trace."""

from __future__ import annotations

from pytest_stacks.providers import kind_failure

#: The shape of kind's output when kubeadm init fails (abridged from a CI window's).
KIND_OUTPUT = """\
Creating cluster "pst-kind" ...
 ✓ Preparing nodes 📦 📦
 ✗ Starting control-plane 🕹️
ERROR: failed to create cluster: failed to init node with kubeadm: command "docker exec \
--privileged pst-kind-control-plane kubeadm init --v=6" failed with error: exit status 1
Command Output: I1204 14:05:40.1 initconfiguration.go:261] loading configuration
[wait-control-plane] Waiting for the kubelet to boot up the control plane
[control-plane-check] kube-apiserver is not healthy after 2m0s
error execution phase wait-control-plane: failed while waiting for the control plane to start
k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/workflow.(*Runner).Run.func1
\tk8s.io/kubernetes@v1.36.3/cmd/kubeadm/app/cmd/phases/workflow/runner.go:235
k8s.io/kubernetes/cmd/kubeadm/app/cmd/phases/workflow.(*Runner).visitAll
\tk8s.io/kubernetes@v1.36.3/cmd/kubeadm/app/cmd/phases/workflow/runner.go:450
main.main
\tk8s.io/kubernetes@v1.36.3/cmd/kubeadm/kubeadm.go:25
runtime.main
\truntime/proc.go:290
runtime.goexit
\truntime/asm_amd64.s:1771
"""


def test_the_reason_comes_first_and_no_stack_frame_is_kept() -> None:
    said = kind_failure.summary(KIND_OUTPUT)
    lines = said.splitlines()
    assert lines[0].startswith("ERROR: failed to create cluster: failed to init node with kubeadm")
    assert "[control-plane-check] kube-apiserver is not healthy after 2m0s" in lines
    assert "error execution phase wait-control-plane: failed while waiting for the control " \
           "plane to start" in lines
    assert not any(line.startswith(("\t", "k8s.io/", "runtime.", "main.main")) for line in lines)


def test_output_without_a_named_reason_keeps_its_last_lines() -> None:
    assert kind_failure.summary("one\ntwo\nthree\n", tail=2) == "two\nthree"
