"""Our objects for the tests against the real control plane: the CRDs (config/crd), the samples
(config/samples), and installing them through the API with the lab's installer (homecluster_lab.k8s.install),
over the tests' status-keeping client (k8s_rest.Rest). (Imported by name: `conftest` is ambiguous across test
folders.)"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml
from k8s_rest import Rest

from homecluster_lab.k8s import install
from homecluster_lab.k8s.install import crds, kustomize  # noqa: F401 (the tests' names for them)

REPO = Path(__file__).resolve().parents[2]
SAMPLES = REPO / "config" / "samples"
API = "/apis/infra.homecluster.dev/v2alpha1"
PLURALS = {"Group": "groups", "Node": "nodes", "NodeClaim": "nodeclaims"}


def load_yaml(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def sample(name: str) -> dict[str, Any]:
    return load_yaml(SAMPLES / name)[0]


def path_of(obj: dict[str, Any]) -> str:
    return f"{API}/{PLURALS[obj['kind']]}"


async def install_crds(rest: Rest, timeout: float = 30) -> None:
    """Create our CRDs, wait until each is Established and its resource answers a list (the lab's installer)."""
    await install.create_crds(rest.request, timeout)


# where each kind of config/rbac is created
_RBAC_PATHS = {
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
}


async def apply_rbac(rest: Rest) -> list[dict[str, Any]]:
    """config/rbac as a user applies it (the namespace must exist); returns the objects."""
    objects = kustomize(REPO / "config" / "rbac")
    for obj in objects:
        path = _RBAC_PATHS[obj["kind"]].format(ns=obj["metadata"].get("namespace", ""))
        status, body = await rest.request("POST", path, obj)
        assert status == 201, f"{obj['kind']}/{obj['metadata']['name']}: {body}"
    return objects
