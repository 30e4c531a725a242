"""The kubeconfig the lab hands to kubectl, kopf and the Kubernetes clients. Pure text building + one write."""
from __future__ import annotations

import base64
from pathlib import Path

import yaml

CLUSTER, USER, CONTEXT = "homecluster-lab", "lab-admin", "homecluster-lab"
# Not a secret: the lab accepts any token. Clients still send one, so the auth path is exercised.
TOKEN = "homecluster-lab-token"


def render(url: str, ca_pem: bytes | None = None, namespace: str = "default") -> str:
    cluster: dict = {"server": url}
    if ca_pem:
        cluster["certificate-authority-data"] = base64.b64encode(ca_pem).decode()
    doc = {
        "apiVersion": "v1", "kind": "Config", "preferences": {},
        "clusters": [{"name": CLUSTER, "cluster": cluster}],
        "users": [{"name": USER, "user": {"token": TOKEN}}],
        "contexts": [{"name": CONTEXT, "context": {"cluster": CLUSTER, "user": USER, "namespace": namespace}}],
        "current-context": CONTEXT,
    }
    return yaml.safe_dump(doc, sort_keys=False)


def write(path: Path, url: str, ca_pem: bytes | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(render(url, ca_pem))
    return path
