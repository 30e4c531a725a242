"""operator/admission.py's four routes, driven as kube-apiserver drives them: an AdmissionReview's `request` in,
the `response` out (the TLS server around them is tests/operator/test_webhook_server.py). Claims, Groups, slots
and evictions, on CREATE, UPDATE and DELETE; each answer is checked whole (allowed, code, message, field), and a
request that is no review of an object is a 400. Evictions read the pod from the lab's real API server."""
from __future__ import annotations

import pytest
from support import objects

from homecluster import names
from homecluster.kube import client as kube
from homecluster.kube.cache import CLAIMS, NODES, SLOTS
from homecluster.kube.connection import Connection
from homecluster.kube.store import Store
from homecluster.lifecycle.context import Context
from homecluster.operator.admission import (CLAIM_WEBHOOK, EVICTION_WEBHOOK, GROUP_WEBHOOK, SLOT_WEBHOOK, routes)
from homecluster.operator.controller import Controller
from homecluster.operator.webhookserver import HTTPError


def claim(name: str, slot: str = "worker-01", phase: str | None = None) -> dict:
    """A claim as the API server holds it: support.objects' claim with its uid and resourceVersion."""
    return objects.claim(name, slot, phase, metadata={"uid": f"uid-{name}", "resourceVersion": "1"})


def slot(name: str, rv: str = "1", **spec: str) -> dict:
    return {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node",
            "metadata": {"name": name, "resourceVersion": rv, "creationTimestamp": "2026-01-01T00:00:00Z"},
            "spec": {"groupRef": "workers", **spec}}


def controller(client=None) -> Controller:
    c = Controller(Context(client=client, store=Store()))  # type: ignore[arg-type]
    c.ctx.store.apply(CLAIMS, claim("worker-01-a", phase="booting"))
    c.ctx.store.apply(SLOTS, slot("worker-01", providerID="k3s://worker-01", nodeName="worker-01"))
    return c


def request(obj: object, operation: object = "CREATE", **more: object) -> dict:
    return {"uid": "r-1", "operation": operation, "object": obj, **more}


@pytest.fixture
def route():
    served = routes(controller())
    return lambda webhook: served[f"/{webhook}"]


# ---- claims -----------------------------------------------------------------------------------------------
SECOND = ('spec.slotRef: Forbidden: slot "worker-01" already has the live NodeClaim "worker-01-a" in phase '
          '"booting": one live claim per slot')


async def test_a_second_live_claim_is_refused_and_one_on_a_free_slot_allowed(route):
    answer = await route(CLAIM_WEBHOOK)(request(claim("worker-01-b")))
    assert answer == {"allowed": False, "status": {
        "metadata": {}, "status": "Failure", "code": 403, "reason": "Forbidden", "message": SECOND,
        "details": {"causes": [{"field": "spec.slotRef", "reason": "FieldValueForbidden", "message": SECOND.split(": Forbidden: ", 1)[1]}]}}}
    assert await route(CLAIM_WEBHOOK)(request(claim("worker-02-a", slot="worker-02"))) == {"allowed": True}


async def test_a_claim_update_is_judged_as_an_update(route):
    """The operation is passed on: the live claim's own UPDATE is allowed, a CREATE of the same body is not."""
    live = claim("worker-01-a", phase="booting")
    assert await route(CLAIM_WEBHOOK)(request(live, "UPDATE")) == {"allowed": True}
    assert (await route(CLAIM_WEBHOOK)(request(claim("worker-01-b"), "CREATE")))["allowed"] is False


@pytest.mark.parametrize("operation", [None, 7, ["CREATE"]])
async def test_a_claim_review_without_a_string_operation_is_not_taken_for_a_create(route, operation):
    assert await route(CLAIM_WEBHOOK)(request(claim("worker-01-b"), operation)) == {"allowed": True}


