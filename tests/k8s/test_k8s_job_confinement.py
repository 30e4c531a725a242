"""The lifecycle Jobs' token confined to the pool, on the real API server (issue 23 item 11).

config/rbac lets `homecluster-job` patch any Node; config/policy's ValidatingAdmissionPolicy admits its Node
writes only for a cordon of a Node the operator marked as a slot's machine (label
infra.homecluster.dev/machine-of), and nobody but the operator may set that label. Here, with real tokens of
both ServiceAccounts (TokenRequest) through kube-apiserver's authorizer and admission chain:
- the Job cordons and uncordons the pool's Node and evicts the pod on it (its own work);
- it cannot cordon a Node outside the pool, mark one to admit itself, or change a pool Node's labels,
  taints or other annotations;
- nobody else (not even an admin) can set the label; the operator can.
Evictions are not confined by the policy (an Eviction carries none of its pod's fields): docs/security.md.
"""
from __future__ import annotations

import ssl

import pytest
import pytest_asyncio
from k8s_objects import REPO, apply_rbac, kustomize
from k8s_rest import Rest
from k8s_wait import until

from homecluster_lab.k8s.controlplane import RealControlPlane

pytestmark = pytest.mark.asyncio(loop_scope="module")
NS = "homecluster-system"
MARK = "infra.homecluster.dev/machine-of"
CORDONED_BY = "infra.homecluster.dev/cordoned-by"
POLICY_PATHS = {
    "ValidatingAdmissionPolicy": "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicies",
    "ValidatingAdmissionPolicyBinding": "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings",
}
MERGE = "application/merge-patch+json"


async def token(rest: Rest, account: str) -> str:
    status, body = await rest.request("POST", f"/api/v1/namespaces/{NS}/serviceaccounts/{account}/token", {
        "apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {"expirationSeconds": 3600}})
    assert status == 201, body
    return body["status"]["token"]


def node(name: str, labels: dict[str, str]) -> dict:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels},
            "spec": {"providerID": f"k3s://{name}"}}


def pod(name: str, on: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "default"},
            "spec": {"nodeName": on, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "registry.example/web:1"}]}}


