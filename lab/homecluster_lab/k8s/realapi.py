"""The lab's handle on the real API server, shaped like the in-memory one where the lab reads it.

The lab (LabCluster, the glance, the fault knobs, the demo) reads slots, claims and Nodes synchronously
from the in-memory server's store (`api.list(resource)`, `api.get(resource, name)`) and creates its pool
with `await api.create(obj)`. Here the same calls go to kube-apiserver as the admin: creates through the
API, reads from a cache that a list-then-watch per resource keeps (the informer pattern), so the lab's
synchronous readers stay as they are.
"""
from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from homecluster_lab.node.kube import Kube, KubeError
from homecluster_lab.node.watching import list_and_watch

# kind -> (API prefix, plural, namespaced): what the lab and our install create
_KINDS: dict[tuple[str, str], tuple[str, str, bool]] = {
    ("v1", "Namespace"): ("/api/v1", "namespaces", False),
    ("v1", "Secret"): ("/api/v1", "secrets", True),
    ("v1", "ConfigMap"): ("/api/v1", "configmaps", True),
    ("v1", "ServiceAccount"): ("/api/v1", "serviceaccounts", True),
    ("v1", "Service"): ("/api/v1", "services", True),
    ("v1", "Node"): ("/api/v1", "nodes", False),
    ("apps/v1", "Deployment"): ("/apis/apps/v1", "deployments", True),
    ("batch/v1", "Job"): ("/apis/batch/v1", "jobs", True),
    ("rbac.authorization.k8s.io/v1", "Role"): ("/apis/rbac.authorization.k8s.io/v1", "roles", True),
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ("/apis/rbac.authorization.k8s.io/v1", "rolebindings", True),
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): ("/apis/rbac.authorization.k8s.io/v1", "clusterroles", False),
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): ("/apis/rbac.authorization.k8s.io/v1",
                                                             "clusterrolebindings", False),
    ("apiextensions.k8s.io/v1", "CustomResourceDefinition"): ("/apis/apiextensions.k8s.io/v1",
                                                              "customresourcedefinitions", False),
    ("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"): (
        "/apis/admissionregistration.k8s.io/v1", "validatingwebhookconfigurations", False),
    ("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration"): (
        "/apis/admissionregistration.k8s.io/v1", "mutatingwebhookconfigurations", False),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy"): (
        "/apis/admissionregistration.k8s.io/v1", "validatingadmissionpolicies", False),
    ("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicyBinding"): (
        "/apis/admissionregistration.k8s.io/v1", "validatingadmissionpolicybindings", False),
    ("infra.homecluster.dev/v2alpha1", "Group"): ("/apis/infra.homecluster.dev/v2alpha1", "groups", False),
    ("infra.homecluster.dev/v2alpha1", "Node"): ("/apis/infra.homecluster.dev/v2alpha1", "nodes", False),
    ("infra.homecluster.dev/v2alpha1", "NodeClaim"): ("/apis/infra.homecluster.dev/v2alpha1", "nodeclaims", False),
}
# the resources the lab reads (names as the in-memory server's `list` takes them) -> their list path
WATCHED = {
    "nodes.infra.homecluster.dev": "/apis/infra.homecluster.dev/v2alpha1/nodes",
    "nodeclaims.infra.homecluster.dev": "/apis/infra.homecluster.dev/v2alpha1/nodeclaims",
    "nodes": "/api/v1/nodes",
}


def collection_path(obj: dict[str, Any]) -> str:
    """Where `obj` is created: its kind's collection (in its namespace, for a namespaced kind)."""
    key = (obj.get("apiVersion", ""), obj.get("kind", ""))
    if key not in _KINDS:
        raise KeyError(f"{key[0]}/{key[1]}: the lab does not know where to create this kind")
    prefix, plural, namespaced = _KINDS[key]
    if namespaced:
        return f"{prefix}/namespaces/{(obj.get('metadata') or {}).get('namespace') or 'default'}/{plural}"
    return f"{prefix}/{plural}"


class RealApi:
    """The admin's client of kube-apiserver plus a watched cache of slots, claims and Nodes.
    `start_cache()` once the CRDs are served; an async context manager."""

    def __init__(self, url: str, kubeconfig_path: Path, ca_pem: bytes):
        self.url, self.kubeconfig_path, self.ca_pem = url, Path(kubeconfig_path), ca_pem
        self.kube = Kube(str(kubeconfig_path))
        self._cache: dict[str, dict[tuple[str, str], dict[str, Any]]] = {r: {} for r in WATCHED}
        self._tasks: list[asyncio.Task] = []

    async def __aenter__(self) -> "RealApi":
        await self.kube.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> None:
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)
        await self.kube.__aexit__()

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        return await self.kube.create(collection_path(obj), obj)

    async def create_or_keep(self, obj: dict[str, Any]) -> None:
        """Create; an object that already exists is left as it is."""
        try:
            await self.create(obj)
        except KubeError as exc:
            if exc.status != 409:
                raise

    async def start_cache(self, timeout: float = 60) -> None:
        synced = []
        for resource, path in WATCHED.items():
            event = asyncio.Event()
            synced.append(event)
            self._tasks.append(asyncio.create_task(
                list_and_watch(self.kube, path, self._resync(resource), self._event(resource), synced=event),
                name=f"lab cache {resource}"))
        await asyncio.wait_for(asyncio.gather(*(e.wait() for e in synced)), timeout)

    def _resync(self, resource: str):
        def on_resync(items: list[dict[str, Any]], listed_at: float) -> None:
            self._cache[resource] = {_key(o): o for o in items}
        return on_resync

    def _event(self, resource: str):
        def on_event(etype: str, obj: dict[str, Any]) -> None:
            if etype == "DELETED":
                self._cache[resource].pop(_key(obj), None)
            else:
                self._cache[resource][_key(obj)] = obj
        return on_event

    # what the in-memory server's store answers, from the cache
    def list(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        items = self._cache[resource].values()
        return sorted((o for o in items if namespace is None or _key(o)[0] == namespace),
                      key=lambda o: o["metadata"]["name"])

    def get(self, resource: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        return self._cache[resource].get((namespace, name))


def _key(obj: dict[str, Any]) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return meta.get("namespace") or "", meta.get("name") or ""
