"""The Helm chart with `jobNamespace` on the real RBAC authorizer: the operator may do in the Jobs' namespace
everything the Job lifecycle and the boot monitor call there (lifecycle/jobpods.py lists pods and Events where
the Jobs run), and the Jobs' own ServiceAccount lives there with its cordon-and-drain rights.

Before the chart had the value, docs/install.md's Role granted only Jobs in that namespace, and the boot
monitor's reads were refused (403).
"""
from __future__ import annotations

import pytest
import pytest_asyncio
from k8s_objects import _RBAC_PATHS
from k8s_rest import Rest

from helm_chart import NAMESPACE, parse, template
from rbac_audit import Request


pytestmark = pytest.mark.asyncio(loop_scope="module")
JOBS_NS = "homecluster-jobs"
OPERATOR = ("homecluster-controller", NAMESPACE)
JOB = ("homecluster-job", JOBS_NS)


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def chart_rbac(real_rest: Rest) -> list[dict]:
    for ns in (NAMESPACE, JOBS_NS):
        status, body = await real_rest.request("POST", "/api/v1/namespaces", {
            "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
        assert status == 201, body
    objects = [o for o in parse(template(f"jobNamespace={JOBS_NS}")) if o["kind"] in _RBAC_PATHS]
    for obj in objects:
        path = _RBAC_PATHS[obj["kind"]].format(ns=obj["metadata"].get("namespace", ""))
        status, body = await real_rest.request("POST", path, obj)
        assert status == 201, f"{obj['kind']}/{obj['metadata']['name']}: {body}"
    return objects


async def allowed(rest: Rest, account: tuple[str, str], req: Request) -> bool:
    name, namespace = account
    review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
        "user": f"system:serviceaccount:{namespace}:{name}",
        "groups": ["system:serviceaccounts", f"system:serviceaccounts:{namespace}", "system:authenticated"],
        "resourceAttributes": {"verb": req.verb, "group": req.group, "resource": req.resource,
                               "subresource": req.subresource, "namespace": req.namespace}}}
    status, body = await rest.request("POST", "/apis/authorization.k8s.io/v1/subjectaccessreviews", review)
    assert status == 201, body
    return bool(body["status"].get("allowed"))


async def test_the_operator_may_run_and_watch_jobs_in_the_jobs_namespace(chart_rbac, real_rest: Rest):
    must = [Request(verb, "batch", "jobs", namespace=JOBS_NS) for verb in ("get", "list", "watch", "create", "delete")]
    must += [Request("list", "", "pods", namespace=JOBS_NS), Request("list", "", "events", namespace=JOBS_NS)]
    never = [Request("create", "batch", "jobs", namespace=NAMESPACE),  # nothing left in the operator's namespace
             Request("get", "", "secrets", namespace=JOBS_NS), Request("create", "", "pods", namespace=JOBS_NS)]
    wrong = [f"{r} should be allowed" for r in must if not await allowed(real_rest, OPERATOR, r)]
    wrong += [f"{r} should be refused" for r in never if await allowed(real_rest, OPERATOR, r)]
    assert not wrong, "\n".join(wrong)


async def test_the_jobs_account_lives_in_the_jobs_namespace_with_its_drain_rights(chart_rbac, real_rest: Rest):
    [account] = [o for o in chart_rbac if o["kind"] == "ServiceAccount" and o["metadata"]["name"] == JOB[0]]
    assert account["metadata"]["namespace"] == JOBS_NS
    for req in (Request("patch", "", "nodes"), Request("list", "", "pods"),
                Request("create", "", "pods", "eviction", namespace="default")):
        assert await allowed(real_rest, JOB, req), req
    assert not await allowed(real_rest, ("homecluster-job", NAMESPACE), Request("patch", "", "nodes"))
