"""cert-manager on the lab's real node: its controller and cainjector (`make cert-manager`, lab/cert-manager) as
one-file images in the node's containerd, run as Deployments by our own minimal manifests.

    archives = certmanager.write_images(workdir / "images")   # OCI archives for RealNode(images=...)
    objects = certmanager.manifests(node="lab-node")          # namespace, RBAC, Deployments (dicts)
    certmanager.crds()                                        # its CRDs, from the same Go module

The manifests are ours, not cert-manager's: one replica each, no leader election, no cert-manager webhook (its
validation of cert-manager's own resources is not what the lab proves; the API server admits them unchecked),
pods as `restricted` Pod Security wants them. What they run is cert-manager's own code at the pinned version.
"""
from __future__ import annotations

from pathlib import Path

from . import binaries, ociarchive

MODULE = binaries.REPO / "lab" / "cert-manager"
NAMESPACE = "cert-manager"
PROGRAMS = ("cert-manager-controller", "cert-manager-cainjector")
HEALTH_PORTS = {"cert-manager-controller": 9403, "cert-manager-cainjector": 9404}
GO_MODULE = "github.com/cert-manager/cert-manager"


def version() -> str:
    """The cert-manager release lab/cert-manager/go.mod pins (the images' tag)."""
    for line in (MODULE / "go.mod").read_text().splitlines():
        words = line.split("//")[0].split()
        if GO_MODULE in words[:-1]:
            return words[words.index(GO_MODULE) + 1]
    raise LookupError(f"{MODULE / 'go.mod'} pins no {GO_MODULE}")


def bin_dir() -> Path:
    return binaries.bin_dir(MODULE)


def crd_dir() -> Path:
    """cert-manager's CRDs as plain YAML, copied out of the pinned module by the build (lab/cert-manager/manifests)."""
    return bin_dir().parent / "manifests" / "cert-manager-crds"


def missing_reason() -> str | None:
    """None when both programs and the CRDs are built, else what is missing and how to build it."""
    missing = [p for p in PROGRAMS if binaries.find(p, bin_dir()) is None]
    if not (bin_dir().parent / "manifests" / ".complete").exists():
        missing.append("its CRDs")
    if not missing:
        return None
    return (f"cert-manager is not built ({', '.join(missing)} missing in {bin_dir().parent}); run "
            f"`make cert-manager` (needs Go >= 1.26 and the Go module proxy)")


def reference(program: str) -> str:
    return f"lab.homecluster.dev/{program}:{version()}"


def write_images(folder: Path) -> tuple[Path, ...]:
    """One OCI archive per program (the static binary as its image's only file), for the real node to import."""
    archives = []
    for program in PROGRAMS:
        archive = folder / f"{program}.tar"
        ociarchive.write_single_binary_image(bin_dir() / program, reference(program), archive, name=program)
        archives.append(archive)
    return tuple(archives)


def _rule(groups: list[str], resources: list[str], verbs: list[str]) -> dict:
    return {"apiGroups": groups, "resources": resources, "verbs": verbs}


READ = ["get", "list", "watch"]
WRITE = READ + ["create", "update", "patch", "delete"]
EVENTS = _rule([""], ["events"], ["create", "patch"])
RULES = {
    "cert-manager-controller": [
        _rule(["cert-manager.io"], ["issuers", "clusterissuers", "certificates", "certificaterequests",
                                    "issuers/status", "clusterissuers/status", "certificates/status",
                                    "certificaterequests/status", "certificates/finalizers",
                                    "certificaterequests/finalizers"], WRITE),
        _rule(["acme.cert-manager.io"], ["orders", "challenges"], READ),
        _rule([""], ["secrets"], WRITE),
        EVENTS,
    ],
    "cert-manager-cainjector": [
        _rule(["cert-manager.io"], ["certificates"], READ),
        _rule([""], ["secrets"], READ),
        _rule(["admissionregistration.k8s.io"], ["validatingwebhookconfigurations",
                                                 "mutatingwebhookconfigurations"], READ + ["update", "patch"]),
        _rule(["apiextensions.k8s.io"], ["customresourcedefinitions"], READ + ["update", "patch"]),
        EVENTS,
    ],
}


def _deployment(program: str, node: str) -> dict:
    port = HEALTH_PORTS[program]
    probe = {"httpGet": {"path": "/livez", "port": port}, "periodSeconds": 5}
    labels = {"app.kubernetes.io/name": program, "app.kubernetes.io/part-of": "cert-manager"}
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": program, "namespace": NAMESPACE, "labels": labels},
        "spec": {"replicas": 1, "selector": {"matchLabels": labels}, "template": {
            "metadata": {"labels": labels},
            "spec": {
                "serviceAccountName": program, "nodeSelector": {"kubernetes.io/hostname": node},
                "securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                "containers": [{
                    "name": program, "image": reference(program), "imagePullPolicy": "Never",
                    "args": [f"--healthz-address=:{port}"],
                    "ports": [{"name": "healthz", "containerPort": port}],
                    "startupProbe": {**probe, "failureThreshold": 24}, "livenessProbe": probe,
                    "readinessProbe": probe,
                    "securityContext": {"allowPrivilegeEscalation": False, "readOnlyRootFilesystem": True,
                                        "capabilities": {"drop": ["ALL"]}},
                }],
            }}},
    }


def manifests(node: str) -> list[dict]:
    """The namespace, each program's ServiceAccount, ClusterRole and binding, and its Deployment on `node`."""
    restricted = {f"pod-security.kubernetes.io/{m}": "restricted" for m in ("enforce", "warn", "audit")}
    objects: list[dict] = [{"apiVersion": "v1", "kind": "Namespace",
                            "metadata": {"name": NAMESPACE, "labels": restricted}}]
    for program in PROGRAMS:
        rbac = "rbac.authorization.k8s.io/v1"
        objects += [
            {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": program, "namespace": NAMESPACE}},
            {"apiVersion": rbac, "kind": "ClusterRole", "metadata": {"name": program}, "rules": RULES[program]},
            {"apiVersion": rbac, "kind": "ClusterRoleBinding", "metadata": {"name": program},
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": program},
             "subjects": [{"kind": "ServiceAccount", "name": program, "namespace": NAMESPACE}]},
            _deployment(program, node),
        ]
    return objects
