"""model.identity (issue 23 item 1), pure, no server: a slot and a Node are matched by what the slot resolves
to, the first slot keeps the Node; and the admission decision, where the slot being written comes after every
slot that exists."""
from __future__ import annotations

import pytest

from homecluster.kube.cache import Cache
from homecluster.model.boundary import NodeSelector
from homecluster.model.identity import (admission_field, admission_refusal, candidates, claimants, declaring_slot,
                                        first_claimant, node_owner, resolved_node, slot_refusal,
                                        slots_with_anothers_machine)


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


# ---- resolution, the first claimant, the pool-wide answer --------------------------------------------------

def node(name: str, pid: str = "", cp: bool = False) -> dict:
    labels = {"node-role.kubernetes.io/control-plane": ""} if cp else {}
    return {"metadata": {"name": name, "labels": labels}, "spec": {"providerID": pid} if pid else {}}


def cache_with(*nodes: dict) -> Cache:
    c = Cache()
    c.replace("nodes", list(nodes))
    return c


def names(slots) -> list[str]:
    return [s["metadata"]["name"] for s in slots]


def test_a_slot_resolves_by_provider_id_before_its_node_name():
    c = cache_with(node("worker-01", "k3s://worker-01"), node("box", "k3s://box"))
    assert resolved_node(slot("worker-01"), c)["metadata"]["name"] == "worker-01"  # by name: no homecluster:// Node
    assert resolved_node(slot("worker-01", providerID="k3s://box"), c)["metadata"]["name"] == "box"
    assert resolved_node(slot("w", providerID="k3s://none", nodeName="none"), c) is None


def test_claimants_are_the_slots_that_find_the_node_first_first():
    c = cache_with(node("worker-01", "k3s://worker-01"), node("box", "k3s://box"))
    a = slot("worker-01", "2026-01-01T00:00:02Z")
    b = slot("b", "2026-01-01T00:00:01Z", providerID="k3s://worker-01")
    same_second = slot("a", "2026-01-01T00:00:02Z", nodeName="worker-01")
    elsewhere = slot("c", "2026-01-01T00:00:00Z", providerID="k3s://box", nodeName="worker-01")  # finds box
    slots = [a, b, same_second, elsewhere]
    assert names(claimants(node("worker-01", "k3s://worker-01"), slots, c)) == ["b", "a", "worker-01"]
    assert first_claimant(node("worker-01", "k3s://worker-01"), slots, c)["metadata"]["name"] == "b"
    assert first_claimant(None, slots, c) is None and claimants(node("gone"), slots, c) == []
    assert names(candidates(node("worker-01", "k3s://worker-01"), slots)) == ["worker-01", "b", "a", "c"]
    assert candidates(node("x"), [slot("y", providerID="k3s://x")]) == []  # a Node without providerID: by name only


def test_the_conflict_refusal_names_both_slots_how_each_found_the_node_and_what_to_fix():
    c = cache_with(node("worker-01", "k3s://worker-01"))
    a, b = slot("worker-01"), slot("b", "2026-01-02T00:00:00Z", providerID="k3s://worker-01")
    assert slot_refusal(a, [a, b], c) is None
    refusal = slot_refusal(b, [a, b], c)
    assert (refusal.reason, refusal.keeper, refusal.node) == ("Conflict", "worker-01", "worker-01")
    assert refusal.message == (
        'slot "b": Node "worker-01" (found by this slot\'s spec.providerID "k3s://worker-01") is already the machine '
        'of slot "worker-01", created first (found by its spec.nodeName "worker-01"); two slots may not share a '
        "machine, so this slot observes nothing and fires no Job: fix this slot's spec.providerID and "
        "spec.nodeName (or delete one of the two)")
    assert node_owner(node("worker-01", "k3s://worker-01"), [a, b], c)["metadata"]["name"] == "worker-01"


def test_a_control_plane_node_is_refused_to_every_slot_and_owned_by_none():
    cp = node("cp", "k3s://cp", cp=True)
    c = cache_with(cp)
    a, b = slot("cp"), slot("b", "2026-01-02T00:00:00Z", providerID="k3s://cp")
    assert [slot_refusal(s, [a, b], c).reason for s in (a, b)] == ["ControlPlaneNode", "ControlPlaneNode"]
    assert node_owner(cp, [a, b], c) is None and slots_with_anothers_machine([a, b], c) == set()