def cordon(on: bool) -> dict:
    return {"metadata": {"annotations": {CORDONED_BY: "homecluster" if on else None}}, "spec": {"unschedulable": on}}


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def tokens(real_k8s: RealControlPlane, real_rest: Rest):
    """(job, operator) REST clients with their ServiceAccounts' tokens; Nodes pool-1 (marked) and outside-1."""
    status, body = await real_rest.request("POST", "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    assert status == 201, body
    await apply_rbac(real_rest)
    for obj in kustomize(REPO / "config" / "policy"):
        status, body = await real_rest.request("POST", POLICY_PATHS[obj["kind"]], obj)
        assert status == 201, f"{obj['kind']}/{obj['metadata']['name']}: {body}"
    # trust the lab's CA and present no client certificate: the token alone says who asks
    # (ssl_context() carries the admin's certificate, which kube-apiserver would authenticate first)
    tls = ssl.create_default_context(cafile=str(real_k8s.pki.ca_cert))
    job = Rest(real_k8s.url, ssl_context=tls, token=await token(real_rest, "homecluster-job"))
    operator = Rest(real_k8s.url, ssl_context=tls, token=await token(real_rest, "homecluster-controller"))
    # the operator marks pool-1 (the policy admits it; an admin could not), outside-1 stays unmarked
    for name in ("pool-1", "outside-1"):
        status, body = await real_rest.request("POST", "/api/v1/nodes", node(name, {"kubernetes.io/os": "linux"}))
        assert status == 201, body

        async def created(name: str = name) -> bool:  # until the controller-manager made the default ServiceAccount
            status, body = await real_rest.request("POST", "/api/v1/namespaces/default/pods", pod(f"on-{name}", name))
            assert status in (201, 403), body
            return status == 201
        await until(created, f"a pod bound to {name}")

    status, body = await operator.request("PATCH", "/api/v1/nodes/pool-1", {"metadata": {"labels": {MARK: "w1"}}},
                                          MERGE)
    assert status == 200, body.get("message")

    async def refused() -> bool:
        status, _ = await job.request("PATCH", "/api/v1/nodes/outside-1", cordon(True), MERGE)
        assert status in (200, 403)
        if status == 200:  # the policy not served yet: undo, look again
            await real_rest.request("PATCH", "/api/v1/nodes/outside-1", cordon(False), MERGE)
        return status == 403
    await until(refused, "the Job's cordon of outside-1 to be refused", timeout=30)
    yield job, operator
    await job.close()
    await operator.close()


async def test_the_job_cordons_and_uncordons_a_node_of_the_pool(tokens) -> None:
    job, _ = tokens
    for on in (True, False):
        status, body = await job.request("PATCH", "/api/v1/nodes/pool-1", cordon(on), MERGE)
        assert status == 200, body
        assert bool(body["spec"].get("unschedulable")) is on


async def test_the_job_evicts_the_pod_on_its_node(tokens, real_rest: Rest) -> None:
    job, _ = tokens
    status, body = await job.request("POST", "/api/v1/namespaces/default/pods/on-pool-1/eviction", {
        "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "on-pool-1", "namespace": "default"}})
    assert status == 201, body


@pytest.mark.parametrize("what,path,patch,words", [
    ("cordon a Node outside the pool", "outside-1", cordon(True), "is not in the pool"),
    ("mark a Node to admit itself", "outside-1", {"metadata": {"labels": {MARK: "w1"}}}, "is not in the pool"),
    ("change a pool Node's labels", "pool-1", {"metadata": {"labels": {"kubernetes.io/os": "plan9"}}},
     "may not change a Node's labels"),
    ("unmark a pool Node", "pool-1", {"metadata": {"labels": {MARK: None}}}, "may not change a Node's labels"),
    ("taint a pool Node", "pool-1", {"spec": {"taints": [{"key": "x", "effect": "NoExecute"}]}},
     "may change spec.unschedulable only"),
    ("annotate a pool Node", "pool-1", {"metadata": {"annotations": {"x": "y"}}},
     "no Node annotation but infra.homecluster.dev/cordoned-by"),
])
async def test_the_job_cannot(tokens, what, path, patch, words) -> None:
    job, _ = tokens
    status, body = await job.request("PATCH", f"/api/v1/nodes/{path}", patch, MERGE)
    assert status == 403, f"the Job could {what}: {status} {body}"
    assert words in body["message"] and "ValidatingAdmissionPolicy" in body["message"], body["message"]


async def test_the_job_cannot_delete_a_node(tokens) -> None:
    job, _ = tokens
    status, body = await job.request("DELETE", "/api/v1/nodes/outside-1")
    assert status == 403, body  # RBAC already: no delete


async def test_only_the_operator_marks_a_machine(tokens, real_rest: Rest) -> None:
    _, operator = tokens

    async def refused() -> dict | None:  # created with the other policy, perhaps served a moment later
        status, body = await real_rest.request("PATCH", "/api/v1/nodes/outside-1",
                                               {"metadata": {"labels": {MARK: "x"}}}, MERGE)
        if status == 200:
            await operator.request("PATCH", "/api/v1/nodes/outside-1", {"metadata": {"labels": {MARK: None}}}, MERGE)
            return None
        return body
    body = await until(refused, "an admin's mark on outside-1 to be refused", timeout=30)
    assert body["code"] == 403 and "only the homecluster operator" in body["message"], body
    status, body = await real_rest.request("POST", "/api/v1/nodes", node("forged-1", {MARK: "w9"}))
    assert status == 403, body  # a kubelet registering its Node with the mark is refused too
    status, body = await operator.request("PATCH", "/api/v1/nodes/outside-1", {"metadata": {"labels": {MARK: "w2"}}},
                                          MERGE)
    assert status == 200, body
