"""gate.open_gate / gate.cordon: exactly what they change on the corev1 Node, what they leave alone, their
resourceVersion precondition, and the log line that is their only account of it.
"""
from __future__ import annotations

import logging

import pytest

from homecluster import names
from homecluster.kube.client import Conflict
from homecluster.lifecycle.slotpass import run_pass

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"
OURS = {names.ANNOTATION_CORDONED_BY: names.CORDONED_BY_VALUE}
KEPT = [{"key": "example.com/keep", "effect": "NoSchedule"}, {"key": "example.com/also", "effect": "NoExecute"}]
CA = [{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"},
      {"key": "DeletionCandidateOfClusterAutoscaler", "effect": "PreferNoSchedule"}]


async def booting(env) -> None:
    await env.claim()
    await env.step()
    await env.job_done("c1-startup")
    await env.step()
    assert env.claim_status()["phase"] == "booting"


def gate_lines(records) -> list[str]:
    return [r.getMessage() for r in records if "readiness gate" in r.getMessage()]


async def test_gate_lifts_our_cordon_drops_ca_taints_keeps_the_rest_sets_provider_id(pool, logged):
    env = pool
    await booting(env)
    await env.node(taints=[KEPT[0], CA[0], KEPT[1], CA[1]], unschedulable=True, annotations={**OURS, "x/y": "z"})
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
    node = env.get("nodes", "worker-01")
    assert node["spec"]["taints"] == KEPT  # the others' taints kept, in their order
    assert not node["spec"].get("unschedulable")
    assert node["metadata"]["annotations"] == {"x/y": "z"}  # only our mark removed
    assert node["spec"]["providerID"] == "homecluster://worker-01"
    assert gate_lines(records) == ['slot "worker-01": readiness gate patches corev1 Node "worker-01": '
                                   "annotations, labels, providerID, taints, unschedulable"]
    assert node["metadata"]["labels"][names.LABEL_MACHINE_OF] == "worker-01"  # config/policy admits the Jobs here


async def test_gate_leaves_a_persons_cordon_and_a_set_provider_id(pool, logged):
    env = pool
    await booting(env)
    await env.node(unschedulable=True)  # a person's cordon: no mark of ours
    await env.lab.patch("nodes", "worker-01", {"spec": {"providerID": "homecluster://worker-01"}})
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
    node = env.get("nodes", "worker-01")
    assert node["spec"]["unschedulable"] is True
    # nothing of ours to change but our mark of the machine
    assert gate_lines(records) == ['slot "worker-01": readiness gate patches corev1 Node "worker-01": labels']
    assert node["metadata"]["labels"][names.LABEL_MACHINE_OF] == "worker-01"
    before = len([e for e in env.writes() if e.resource == "nodes" and e.group == "" and e.verb == "patch"])
    await env.step()
    assert len([e for e in env.writes() if e.resource == "nodes" and e.group == "" and e.verb == "patch"]) == before


async def test_gate_lifts_the_autoscalers_cordon_left_on_the_node_of_a_machine_it_deleted(pool, logged):
    """cluster-autoscaler (--cordon-node-before-terminating, default true in 1.34-1.36) cordons a node and taints
    it ToBeDeletedByClusterAutoscaler in one update before DeleteNodes, and leaves both once the deletion
    succeeded. The machine's next boot must not join cordoned: the pods would stay pending and the autoscaler
    would delete the empty node again (the benchmark's second cycle hung so)."""
    env = pool
    await booting(env)
    await env.node(taints=[KEPT[0], CA[0]], unschedulable=True)  # no mark of ours: the autoscaler's cordon
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
    node = env.get("nodes", "worker-01")
    assert not node["spec"].get("unschedulable"), node["spec"]
    assert node["spec"]["taints"] == [KEPT[0]]
    assert gate_lines(records) == ['slot "worker-01": readiness gate patches corev1 Node "worker-01": '
                                   "labels, providerID, taints, unschedulable"]


async def test_a_ready_claims_gate_leaves_the_autoscalers_drain_alone(pool):
    """On a ready claim's Node the autoscaler's cordon and taints are its scale-down in progress (cordon and
    taint, evict, then DeleteNodes): the gate of a ready claim whose Node became unusable must not lift them,
    or the evicted pods' replacements land back on the node being drained (seen with 1.36.1: 'Scale-down:
    removing node worker-01' twice, the gate having patched 'taints, unschedulable' between)."""
    env = pool
    await booting(env)
    await env.node()
    await env.step()
    assert env.claim_status()["phase"] == "ready"
    await env.lab.patch("nodes", "worker-01", {"spec": {"unschedulable": True, "taints": [CA[1], CA[0]]}})
    await env.step()
    node = env.get("nodes", "worker-01")
    assert node["spec"].get("unschedulable") is True, node["spec"]
    assert node["spec"]["taints"] == [CA[1], CA[0]]


async def test_gate_keeps_a_persons_cordon_beside_the_autoscalers_soft_taint(pool):
    """DeletionCandidateOfClusterAutoscaler comes without a cordon: a cordon beside it is a person's."""
    env = pool
    await booting(env)
    await env.node(taints=[CA[1]], unschedulable=True)
    await env.step()
    node = env.get("nodes", "worker-01")
    assert node["spec"]["unschedulable"] is True
    assert not node["spec"].get("taints")


async def test_gate_with_our_mark_on_a_schedulable_node_only_drops_the_mark(pool, logged):
    env = pool
    await booting(env)
    await env.node(annotations=dict(OURS))
    await env.lab.patch("nodes", "worker-01", {"spec": {"providerID": "homecluster://elsewhere"}})
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
    node = env.get("nodes", "worker-01")
    assert names.ANNOTATION_CORDONED_BY not in (node["metadata"].get("annotations") or {})
    assert node["spec"]["providerID"] == "homecluster://elsewhere"  # never overwritten
    assert gate_lines(records) == ['slot "worker-01": readiness gate patches corev1 Node "worker-01": '
                                   'annotations, labels']


async def test_gate_patch_carries_the_nodes_resource_version(pool):
    env = pool
    await booting(env)
    await env.node(annotations=dict(OURS), unschedulable=True)
    await env.refill()
    await env.lab.patch("nodes", "worker-01", {"metadata": {"labels": {"changed": "meanwhile"}}})
    with pytest.raises(Conflict):  # decided on a stale Node: refused, and the pass is re-run
        for _ in range(3):
            await run_pass(env.ctx, "worker-01")
    assert env.get("nodes", "worker-01")["spec"]["unschedulable"] is True


async def test_cordon_marks_the_node_once_and_carries_its_resource_version(pool, logged):
    env = pool
    await env.ready_claim()
    await env.lab.delete(CLAIMS, "c1")
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
    node = env.get("nodes", "worker-01")
    assert node["spec"]["unschedulable"] is True
    assert node["metadata"]["annotations"][names.ANNOTATION_CORDONED_BY] == names.CORDONED_BY_VALUE
    said = [r.getMessage() for r in records if "cordoned" in r.getMessage()]
    assert said == ['slot "worker-01": cordoned corev1 Node "worker-01" for the shutdown']
    patches = [e for e in env.writes() if e.resource == "nodes" and e.group == "" and e.verb == "patch"]
    await env.step()
    assert [e for e in env.writes() if e.resource == "nodes" and e.group == "" and e.verb == "patch"] == patches  # already cordoned


async def test_cordon_on_a_stale_node_is_refused(pool):
    env = pool
    await env.ready_claim()
    await env.lab.delete(CLAIMS, "c1")
    await env.refill()
    await env.lab.patch("nodes", "worker-01", {"metadata": {"labels": {"changed": "meanwhile"}}})
    with pytest.raises(Conflict):
        await run_pass(env.ctx, "worker-01")
    assert not env.get("nodes", "worker-01")["spec"].get("unschedulable")


async def test_gate_sets_only_a_missing_provider_id_on_an_otherwise_clean_node(pool, logged):
    env = pool
    await booting(env)
    await env.node(taints=list(KEPT))  # no mark of ours, no autoscaler taint: only the providerID is missing
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
    node = env.get("nodes", "worker-01")
    assert node["spec"]["providerID"] == "homecluster://worker-01"
    assert node["spec"]["taints"] == KEPT and not node["spec"].get("unschedulable")
    assert gate_lines(records) == ['slot "worker-01": readiness gate patches corev1 Node "worker-01": '
                                   'labels, providerID']  # the providerID and our mark of the machine


async def test_a_shutdown_job_is_fired_only_after_its_node_is_marked(pool):
    """config/policy lets the Jobs' token cordon only a Node labelled as a slot's machine: an unwanted machine
    that never passed the gate is labelled before its shutdown Job is created."""
    env = pool
    await env.node()  # on, usable, nobody wants it; never gated, so never marked
    await env.step()
    node = env.get("nodes", "worker-01")
    jobs = [j for j in env.lab.list("jobs.batch", "homecluster-system") if "-unwanted-" in j["metadata"]["name"]]
    assert jobs, "no shutdown Job for the unwanted machine"
    assert node["metadata"]["labels"][names.LABEL_MACHINE_OF] == "worker-01"
    writes = env.writes()
    marked = next(i for i, e in enumerate(writes) if e.resource == "nodes" and e.group == "" and e.verb == "patch")
    created = next(i for i, e in enumerate(writes) if e.resource == "jobs" and e.verb == "create")
    assert marked < created, "the shutdown Job was created before its Node was marked"


async def test_marking_the_machine_is_said_in_one_whole_line(pool, logged):
    """gate.mark's log line is its only account of the label it puts on the corev1 Node: said whole."""
    env = pool
    await env.node()  # on, nobody wants it, never gated: marked before its shutdown Job
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
    assert [r.getMessage() for r in records if "labelled" in r.getMessage()] == [
        f'slot "worker-01": labelled corev1 Node "worker-01" {names.LABEL_MACHINE_OF}=worker-01']
