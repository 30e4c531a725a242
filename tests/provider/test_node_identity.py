"""One machine, one slot, for the provider (issue 23 item 1, model.identity): a corev1 Node belongs to the first
slot that RESOLVES to it, whatever order the cache indexed the slots in -- the answer the controller reads too.

Asked over the real gRPC server (NodeGroupForNode), and of provider.logic directly. The two slots sit in two
Groups, so the group answered names the slot that won.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from homecluster.model.boundary import NodeSelector, Refusal
from homecluster.model.identity import (ANOTHER_SLOTS_MACHINE, claimants, node_owner, slot_refusal,
                                        slots_with_anothers_machine)
from homecluster.model.settings import Settings
from homecluster.provider import logic
from homecluster.provider.proto import externalgrpc_pb2 as pb
from provider_objects import NOW, corev1_node, filled_cache, group, slot, ts

POOL = {"homecluster.dev/pool": "workers"}


def created(obj: dict, minutes: int) -> dict:
    obj["metadata"]["creationTimestamp"] = ts(timedelta(minutes=minutes))
    return obj


def worker_01(labels: dict | None = None) -> dict:
    node = corev1_node("worker-01", "k3s://worker-01")
    node["metadata"]["labels"] = labels or {}
    return node


def cache_of(slots: list[dict], node: dict, selector: str | None = None):
    cache = filled_cache([group("workers"), group("gpu")], slots, nodes=[node])
    cache.managed_node_selector = NodeSelector.parse(selector) if selector else None
    return cache


def first_and_later(first_spec: dict, later_spec: dict) -> tuple[dict, dict]:
    # the later slot's name sorts first: only its creation time makes it the second
    return (created(slot("worker-01", "workers", **first_spec), 0),
            created(slot("a-later", "gpu", **later_spec), 1))


@pytest.mark.parametrize("order", ["first indexed first", "later indexed first"])
async def test_the_same_provider_id_twice_resolves_to_the_first_slot_whatever_the_cache_order(provider, order):
    first, later = first_and_later({"providerID": "k3s://worker-01"}, {"providerID": "k3s://worker-01"})
    slots = [first, later] if order == "first indexed first" else [later, first]
    cache = cache_of(slots, worker_01())
    _, stub = await provider(cache)
    for provider_id, name in (("k3s://worker-01", "worker-01"), ("k3s://worker-01", ""), ("", "worker-01")):
        answer = await stub.NodeGroupForNode(pb.NodeGroupForNodeRequest(
            node=pb.ExternalGrpcNode(providerID=provider_id, name=name)))
        assert answer.nodeGroup.id == "workers", (order, provider_id, name)  # before: "" when later indexed last
    assert slot_refusal(later, slots, cache).reason == "DuplicateProviderID"


@pytest.mark.parametrize("selector", [None, "homecluster.dev/pool=workers"])
@pytest.mark.parametrize("order", ["first indexed first", "later indexed first"])
async def test_a_node_found_by_name_and_by_a_later_providerid_stays_the_first_slots(provider, selector, order):
    # A declares nothing and finds worker-01 by its name; the later slot declares the providerID the Node carries
    first, later = first_and_later({}, {"providerID": "k3s://worker-01"})
    slots = [first, later] if order == "first indexed first" else [later, first]
    cache = cache_of(slots, worker_01(POOL), selector)
    _, stub = await provider(cache)
    answer = await stub.NodeGroupForNode(pb.NodeGroupForNodeRequest(
        node=pb.ExternalGrpcNode(providerID="k3s://worker-01", name="worker-01")))
    assert answer.nodeGroup.id == "workers"  # before: "gpu", the later slot's Group
    assert logic.resolve_slot(cache, "k3s://worker-01", "")["metadata"]["name"] == "worker-01"
    assert slot_refusal(first, slots, cache) is None
    refusal = slot_refusal(later, slots, cache, cache.managed_node_selector)
    assert (refusal.reason, refusal.keeper, refusal.node) == ("Conflict", "worker-01", "worker-01")
    assert 'spec.providerID "k3s://worker-01"' in refusal.message and 'spec.nodeName "worker-01"' in refusal.message
    assert [s["metadata"]["name"] for s in claimants(worker_01(), slots, cache)] == ["worker-01", "a-later"]


def test_the_first_is_the_older_creation_time_then_the_smaller_name():
    same_second = [slot("w-b", "gpu", providerID="k3s://worker-01"), slot("w-a", "workers", nodeName="worker-01")]
    for s in same_second:
        s["metadata"]["creationTimestamp"] = ts()
    for slots in (same_second, same_second[::-1]):
        cache = cache_of(slots, worker_01())
        assert node_owner(worker_01(), slots, cache)["metadata"]["name"] == "w-a"
    assert node_owner(corev1_node("elsewhere", "k3s://elsewhere"), same_second, cache) is None


def test_a_refused_first_slot_gives_the_node_to_no_one():
    # the first slot finds a control-plane Node: refused, and the later one does not inherit it
    cp = worker_01({"node-role.kubernetes.io/control-plane": ""})
    first, later = first_and_later({}, {"providerID": "k3s://worker-01"})
    cache = cache_of([first, later], cp)
    assert node_owner(cp, [first, later], cache) is None
    assert logic.group_of_node(cache, "k3s://worker-01", "worker-01") is None


def test_increase_skips_a_slot_whose_machine_is_another_slots():
    # a claim on the refused slot would wait pending (no startup Job): the autoscaler is never handed it
    first, later = first_and_later({}, {"providerID": "k3s://worker-01"})
    later["spec"]["groupRef"] = "workers"
    spare = created(slot("z-spare", "workers"), 2)
    cache = cache_of([first, later, spare], worker_01())
    assert logic.plan_increase(cache, cache.get("groups", "workers"), 2, logic.InFlight(), Settings(), NOW) \
        == ["worker-01", "z-spare"]  # before: ["a-later", "worker-01"]


NODES = [corev1_node("n1", "k3s://n1"), corev1_node("n2", "k3s://n2"),
         {**corev1_node("cp", "k3s://cp"), "metadata": {"name": "cp", "labels": {
             "node-role.kubernetes.io/control-plane": ""}}}]
DECLARED = st.fixed_dictionaries({}, optional={"providerID": st.sampled_from(["k3s://n1", "k3s://n2", "k3s://cp",
                                                                              "k3s://none"]),
                                               "nodeName": st.sampled_from(["n1", "n2", "cp", "s0", "none"])})


@settings(max_examples=200, deadline=None)
@given(st.lists(st.tuples(DECLARED, st.integers(0, 2)), min_size=1, max_size=5))
def test_the_pool_wide_answer_is_the_per_slot_answer(declared):
    slots = [created(slot(f"s{i}", **spec), minutes) for i, (spec, minutes) in enumerate(declared)]
    cache = filled_cache([group()], slots, nodes=NODES)
    per_slot = {s["metadata"]["name"] for s in slots
                if (slot_refusal(s, slots, cache) or Refusal("", "")).reason in ANOTHER_SLOTS_MACHINE}
    assert slots_with_anothers_machine(slots, cache) == per_slot


@pytest.mark.parametrize("relabel", ["leaves --managed-node-selector", "becomes a control-plane Node"])
async def test_a_nodes_label_change_reaches_node_group_for_node_at_once(provider, relabel):
    # NodeGroupForNode is memoized against cache.version: a Node that keeps its providerID but changes its labels
    # changes the answer (the slot boundary reads them), so the change must not be served stale
    cache = cache_of([created(slot("worker-01", "workers"), 0)], worker_01(POOL), "homecluster.dev/pool=workers")
    _, stub = await provider(cache)
    request = pb.NodeGroupForNodeRequest(node=pb.ExternalGrpcNode(providerID="k3s://worker-01", name="worker-01"))
    assert (await stub.NodeGroupForNode(request)).nodeGroup.id == "workers"
    labels = {} if relabel.startswith("leaves") else {**POOL, "node-role.kubernetes.io/control-plane": ""}
    cache.upsert("nodes", worker_01(labels) if labels else worker_01())
    assert (await stub.NodeGroupForNode(request)).nodeGroup.id == ""  # before: "workers", the memo kept
