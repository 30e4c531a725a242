"""config/rbac on the real RBAC authorizer, both ways, and our own reading of it (tests/install/rbac_audit,
which the install and integration tests judge the lab's request logs with) against the real one.

For each of our two ServiceAccounts, every grant its rules make must be allowed by kube-apiserver, and a
list of requests it must never be able to make must be refused; for every request in both lists,
rbac_audit.allows must say what the real authorizer says (SubjectAccessReview, with the groups a
ServiceAccount token carries).
"""
from __future__ import annotations

import pytest
import pytest_asyncio
from k8s_objects import apply_rbac
from k8s_rest import Rest

from rbac_audit import JOB_SA, MANAGER_SA, Request, allows, rules_for_service_account


pytestmark = pytest.mark.asyncio(loop_scope="module")
NS = "homecluster-system"
G = "infra.homecluster.dev"

# what each account must not do (docs/security.md): no Secrets, nothing it does not call
NEVER = {
    MANAGER_SA: [Request("get", "", "secrets", namespace=NS), Request("list", "", "secrets"),
                 Request("get", G, "nodeclaims"), Request("update", G, "nodes"), Request("delete", G, "nodes"),
                 Request("delete", "", "nodes"), Request("create", "", "pods", namespace=NS),
                 Request("create", "", "pods", "eviction", namespace="apps"),
                 Request("escalate", "rbac.authorization.k8s.io", "clusterroles")],
    JOB_SA: [Request("get", "", "secrets", namespace=NS), Request("delete", "", "nodes"),
             Request("delete", "", "pods", namespace="apps"), Request("create", G, "nodeclaims"),
             Request("patch", G, "nodeclaims", "status"), Request("create", "batch", "jobs", namespace=NS)],
}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def rbac_objects(real_rest: Rest) -> list[dict]:
    status, body = await real_rest.request("POST", "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    assert status == 201, body
    return await apply_rbac(real_rest)


def _granted(rules) -> list[Request]:
    """One request per grant of each rule, in the rule's namespace (cluster-wide for a ClusterRoleBinding)."""
    out: list[Request] = []
    for rule in rules:
        for group in rule.api_groups:
            for resource in rule.resources:
                res, _, sub = resource.partition("/")
                for verb in rule.verbs:
                    name = rule.resource_names[0] if rule.resource_names else ""  # a grant by name: for that name
                    req = Request(verb, group, res, sub, namespace=rule.namespace or "", name=name)
                    if req not in out:
                        out.append(req)
    return out


async def _real_verdict(rest: Rest, account: tuple[str, str], req: Request) -> bool:
    name, namespace = account
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
        "user": f"system:serviceaccount:{namespace}:{name}",
        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"],
        "resourceAttributes": {"verb": req.verb, "group": req.group, "resource": req.resource,
                               "subresource": req.subresource, "namespace": req.namespace, "name": req.name}}}
    status, body = await rest.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    assert status == 201, body
    return bool(body["status"].get("allowed"))


@pytest.mark.parametrize("account", [MANAGER_SA, JOB_SA], ids=["homecluster-controller", "homecluster-job"])
async def test_rbac_both_ways_on_the_real_authorizer(rbac_objects, real_rest: Rest, account) -> None:
    rules = rules_for_service_account(rbac_objects, *account)
    granted = _granted(rules)
    assert granted, f"{account}: no grants found in config/rbac"
    wrong = []
    for req in granted + NEVER[account]:
        real = await _real_verdict(real_rest, account, req)
        ours = any(allows(rule, req) for rule in rules)
        expected = req not in NEVER[account]
        if real != expected or ours != real:
            wrong.append(f"{req}: kube-apiserver {'allows' if real else 'refuses'}, rbac_audit "
                         f"{'allows' if ours else 'refuses'}, expected {'allowed' if expected else 'refused'}")
    assert not wrong, f"{account[0]}:\n" + "\n".join(wrong)
