"""A pod's own ServiceAccount token on the real control plane: the TokenRequest a node may make (bound to the
pod) and the kubeconfig that carries it to the pod's process (there is no in-cluster config here).

Pure but for write_kubeconfig, which writes one file (mode 0600).
"""
from __future__ import annotations

import base64
from pathlib import Path
from typing import Any

import yaml

TOKEN_SECONDS = 3607  # what a projected token asks for by default, as the Job manifests do


def account(pod: dict[str, Any]) -> str:
    return pod["spec"].get("serviceAccountName") or "default"


def token_request(pod: dict[str, Any]) -> dict[str, Any]:
    """A TokenRequest bound to the pod, for the audiences its projected token sources name (none: the API
    server's own)."""
    meta, spec = pod["metadata"], pod["spec"]
    audiences = sorted({s["serviceAccountToken"]["audience"] for v in spec.get("volumes") or []
                        for s in (v.get("projected") or {}).get("sources") or []
                        if (s.get("serviceAccountToken") or {}).get("audience")})
    return {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {
        "audiences": audiences or None, "expirationSeconds": TOKEN_SECONDS,
        "boundObjectRef": {"apiVersion": "v1", "kind": "Pod", "name": meta["name"], "uid": meta["uid"]}}}


def cluster_of(kubeconfig: Path) -> tuple[str, str]:
    """The API server's address and CA (base64) of a kubeconfig's current context."""
    doc = yaml.safe_load(kubeconfig.read_text())
    context = next(c["context"] for c in doc["contexts"] if c["name"] == doc["current-context"])
    cluster = next(c["cluster"] for c in doc["clusters"] if c["name"] == context["cluster"])
    ca = cluster.get("certificate-authority-data")
    if ca is None and cluster.get("certificate-authority"):
        ca = base64.b64encode(Path(cluster["certificate-authority"]).read_bytes()).decode()
    return cluster["server"], ca or ""


def write_kubeconfig(path: Path, node_kubeconfig: Path, token: str, namespace: str) -> Path:
    """A kubeconfig with `token`, for the API server (and its CA) that `node_kubeconfig` names."""
    server, ca_data = cluster_of(node_kubeconfig)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(yaml.safe_dump({
        "apiVersion": "v1", "kind": "Config", "current-context": "pod",
        "clusters": [{"name": "pod", "cluster": {"server": server, "certificate-authority-data": ca_data}}],
        "users": [{"name": "pod", "user": {"token": token}}],
        "contexts": [{"name": "pod", "context": {"cluster": "pod", "user": "pod", "namespace": namespace}}]}))
    return path
