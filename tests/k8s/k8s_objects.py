"""Our objects for the tests against the real control plane: the CRDs (config/crd), the samples
(config/samples), and installing them through the API with the lab's installer (homecluster_lab.k8s.install),
over the tests' status-keeping client (k8s_rest.Rest). (Imported by name: `conftest` is ambiguous across test
folders.)"""
from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any, Protocol

import yaml
from k8s_rest import Rest
from support.waits import until

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


class Reader(Protocol):
    async def get(self, path: str) -> dict[str, Any]: ...


async def run(argv: list[str], env: dict[str, str], stdin: str | None = None) -> tuple[int, str, str]:
    """Run a client program (kubectl, helm) with `env`, `stdin` fed to it when given: (exit code, stdout, stderr)."""
    proc = await asyncio.create_subprocess_exec(
        *argv, env=env, stdin=asyncio.subprocess.PIPE if stdin is not None else None,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(stdin.encode() if stdin is not None else None), 180)
    return proc.returncode, out.decode(), err.decode()


class KubectlReader:
    """`get(path)` through `kubectl get --raw` with the kubeconfig in `env`, for tests that drive kubectl."""

    def __init__(self, kubectl: str, env: dict[str, str]):
        self.kubectl, self.env = kubectl, env

    async def get(self, path: str) -> dict[str, Any]:
        code, out, err = await run([self.kubectl, "get", "--raw", path], self.env)
        if code != 0:  # not created yet, or the server not answering: asked again
            return {"status": {"conditions": []}, "error": err[-300:]}
        return json.loads(out)


CRD_PATH = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"


async def established(reader: Reader, *crds: str, timeout: float = 120) -> None:
    """Wait until each CRD named is Established, read from the API. Not `kubectl wait --for=condition=Established`
    right after an apply: a CRD whose status has no conditions yet fails it at once ("status.conditions accessor
    error: <nil> is of the type <nil>", kubernetes/kubernetes#66439), as seen here with cert-manager's."""
    waiting: list[str] = []

    async def all_established() -> bool:
        waiting[:] = []
        for name in crds:
            crd = await reader.get(CRD_PATH + name)
            if not any(c.get("type") == "Established" and c.get("status") == "True"
                       for c in (crd.get("status") or {}).get("conditions") or []):
                waiting.append(name)
        return not waiting

    await until(all_established, "the CRDs to be Established", timeout, detail=lambda: f"not yet: {waiting}")