@pytest.mark.parametrize("spec", [None, "worker-01", {"slotRef": 5}, {"slotRef": ["worker-01"]}, {}])
async def test_a_claim_with_an_odd_spec_is_answered_not_crashed(route, spec):
    body = {**claim("worker-01-b"), "spec": spec}
    answer = await route(CLAIM_WEBHOOK)(request(body))
    assert set(answer) <= {"allowed", "status"} and answer.get("status", {}).get("code", 403) == 403


# ---- Groups -----------------------------------------------------------------------------------------------
async def test_a_group_with_two_refused_choices_names_both_fields_in_one_message(route):
    group = {"metadata": {"name": "pool-a"}, "spec": {"jobs": {"image": "evil/runner:1",
                                                              "serviceAccountName": "homecluster-operator"}}}
    answer = await route(GROUP_WEBHOOK)(request(group, "UPDATE"))
    assert answer["allowed"] is False and answer["status"]["code"] == 403 and set(answer["status"]) == {"message", "code"}
    image, account = answer["status"]["message"].split("; spec.jobs.serviceAccountName: Forbidden: ")
    assert image.startswith('spec.jobs.image: Forbidden: image "evil/runner:1" is not one the operator runs')
    assert account.startswith('ServiceAccount "homecluster-operator" is not one the operator runs lifecycle Jobs')


@pytest.mark.parametrize("spec", [None, {}, {"jobs": None}, {"jobs": "evil/runner:1"}, {"jobs": {}}, "x"])
async def test_a_group_without_job_choices_is_allowed(route, spec):
    assert await route(GROUP_WEBHOOK)(request({"metadata": {"name": "pool-a"}, "spec": spec})) == {"allowed": True}


# ---- slots ------------------------------------------------------------------------------------------------
DUPLICATE = ('slot "worker-02": spec.providerID \'k3s://worker-01\' is already declared by slot "worker-01"; two '
             "slots may not share a machine: fix this slot's spec.providerID (or delete one of the two)")


async def test_a_slot_declaring_another_slots_machine_is_refused_naming_the_field(route):
    answer = await route(SLOT_WEBHOOK)(request(slot("worker-02", providerID="k3s://worker-01")))
    message = f"spec.providerID: Forbidden: {DUPLICATE}"
    assert answer == {"allowed": False, "status": {
        "metadata": {}, "status": "Failure", "code": 403, "reason": "Forbidden", "message": message,
        "details": {"causes": [{"field": "spec.providerID", "reason": "FieldValueForbidden", "message": DUPLICATE}]}}}


async def test_a_slot_declaring_another_slots_node_name_is_refused_on_that_field(route):
    answer = await route(SLOT_WEBHOOK)(request(slot("worker-02", nodeName="worker-01")))
    assert answer["allowed"] is False
    assert answer["status"]["message"].startswith('spec.nodeName: Forbidden: slot "worker-02": spec.nodeName')
    assert answer["status"]["details"]["causes"][0]["field"] == "spec.nodeName"


async def test_a_slot_update_is_refused_only_when_it_changes_its_declarations(route):
    old = slot("worker-02", providerID="k3s://worker-01")  # admitted before the other slot existed
    new = slot("worker-02", "2", providerID="k3s://worker-01")
    assert await route(SLOT_WEBHOOK)(request(new, "UPDATE", oldObject=old)) == {"allowed": True}
    moved = slot("worker-02", "2", providerID="k3s://worker-02")
    changed = await route(SLOT_WEBHOOK)(request(new, "UPDATE", oldObject=moved))
    assert changed["allowed"] is False and changed["status"]["message"] == f"spec.providerID: Forbidden: {DUPLICATE}"
    # an oldObject that is no object is no old slot: the UPDATE is judged on the new one alone
    assert (await route(SLOT_WEBHOOK)(request(new, "UPDATE", oldObject="x")))["allowed"] is False


