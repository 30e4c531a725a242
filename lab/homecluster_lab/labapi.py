"""The API server as the lab drives it: what LabCluster, the demo and the glance call on `lab.api`.

Two things provide it, and neither imports this file (they match it by shape):
- the in-memory server, apiserver.LabAPIServer: reads answer from its store, creates go through its pipeline;
- the real control plane's handle, k8s.realapi.RealApi: creates go to kube-apiserver as the admin, reads answer
  from a cache that a list-then-watch per resource keeps.
Reads are synchronous (the lab's readers are), `resource` is a plural as `kubectl get` takes it, with its group
for the lab's own kinds ("nodeclaims.infra.homecluster.dev"). tests/lab/test_labapi.py holds both to it.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol


class LabApi(Protocol):
    url: str  # the server's address, as a kubeconfig names it
    kubeconfig_path: Path  # an admin's kubeconfig for it
    ca_pem: bytes | None  # the CA its serving certificate chains to (None: plain HTTP)

    def get(self, resource: str, name: str, namespace: str = "") -> dict[str, Any] | None:
        """The object, or None."""

    def list(self, resource: str, namespace: str | None = None) -> list[dict[str, Any]]:
        """Every object of the resource (in `namespace`, when given)."""

    async def create(self, obj: dict[str, Any]) -> dict[str, Any]:
        """Create `obj` through the server's admission; the object as stored."""
