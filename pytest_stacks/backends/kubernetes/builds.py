"""The pinned Kubernetes programs, as Go module builds (see :mod:`pytest_stacks.gobuild`).

One place for how each program is built (module, main packages, version stamps), so the stacks
that run the same pins share one cached build: the control-plane container, the real node and
the kind node image all mount or copy the same kube-apiserver.
"""

from __future__ import annotations

from pytest_stacks.gobuild import GoModuleBuild

KUBE = "k8s.io/kubernetes/cmd/"
CONTROL_PLANE = ("kube-apiserver", "kube-controller-manager", "kube-scheduler", "kubectl")
NODE = ("kubelet", "kube-proxy")


def _stamps(package: str, version: str) -> tuple[str, ...]:
    major, minor = version.lstrip("v").split(".")[:2]
    return (f"-X {package}.gitVersion={version}", f"-X {package}.gitMajor={major}",
            f"-X {package}.gitMinor={minor}", f"-X {package}.gitTreeState=clean")


def kubernetes(name: str, version: str, programs: tuple[str, ...]) -> GoModuleBuild:
    """Programs of ``k8s.io/kubernetes`` stamped with the pinned version (what ``--version``
    and the API's ``/version`` report). ``name`` keeps one cache entry per set of programs."""
    ldflags = ("-s", "-w", *_stamps("k8s.io/component-base/version", version),
               *_stamps("k8s.io/client-go/pkg/version", version))
    return GoModuleBuild(name, {"k8s.io/kubernetes": version},
                         {program: KUBE + program for program in programs},
                         ldflags, stage_replacements_of="k8s.io/kubernetes")


def control_plane(version: str) -> GoModuleBuild:
    return kubernetes(f"kubernetes-{version}", version, CONTROL_PLANE)


def node(version: str) -> GoModuleBuild:
    return kubernetes(f"kubernetes-node-{version}", version, NODE)


def kubeadm(version: str) -> GoModuleBuild:
    return kubernetes(f"kubernetes-kubeadm-{version}", version, ("kubeadm",))


def etcd(version: str) -> GoModuleBuild:
    return GoModuleBuild(f"etcd-{version}", {"go.etcd.io/etcd/server/v3": version},
                         {"etcd": "go.etcd.io/etcd/server/v3"}, ("-s", "-w"))


def coredns(version: str) -> GoModuleBuild:
    return GoModuleBuild(f"coredns-{version}", {"github.com/coredns/coredns": version},
                         {"coredns": "github.com/coredns/coredns"}, ("-s", "-w"))


def crictl(version: str) -> GoModuleBuild:
    return GoModuleBuild(f"cri-tools-{version}", {"sigs.k8s.io/cri-tools": version},
                         {"crictl": "sigs.k8s.io/cri-tools/cmd/crictl"},
                         ("-s", "-w", f"-X sigs.k8s.io/cri-tools/pkg/version.Version={version}"))


def mpi_operator(version: str) -> GoModuleBuild:
    return GoModuleBuild(
        f"mpi-operator-{version}", {"github.com/kubeflow/mpi-operator": version},
        {"mpi-operator": "github.com/kubeflow/mpi-operator/cmd/mpi-operator"},
        ("-s", "-w", f"-X github.com/kubeflow/mpi-operator/pkg/version.Version={version}"),
        files={"mpi-operator.yaml":
               "github.com/kubeflow/mpi-operator:deploy/v2beta1/mpi-operator.yaml"})
