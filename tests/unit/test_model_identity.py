"""model.identity's admission decision: a slot write is refused when the slot would be the second to declare
or to find a machine; the slots that exist keep theirs (issue 23 item 1). Pure: no server involved."""
from __future__ import annotations

import pytest

from homecluster.kube.cache import Cache
from homecluster.model.identity import admission_field, admission_refusal


def slot(name: str, created: str = "2026-01-01T00:00:00Z", **spec: str) -> dict:
    return {"metadata": {"name": name, "creationTimestamp": created}, "spec": {"groupRef": "workers", **spec}}


@pytest.fixture
def cache() -> Cache:
    c = Cache()
    c.replace("nodes", [{"metadata": {"name": "worker-01"}, "spec": {"providerID": "k3s://worker-01"}}])
    return c


def test_a_new_slot_finding_an_existing_slots_node_is_refused_naming_both(cache):
    existing = [slot("worker-01")]  # finds worker-01 by its name
    refusal = admission_refusal("CREATE", slot("a", "2020-01-01T00:00:00Z", providerID="k3s://worker-01"),
                                None, existing, cache)
    # older creationTimestamp or not: the slot being written comes after every slot that exists
    assert (refusal.reason, refusal.keeper, admission_field(refusal)) == ("Conflict", "worker-01", "spec.providerID")
    assert admission_refusal("CREATE", slot("b", providerID="k3s://elsewhere"), None, existing, cache) is None


@pytest.mark.parametrize("spec,reason,field", [
    ({"providerID": "homecluster://worker-01", "nodeName": "x"}, "DuplicateProviderID", "spec.providerID"),
    ({"nodeName": "worker-01", "providerID": "k3s://x"}, "DuplicateNodeName", "spec.nodeName"),
])
def test_a_new_slot_declaring_an_existing_slots_machine_is_refused(spec, reason, field):
    refusal = admission_refusal("CREATE", slot("copy", **spec), None, [slot("worker-01")], Cache())
    assert (refusal.reason, admission_field(refusal)) == (reason, field)


def test_an_update_is_refused_only_when_it_changes_what_the_slot_declares(cache):
    keeper, later = slot("worker-01"), slot("a-later", "2026-02-01T00:00:00Z", providerID="k3s://worker-01")
    slots = [keeper, later]  # a conflict admission could not see (the Node registered after both were written)
    relabel = {**later, "metadata": {**later["metadata"], "labels": {"x": "y"}}}
    assert admission_refusal("UPDATE", relabel, later, slots, cache) is None  # the refused one may be edited
    assert admission_refusal("UPDATE", keeper, keeper, slots, cache) is None  # and the keeper keeps its Node
    moved = slot("fine", providerID="k3s://worker-01")
    assert admission_refusal("UPDATE", moved, slot("fine", providerID="k3s://fine"), [keeper], cache).reason \
        == "Conflict"


@pytest.mark.parametrize("operation,obj", [("DELETE", slot("x", providerID="k3s://worker-01")),
                                           ("CREATE", {"metadata": {"generateName": "x-"}, "spec": {}})])
def test_deletes_and_unnamed_slots_are_not_judged(cache, operation, obj):
    assert admission_refusal(operation, obj, None, [slot("worker-01")], cache) is None
