"""Checks on a real API server (RealLabCluster's `lab.api.kube`), for the waits of tests/k8s."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

from homecluster_lab.node.kube import KubeError

SLOTS = "/apis/infra.homecluster.dev/v2alpha1/nodes"


async def slot_gone(kube: Any, slot: str) -> bool:
    """True once the slot `slot` reads 404 (deleted, not left Terminating); False while it is there."""
    try:
        await kube.get(f"{SLOTS}/{slot}")
    except KubeError as exc:
        return exc.status == 404
    return False


async def default_account(kube: Any, namespace: str = "default") -> bool:
    """True once kube-controller-manager has made the namespace's `default` ServiceAccount: it comes a moment
    after the namespace, and a pod created before it is refused ("serviceaccount \"default\" not found")."""
    try:
        return bool(await kube.get(f"/api/v1/namespaces/{namespace}/serviceaccounts/default"))
    except KubeError as exc:
        if exc.status == 404:
            return False
        raise


def claims_and_log(lab: Any) -> Callable[[], str]:
    """A wait's detail (support.waits.until) on a lab with an operator: its claims with their status, and the
    operator's log tail, as they are when the wait gives up."""
    def detail() -> str:
        claims = [(c["metadata"]["name"], c.get("status")) for c in lab.claims()]
        return f"claims: {claims}\noperator log:\n{lab.operator.log_tail() if lab.operator else ''}"
    return detail