def test_the_selector_refuses_the_node_to_its_first_slot_and_so_to_everyone():
    c = cache_with(node("worker-01", "k3s://worker-01"))
    a = slot("worker-01")
    selector = NodeSelector.parse("homecluster.dev/pool=workers")
    assert slot_refusal(a, [a], c, selector).reason == "NodeNotManaged"
    assert node_owner(node("worker-01", "k3s://worker-01"), [a], c, selector) is None
    assert node_owner(node("worker-01", "k3s://worker-01"), [a], c) is not None


def test_an_unregistered_instance_is_the_first_accepted_slot_declaring_its_id():
    c = Cache()
    first, dup = slot("w1", providerID="k3s://w1"), slot("w0", "2026-01-02T00:00:00Z", providerID="k3s://w1")
    slots = [dup, first]
    assert declaring_slot("k3s://w1", slots, c, by_provider_id=True)["metadata"]["name"] == "w1"
    assert declaring_slot("", slots, c, by_provider_id=True) is None
    named = slot("n", nodeName="box-7")
    assert declaring_slot("box-7", [named], c, by_provider_id=True) is None  # a node name is not an instance id
    assert declaring_slot("box-7", [named], c, by_provider_id=False)["metadata"]["name"] == "n"
    assert declaring_slot("homecluster://n", [named], c, by_provider_id=False)["metadata"]["name"] == "n"


def test_the_pool_wide_answer_names_duplicates_and_conflicts_but_not_the_first():
    c = cache_with(node("worker-01", "k3s://worker-01"), node("box", "k3s://box"))
    slots = [slot("worker-01"), slot("b", "2026-01-02T00:00:00Z", providerID="k3s://worker-01"),
             slot("d", "2026-01-03T00:00:00Z", providerID="homecluster://worker-01", nodeName="other"),
             slot("e", "2026-01-03T00:00:00Z", nodeName="worker-01", providerID="k3s://zzz"),
             slot("f", "2026-01-03T00:00:00Z", providerID="k3s://box")]
    assert slots_with_anothers_machine(slots, c) == {"b", "d", "e"}


def test_admission_judges_only_whose_machine_it_is():
    # a control-plane Node, or one outside the selector, is the controller's refusal (NodeAccepted), not admission's
    c = cache_with(node("cp", "k3s://cp", cp=True))
    assert admission_refusal("CREATE", slot("evil", providerID="k3s://cp"), None, [], c) is None


# ---- pinned by mutation testing (issue 23: model/identity.py's survivors) ---------------------------------------

def test_an_instance_whose_slots_node_is_outside_the_selector_has_no_declaring_slot():
    c = cache_with(node("worker-01", "k3s://worker-01"))
    a = slot("worker-01", providerID="k3s://worker-01")
    selector = NodeSelector.parse("homecluster.dev/pool=workers")
    assert declaring_slot("k3s://worker-01", [a], c, by_provider_id=True)["metadata"]["name"] == "worker-01"
    assert declaring_slot("k3s://worker-01", [a], c, selector, by_provider_id=True) is None


def test_a_slot_updated_to_declare_the_node_it_already_finds_is_not_refused_by_its_own_old_copy():
    c = cache_with(node("worker-01", "k3s://worker-01"))
    before = slot("worker-01")  # finds worker-01 by its name
    after = slot("worker-01", providerID="k3s://worker-01")  # now by its providerID: the same Node
    assert admission_refusal("UPDATE", after, before, [before], c) is None


def test_two_slots_declaring_one_node_name_with_no_node_yet_refuse_the_later():
    first = slot("a", nodeName="box-7", providerID="k3s://a")
    later = slot("b", "2026-01-02T00:00:00Z", nodeName="box-7", providerID="k3s://b")
    assert slots_with_anothers_machine([later, first], Cache()) == {"b"}


def test_only_slots_declaring_the_nodes_name_or_providerid_are_its_candidates():
    n = node("worker-01", "k3s://worker-01")
    by_name, by_id, other = slot("worker-01"), slot("b", providerID="k3s://worker-01"), slot("c", providerID="k3s://c")
    assert names(candidates(n, [by_name, by_id, other])) == ["worker-01", "b"]
    assert names(candidates(node("worker-09"), [other])) == []
