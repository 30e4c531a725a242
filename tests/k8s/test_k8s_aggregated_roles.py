"""config/components/aggregated-roles on the real control plane: kube-controller-manager folds them into
Kubernetes' own `view` and `edit`, and real requests by users bound to those are allowed or refused.

alice is bound to `view`, bob to `edit` (ClusterRoleBindings: the kinds are cluster-scoped). Requests are
sent as them through the admin's impersonation (Impersonate-User), so kube-apiserver's authorizer judges
each one as theirs.
"""
from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest
from k8s_objects import API, REPO, install_crds, load_yaml, sample
from k8s_rest import Rest
from support.waits import until

pytestmark = pytest.mark.asyncio(loop_scope="module")
ROLES = REPO / "config" / "components" / "aggregated-roles" / "roles.yaml"
RBAC = "/apis/rbac.authorization.k8s.io/v1"


class As(Rest):
    """The admin's client, impersonating one user."""

    def __init__(self, admin: Rest, user: str, ssl_context) -> None:
        super().__init__(admin.url, ssl_context=ssl_context)
        self._headers = {"Impersonate-User": user}


def claim(name: str) -> dict:
    now = datetime.now(timezone.utc).replace(microsecond=0)
    return {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "NodeClaim", "metadata": {"name": name},
            "spec": {"slotRef": "worker-01", "requestedAt": now.isoformat().replace("+00:00", "Z"),
                     "deadlineAt": (now + timedelta(minutes=15)).isoformat().replace("+00:00", "Z")}}


async def bind(rest: Rest, user: str, role: str) -> None:
    status, body = await rest.request("POST", f"{RBAC}/clusterrolebindings", {
        "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": f"{user}-{role}"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user}]})
    assert status == 201, body


async def test_view_reads_the_pool_and_edit_claims(real_k8s, real_rest: Rest) -> None:
    await install_crds(real_rest)
    for role in load_yaml(ROLES):
        status, body = await real_rest.request("POST", f"{RBAC}/clusterroles", role)
        assert status == 201, body
    await bind(real_rest, "alice", "view")
    await bind(real_rest, "bob", "edit")
    group, slot = sample("infra_v2alpha1_group.yaml"), sample("infra_v2alpha1_node_ipmi.yaml")
    for obj, plural in ((group, "groups"), (slot, "nodes")):
        status, body = await real_rest.request("POST", f"{API}/{plural}", obj)
        assert status == 201, body
    alice, bob = As(real_rest, "alice", real_k8s.ssl_context()), As(real_rest, "bob", real_k8s.ssl_context())
    try:
        # the aggregation is kube-controller-manager's work: wait until `view` carries our rules
        async def view_has_ours():
            _, role = await real_rest.request("GET", f"{RBAC}/clusterroles/view")
            return any("infra.homecluster.dev" in r.get("apiGroups", []) for r in role.get("rules") or [])
        await until(view_has_ours, "the view ClusterRole to aggregate homecluster-view", 60)

        status, body = await alice.request("GET", f"{API}/nodes/{slot['metadata']['name']}")
        assert status == 200, body
        assert (await alice.request("GET", f"{API}/nodeclaims"))[0] == 200
        status, body = await alice.request("POST", f"{API}/nodeclaims", claim("by-alice"))
        assert status == 403, body
        assert (await alice.request("DELETE", f"{API}/nodes/{slot['metadata']['name']}"))[0] == 403

        async def edit_has_ours():
            _, role = await real_rest.request("GET", f"{RBAC}/clusterroles/edit")
            return any("infra.homecluster.dev" in r.get("apiGroups", []) for r in role.get("rules") or [])
        await until(edit_has_ours, "the edit ClusterRole to aggregate homecluster-edit", 60)
        status, body = await bob.request("POST", f"{API}/nodeclaims", claim("by-bob"))
        assert status == 201, body
        # the status is the operator's alone: edit may not write it
        status, body = await bob.request("PATCH", f"{API}/nodeclaims/by-bob/status", {"status": {"phase": "ready"}},
                                         content_type="application/merge-patch+json")
        assert status == 403, body
        assert (await bob.request("DELETE", f"{API}/nodeclaims/by-bob"))[0] == 200
    finally:
        await alice.close()
        await bob.close()
