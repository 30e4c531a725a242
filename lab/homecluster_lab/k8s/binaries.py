"""Where `make k8s` (scripts/build-k8s.sh) puts the real control plane's programs, and whether they are there.

The cache folder is keyed by sha256(go.mod + go.sum) of lab/k8s, exactly as the build script keys it,
so a change of pins looks in (and builds into) a new folder.
"""
from __future__ import annotations

import hashlib
import os
from pathlib import Path

# lab/homecluster_lab/k8s/binaries.py -> the checkout's root
REPO = Path(__file__).resolve().parents[3]
MODULE = REPO / "lab" / "k8s"
# helm: a module of its own (its k8s.io client libraries follow helm's release), the same cache style.
HELM_MODULE = REPO / "lab" / "helm"
# the lab's real node (kubelet, kube-proxy, the pod sandbox's pause): a module of its own, `make realnode`
NODE_MODULE = REPO / "lab" / "k8s-node"
CONTROL_PLANE = ("etcd", "kube-apiserver", "kube-controller-manager", "kube-scheduler")


def cache_root() -> Path:
    return Path(os.environ.get("HOMECLUSTER_K8S_CACHE") or Path.home() / ".cache" / "homecluster" / "k8s")


def module_key(module: Path = MODULE) -> str:
    """The first 16 hex digits of sha256(go.mod + go.sum): the build script's key."""
    digest = hashlib.sha256((module / "go.mod").read_bytes() + (module / "go.sum").read_bytes())
    return digest.hexdigest()[:16]


def bin_dir(module: Path = MODULE) -> Path:
    """HOMECLUSTER_K8S_BIN when set (a folder of prebuilt programs), else the build cache's folder."""
    explicit = os.environ.get("HOMECLUSTER_K8S_BIN")
    return Path(explicit) if explicit else cache_root() / module_key(module) / "bin"


def find(name: str, directory: Path | None = None) -> Path | None:
    """The program `name` in `directory` (default: bin_dir()) when it is there and executable."""
    path = (directory or bin_dir()) / name
    return path if os.access(path, os.X_OK) else None


def missing_reason(names: tuple[str, ...] = CONTROL_PLANE, directory: Path | None = None) -> str | None:
    """None when every program in `names` is built, else what is missing and how to build it."""
    directory = directory or bin_dir()
    missing = [n for n in names if find(n, directory) is None]
    if not missing:
        return None
    return (f"the real control plane is not built ({', '.join(missing)} missing in {directory}); "
            f"run `make k8s` (needs Go >= 1.25 and the Go module proxy; cold: see docs/lab.md)")


def helm() -> Path | None:
    """helm, built by `make k8s` from lab/helm (HOMECLUSTER_K8S_BIN, when set, is searched too)."""
    explicit = os.environ.get("HOMECLUSTER_K8S_BIN")
    if explicit and find("helm", Path(explicit)):
        return find("helm", Path(explicit))
    return find("helm", cache_root() / module_key(HELM_MODULE) / "bin")


def helm_missing_reason() -> str | None:
    """None when helm is built, else how to build it."""
    if helm() is not None:
        return None
    return ("helm is not built (lab/helm); run `make k8s` (needs Go >= 1.25 and the Go module proxy; "
            "cold: see docs/lab.md)")


# Flux's source-controller and kustomize-controller (lab/flux, `make flux`): the GitOps tests' real controllers.
FLUX_MODULE = REPO / "lab" / "flux"
FLUX = ("source-controller", "kustomize-controller")


def flux_bin_dir() -> Path:
    return cache_root() / module_key(FLUX_MODULE) / "bin"


def flux_manifests() -> Path:
    """The controllers' CRDs and RBAC, copied out of the same pinned modules by the build (lab/flux/manifests)."""
    return cache_root() / module_key(FLUX_MODULE) / "manifests"


def flux_missing_reason() -> str | None:
    """None when both Flux controllers and their manifests are built, else what is missing and how to build it."""
    missing = [n for n in FLUX if find(n, flux_bin_dir()) is None]
    if not (flux_manifests() / ".complete").exists():
        missing.append("their CRDs and RBAC")
    if not missing:
        return None
    return (f"Flux is not built ({', '.join(missing)} missing in {flux_bin_dir().parent}); run `make flux` "
            f"(needs Go >= 1.26 and the Go module proxy; cold: see docs/gitops.md)")