@pytest.mark.parametrize("operation", ["DELETE", None, 3])
async def test_a_slot_review_that_is_no_create_or_update_is_allowed(route, operation):
    body = slot("worker-02", providerID="k3s://worker-01")
    assert await route(SLOT_WEBHOOK)(request(body, operation)) == {"allowed": True}


async def test_a_free_slot_is_allowed(route):
    assert await route(SLOT_WEBHOOK)(request(slot("worker-02", providerID="k3s://worker-02"))) == {"allowed": True}


# ---- malformed reviews ------------------------------------------------------------------------------------
@pytest.mark.parametrize("webhook", [CLAIM_WEBHOOK, GROUP_WEBHOOK, SLOT_WEBHOOK])
@pytest.mark.parametrize("obj", [None, "a claim", ["x"], 3])
async def test_a_review_without_an_object_is_a_400_naming_request_object(route, webhook, obj):
    with pytest.raises(HTTPError) as raised:
        await route(webhook)(request(obj))
    assert (raised.value.code, str(raised.value)) == (400, "not an AdmissionReview of an object: request.object "
                                                          "is missing")


async def test_a_review_with_no_object_key_is_a_400(route):
    with pytest.raises(HTTPError):
        await route(SLOT_WEBHOOK)({"uid": "r-1", "operation": "CREATE"})


# ---- evictions --------------------------------------------------------------------------------------------
@pytest.fixture
async def evictions(lab):
    client = kube.KubeClient(Connection(server=lab.url))
    c = controller(client)
    await lab.create({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "apps"}})
    for name, labels in (("worker-01", {names.LABEL_MACHINE_OF: "worker-01"}), ("infra-01", {})):
        c.ctx.store.apply(NODES, {"apiVersion": "v1", "kind": "Node",
                                  "metadata": {"name": name, "resourceVersion": "1", "labels": labels}})
    for pod, node in (("on-pool", "worker-01"), ("elsewhere", "infra-01"), ("unbound", "")):
        await lab.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": pod, "namespace": "apps"},
                          "spec": {"containers": [{"name": "c", "image": "busybox"}],
                                   **({"nodeName": node} if node else {})}})
    yield routes(c)[f"/{EVICTION_WEBHOOK}"]
    await client.close()


def eviction(name: object, namespace: object = "apps") -> dict:
    return {"uid": "e-1", "operation": "CREATE", "namespace": namespace, "name": name,
            "object": {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name}}}


def refused(code: int, reason: str, message: str) -> dict:
    return {"allowed": False, "status": {"metadata": {}, "status": "Failure", "code": code, "reason": reason,
                                         "message": message}}


async def test_an_eviction_of_a_pod_on_a_pool_node_is_allowed(evictions):
    assert await evictions(eviction("on-pool")) == {"allowed": True}


async def test_an_eviction_of_a_pod_elsewhere_is_refused_naming_the_label(evictions):
    assert await evictions(eviction("elsewhere")) == refused(
        403, "Forbidden", f"homecluster-job may evict only pods on the pool's Nodes (label {names.LABEL_MACHINE_OF}); "
                          "pod apps/elsewhere runs on Node infra-01, which is not in the pool")


async def test_an_eviction_of_an_unbound_pod_is_refused(evictions):
    assert await evictions(eviction("unbound")) == refused(
        403, "Forbidden", "homecluster-job may evict only pods on the pool's Nodes; pod apps/unbound is bound to "
                          "no Node")


async def test_an_eviction_of_a_pod_that_is_gone_is_a_404(evictions):
    assert await evictions(eviction("gone")) == refused(404, "NotFound", "pod apps/gone not found")


@pytest.mark.parametrize("name, namespace", [(None, "apps"), ("on-pool", None), ("../x", "apps"), ("a", 5)])
async def test_an_eviction_review_without_a_pod_key_is_a_400_in_the_answer(evictions, name, namespace):
    assert await evictions(eviction(name, namespace)) == refused(
        400, "BadRequest", "not an eviction review: request.namespace and request.name must be a namespace and a "
                           "pod name")
