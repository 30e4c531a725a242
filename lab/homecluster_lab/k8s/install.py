"""Our install on the real control plane, as a user applies it, and the identities the lab's parts use.

The one installer of our CRDs and config/ in the tree: the lab uses it, and the tests against the real control
plane (tests/k8s/k8s_objects.py) call the same functions over their own status-keeping client.
- `crds()`, `kustomize(dir)`: config/crd's CRDs, and a config/ folder as `kubectl kustomize` renders it;
- `create_crds(request, ...)`: the CRDs created and waited on until Established and served, over any
  `request(method, path, body) -> (HTTP status, body)`;
- `install(api, ...)`: the CRDs, the operator's namespace (config/manager/namespace.yaml: Pod
  Security `restricted`; `privileged` when a pool powers on by Wake-on-LAN, whose startup Jobs need host
  networking, as docs/install.md says), config/rbac and config/policy (kustomize, with the kubectl built here), waiting
  until the CRDs are Established and served;
- `service_account_kubeconfig(...)`: a kubeconfig with a TokenRequest token of a ServiceAccount (the
  operator runs as `homecluster-controller`, so every request it makes passes the real RBAC authorizer);
- `node_kubeconfig(...)`: a kubeconfig with a client certificate `CN=system:node:<name>, O=system:nodes` from
  the lab's CA, so a kubelet of ours is judged by the Node authorizer and NodeRestriction.
"""
from __future__ import annotations

import asyncio
import shutil
import subprocess
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import yaml

from homecluster_lab import yamlfiles
from homecluster_lab.config import LabError
from homecluster_lab.node.kube import KubeError

from . import binaries, pki
from .realapi import RealApi

REPO = binaries.REPO
CONFIG = REPO / "config"
CRD_GROUP_PATH = "/apis/infra.homecluster.dev/v2alpha1"
OPERATOR_ACCOUNT = "homecluster-controller"
CONFIG_NAMESPACE = "homecluster-system"  # the operator's namespace as config/ names it
TOKEN_SECONDS = 7 * 24 * 3600  # the operator's token: a lab that runs longer than a week loses its operator
CRD_PLURALS = ("groups", "nodes", "nodeclaims")
# (method, path, body) -> (HTTP status, decoded body), never raising on a status: what create_crds speaks
Request = Callable[[str, str, Any], Awaitable[tuple[int, Any]]]


def crds() -> list[dict[str, Any]]:
    """config/crd's CustomResourceDefinitions, in file order."""
    return yamlfiles.custom_resource_definitions(sorted((CONFIG / "crd").glob("infra.homecluster.dev_*.yaml")))


def kustomize(directory: Path) -> list[dict[str, Any]]:
    """`kubectl kustomize directory`, with the kubectl `make k8s` built (else the one on PATH), parsed."""
    kubectl = binaries.find("kubectl") or shutil.which("kubectl")
    if kubectl is None:
        raise LabError(binaries.missing_reason(("kubectl",)) or "kubectl is missing")
    done = subprocess.run([str(kubectl), "kustomize", str(directory)], capture_output=True, text=True, timeout=120)
    if done.returncode != 0:
        raise LabError(f"kubectl kustomize {directory} failed: {done.stderr.strip()}")
    return [d for d in yaml.safe_load_all(done.stdout) if d]


