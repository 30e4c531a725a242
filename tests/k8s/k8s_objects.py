"""Our objects for the tests against the real control plane: the CRDs (config/crd), the samples
(config/samples), and installing the CRDs through the API as `kubectl apply -k config/crd` would.
(Imported by name: `conftest` is ambiguous across test folders.)"""
from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import yaml
from k8s_rest import Rest

from homecluster_lab.k8s import binaries

REPO = Path(__file__).resolve().parents[2]
CRD_DIR = REPO / "config" / "crd"
SAMPLES = REPO / "config" / "samples"
API = "/apis/infra.homecluster.dev/v2alpha1"
PLURALS = {"Group": "groups", "Node": "nodes", "NodeClaim": "nodeclaims"}


def load_yaml(path: Path) -> list[dict[str, Any]]:
    return [d for d in yaml.safe_load_all(path.read_text()) if d]


def crds() -> list[dict[str, Any]]:
    return [d for p in sorted(CRD_DIR.glob("infra.homecluster.dev_*.yaml")) for d in load_yaml(p)]


def sample(name: str) -> dict[str, Any]:
    return load_yaml(SAMPLES / name)[0]


def path_of(obj: dict[str, Any]) -> str:
    return f"{API}/{PLURALS[obj['kind']]}"


async def install_crds(rest: Rest, timeout: float = 30) -> None:
    """Create our CRDs, wait until each is Established and its resource answers a list."""
    for crd in crds():
        status, body = await rest.request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        assert status in (201, 409), body
    deadline = time.monotonic() + timeout
    for crd in crds():
        while True:
            _, body = await rest.request(
                "GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{crd['metadata']['name']}")
            conditions = {c["type"]: c["status"] for c in (body.get("status") or {}).get("conditions") or []}
            if conditions.get("Established") == "True":
                break
            assert time.monotonic() < deadline, f"{crd['metadata']['name']} not Established: {body.get('status')}"
            await asyncio.sleep(0.1)
    for plural in PLURALS.values():
        while (await rest.request("GET", f"{API}/{plural}"))[0] != 200:
            assert time.monotonic() < deadline, f"{plural} is not served"
            await asyncio.sleep(0.1)


# where each kind of config/rbac is created
_RBAC_PATHS = {
    "ServiceAccount": "/api/v1/namespaces/{ns}/serviceaccounts",
    "Role": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/roles",
    "RoleBinding": "/apis/rbac.authorization.k8s.io/v1/namespaces/{ns}/rolebindings",
    "ClusterRole": "/apis/rbac.authorization.k8s.io/v1/clusterroles",
    "ClusterRoleBinding": "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
}


def kustomize(directory: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize directory` with the kubectl built here (or on PATH), parsed."""
    kubectl = binaries.find("kubectl") or shutil.which("kubectl")
    if kubectl is None:
        pytest.skip(binaries.missing_reason(("kubectl",)))
    done = subprocess.run([str(kubectl), "kustomize", str(directory)], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    return [d for d in yaml.safe_load_all(done.stdout) if d]


async def apply_rbac(rest: Rest) -> list[dict[str, Any]]:
    """config/rbac as a user applies it (the namespace must exist); returns the objects."""
    objects = kustomize(REPO / "config" / "rbac")
    for obj in objects:
        path = _RBAC_PATHS[obj["kind"]].format(ns=obj["metadata"].get("namespace", ""))
        status, body = await rest.request("POST", path, obj)
        assert status == 201, f"{obj['kind']}/{obj['metadata']['name']}: {body}"
    return objects
