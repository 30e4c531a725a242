"""A lifecycle Job's pod is kept off every slot's Node (jobs.placement), beside the Group's own nodeSelector.

The real scheduler's side of it is tests/k8s/test_k8s_job_placement.py.
"""
from __future__ import annotations

import kubernetes_validate

from homecluster.jobs import shutdown_job, startup_job
from homecluster.jobs.placement import MAX_AVOIDED_NODES, avoided_nodes
from test_jobs_manifest import GROUP, IMAGE, NS, FakeSettings, make_claim, make_slot, pod


def slot(name: str, group: str = "pool-a", node_name: str | None = None) -> dict:
    spec = {"groupRef": group, **({"nodeName": node_name} if node_name else {})}
    return {"metadata": {"name": name}, "spec": spec}


def excluded(job: dict) -> list[str]:
    """The Node names the pod's required node affinity excludes; asserts the affinity has that one shape."""
    terms = pod(job)["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert len(terms) == 1 and set(terms[0]) == {"matchFields"}
    reqs = terms[0]["matchFields"]
    # kube-apiserver takes exactly one value per metadata.name requirement
    assert all(r["key"] == "metadata.name" and r["operator"] == "NotIn" and len(r["values"]) == 1 for r in reqs)
    return [r["values"][0] for r in reqs]


def test_startup_job_avoids_every_slots_node_own_pool_first():
    slots = [slot("z-other", "pool-b"), slot("worker-02", node_name="worker-02.lan"), make_slot(), slot("a-other", "pool-b")]
    job = startup_job(make_claim(), make_slot(), GROUP, FakeSettings(), namespace=NS, image=IMAGE, slots=slots)
    kubernetes_validate.validate(job, "1.37.0", strict=True)
    assert excluded(job) == ["worker-01.lan", "worker-02.lan", "a-other", "z-other"]


def test_without_other_slots_the_slots_own_node_is_still_avoided():
    job = startup_job(make_claim(), make_slot(), GROUP, FakeSettings(), namespace=NS, image=IMAGE)
    assert excluded(job) == ["worker-01.lan"]


def test_shutdown_job_avoids_the_node_accepted_for_the_slot_under_another_name():
    node = {"metadata": {"name": "renamed-01"}, "spec": {"providerID": "homecluster://worker-01"}}
    job = shutdown_job(make_claim(), make_slot(), GROUP, FakeSettings(), force=False, namespace=NS, image=IMAGE,
                       node=node, slots=[make_slot(), slot("worker-02")])
    kubernetes_validate.validate(job, "1.37.0", strict=True)
    assert excluded(job) == ["renamed-01", "worker-01.lan", "worker-02"]
    assert excluded(shutdown_job(None, make_slot(), GROUP, FakeSettings(), force=True, namespace=NS,
                                 image=IMAGE)) == ["worker-01.lan"]


def test_the_groups_node_selector_and_tolerations_are_kept_beside_the_affinity():
    group = {"metadata": {"name": "pool-a"}, "spec": {"jobs": {
        "nodeSelector": {"lab.homecluster.dev/runner": "true"},
        "tolerations": [{"key": "node-role.kubernetes.io/control-plane", "operator": "Exists", "effect": "NoSchedule"}],
    }}}
    job = startup_job(make_claim(), make_slot(), group, FakeSettings(), namespace=NS, image=IMAGE,
                      slots=[slot("worker-02")])
    p = pod(job)
    assert p["nodeSelector"] == {"lab.homecluster.dev/runner": "true"}
    assert p["tolerations"][0]["key"] == "node-role.kubernetes.io/control-plane"
    assert excluded(job) == ["worker-01.lan", "worker-02"]


def test_bounded_own_node_and_pool_first_then_others_by_name():
    others = [slot(f"b-{i:04d}", "pool-b") for i in range(MAX_AVOIDED_NODES)]
    mine = [slot(f"z-{i:04d}") for i in range(5)]
    names = avoided_nodes(make_slot(), others + mine)
    assert len(names) == MAX_AVOIDED_NODES
    assert names[:6] == ["worker-01.lan"] + [f"z-{i:04d}" for i in range(5)]
    assert names[-1] == f"b-{MAX_AVOIDED_NODES - 7:04d}"


def test_names_that_cannot_be_node_names_are_left_out_and_repeats_dropped():
    bad = [{"metadata": {}, "spec": {}}, slot("x", node_name="Not_A_Node"), slot("y", node_name=["list"]),
           slot("worker-03"), slot("worker-03")]
    assert avoided_nodes(make_slot(), bad) == ["worker-01.lan", "worker-03"]


def test_a_slot_declaring_a_node_the_operator_never_takes_does_not_keep_jobs_off_it():
    # a slot naming the control plane's Node (or one outside --managed-node-selector): model.boundary never takes
    # that Node as a slot's machine, so it stays a place for the Jobs
    from homecluster.kube.store import Store
    from homecluster.model.boundary import NodeSelector

    store = Store(managed_node_selector=NodeSelector.parse("pool=homecluster"))
    for name, labels in (("cp-1", {"node-role.kubernetes.io/control-plane": ""}), ("runner", {}),
                         ("worker-02", {"pool": "homecluster"})):
        store.cache.upsert("nodes", {"metadata": {"name": name, "labels": labels}})
    slots = [slot("sneaky", node_name="cp-1"), slot("runner-slot", node_name="runner"), slot("worker-02")]
    assert sorted(store.never_slot_nodes()) == ["cp-1", "runner"]
    job = startup_job(make_claim(), make_slot(), GROUP, FakeSettings(), namespace=NS, image=IMAGE, slots=slots,
                      never_slots=store.never_slot_nodes())
    assert excluded(job) == ["worker-01.lan", "worker-02"]


def test_a_machine_registered_under_another_name_is_avoided_by_every_slots_jobs():
    """Slot b's machine joined as b-host.lan (matched by its providerID): a Job of slot a avoids it too, and a
    startup Job of slot b avoids it before any Node is accepted as b's."""
    a, b = slot("a"), slot("b")
    registered = {"b": "b-host.lan"}
    assert avoided_nodes(a, [a, b], registered=registered) == ["a", "b", "b-host.lan"]
    assert avoided_nodes(b, [a, b], registered=registered) == ["b-host.lan", "b", "a"]
    job = startup_job(make_claim(), make_slot(), GROUP, FakeSettings(), namespace=NS, image=IMAGE,
                      slots=[make_slot(), b], registered=registered)
    assert "b-host.lan" in excluded(job)
    job = shutdown_job(make_claim(), make_slot(), GROUP, FakeSettings(), force=True, namespace=NS, image=IMAGE,
                       slots=[make_slot(), b], registered=registered)
    assert "b-host.lan" in excluded(job)
    assert avoided_nodes(a, [a, b], registered={"b": "Not A Node!"}) == ["a", "b"]  # only Node names


def test_the_store_names_the_nodes_found_by_provider_id_under_another_name():
    from homecluster.kube.store import NODES, SLOTS, Store

    store = Store()
    store.apply(SLOTS, {"metadata": {"name": "b", "resourceVersion": "1"}, "spec": {"groupRef": "pool-a"}})
    store.apply(SLOTS, {"metadata": {"name": "c", "resourceVersion": "2"}, "spec": {"groupRef": "pool-a"}})
    store.apply(NODES, {"metadata": {"name": "b-host.lan", "resourceVersion": "3"},
                        "spec": {"providerID": "homecluster://b"}})
    store.apply(NODES, {"metadata": {"name": "c", "resourceVersion": "4"}, "spec": {"providerID": "homecluster://c"}})
    assert store.registered_node_names() == {"b": "b-host.lan"}