def namespace_manifest(name: str, host_network: bool) -> dict[str, Any]:
    """config/manager/namespace.yaml, renamed to `name`; `privileged` enforcement when Jobs need host networking."""
    ns = yaml.safe_load((CONFIG / "manager" / "namespace.yaml").read_text())
    ns["metadata"]["name"] = name
    if host_network:
        ns["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] = "privileged"
    return ns


async def install(api: RealApi, namespace: str, *, host_network: bool, timeout: float = 60) -> None:
    await install_crds(api, timeout)
    await api.create_or_keep(namespace_manifest(namespace, host_network))
    for obj in kustomize(CONFIG / "rbac"):
        # config/ names the operator's namespace; another one moves what lives there (the events Role stays in
        # "default", where the API server keeps the Events of cluster-scoped objects)
        if obj["metadata"].get("namespace") == CONFIG_NAMESPACE:
            obj["metadata"]["namespace"] = namespace
        for subject in obj.get("subjects") or []:
            if subject.get("kind") == "ServiceAccount" and subject.get("namespace") == CONFIG_NAMESPACE:
                subject["namespace"] = namespace
        await api.create_or_keep(obj)
    for obj in kustomize(CONFIG / "policy"):  # the Jobs' token confined to the pool (cluster-scoped)
        await api.create_or_keep(obj)


async def install_crds(api: RealApi, timeout: float = 60) -> None:
    """config/crd's CRDs on the lab's real control plane (create_crds over the admin's client)."""
    async def request(method: str, path: str, body: Any = None) -> tuple[int, Any]:
        try:
            return 200, await api.kube.request(method, path, body)
        except KubeError as exc:
            return exc.status, exc.body

    await create_crds(request, timeout)


async def create_crds(request: Request, timeout: float = 60) -> None:
    """Create our CRDs (one that exists is kept) and wait until each is Established and its resource answers a
    list; LabError names the CRD and what the server said when one is refused or not served within `timeout`."""
    for crd in crds():
        status, body = await request("POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
        if status >= 300 and status != 409:
            raise LabError(f"creating CRD {crd['metadata']['name']} (config/crd) failed: HTTP {status}: "
                           f"{_message(body)}")
    deadline = time.monotonic() + timeout
    for crd in crds():
        name = crd["metadata"]["name"]
        while True:
            _, body = await request("GET", f"/apis/apiextensions.k8s.io/v1/customresourcedefinitions/{name}", None)
            conditions = _conditions(body)
            if conditions.get("Established") == "True":
                break
            _not_after(deadline, f"our CRD {name} was not Established within {timeout:g}s (conditions: "
                                 f"{conditions}): see the API server's log for why")
            await asyncio.sleep(0.1)
    for plural in CRD_PLURALS:
        while True:
            status, body = await request("GET", f"{CRD_GROUP_PATH}/{plural}", None)
            if status == 200:
                break
            _not_after(deadline, f"our CRD {plural}.infra.homecluster.dev was not served within {timeout:g}s: "
                                 f"HTTP {status}: {_message(body)}")
            await asyncio.sleep(0.1)


def _conditions(crd: Any) -> dict[str, str]:
    """A CRD's conditions by type; none for anything else (a 404's Status has a string `status`)."""
    status = crd.get("status") if isinstance(crd, dict) and crd.get("kind") == "CustomResourceDefinition" else None
    return {c.get("type"): c.get("status") for c in (status or {}).get("conditions") or [] if isinstance(c, dict)}


def _not_after(deadline: float, message: str) -> None:
    if time.monotonic() > deadline:
        raise LabError(message)


def _message(body: Any) -> str:
    return str(body.get("message") if isinstance(body, dict) and "message" in body else body)[:300]


async def service_account_kubeconfig(api: RealApi, path: Path, cp_pki: pki.Pki, namespace: str,
                                     account: str = OPERATOR_ACCOUNT, seconds: int = TOKEN_SECONDS) -> Path:
    """A kubeconfig (mode 0600) carrying a TokenRequest token of `namespace/account`."""
    answer = await api.kube.create(f"/api/v1/namespaces/{namespace}/serviceaccounts/{account}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": seconds}})
    return pki.write_user_kubeconfig(path, cp_pki, api.url, {"token": answer["status"]["token"]})


def node_kubeconfig(path: Path, cp_pki: pki.Pki, url: str, node: str) -> Path:
    """A kubeconfig (mode 0600) authenticating as the kubelet of `node` (client certificate)."""
    return pki.write_kubeconfig(path, cp_pki, url, (f"system:node:{node}", ("system:nodes",)))


# The lab's stand-in for a CNI agent (cilium's, say): the identity that removes the pool's readiness taint
# once a machine's "network" is up. A kubelet may not touch its Node's taints (NodeRestriction).
CNI_USER = "homecluster-lab-cni"


def cni_rbac() -> list[dict[str, Any]]:
    """A ClusterRole to read and patch Nodes, bound to CNI_USER (authenticated by client certificate)."""
    meta = {"name": CNI_USER, "labels": {"app.kubernetes.io/name": "homecluster-lab"}}
    return [{"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": dict(meta),
             "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "patch"]}]},
            {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding", "metadata": dict(meta),
             "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": CNI_USER},
             "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": CNI_USER}]}]
