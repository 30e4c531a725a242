"""The real kube-scheduler keeps lifecycle Job pods off every slot's Node (jobs.placement), with no nodeSelector.

The Jobs are the operator's own builders' (startup_job, shutdown_job), created as the admin, so the real Job
controller makes their pods and the real scheduler places them. The Nodes are registered by the admin
(no kubelet runs here: nothing has to run, only be placed); the slot Nodes have far more room than the
runner, so a scheduler free to choose would put the pods on them. The Jobs tolerate the not-ready and
unreachable taints (through the Group's spec.jobs.tolerations), since no kubelet keeps these Nodes Ready.
"""
from __future__ import annotations


import pytest
from k8s_rest import Rest
from support.waits import until

from homecluster.jobs import shutdown_job, startup_job
from homecluster.model.settings import Settings

pytestmark = pytest.mark.asyncio(loop_scope="module")

NS = "placement"
POWER = {"method": "ipmi", "ipmi": {"address": "10.0.0.11", "credentialsSecretRef": {"name": "bmc"}}}
SLOTS = [
    {"metadata": {"name": "worker-01", "uid": "s1"}, "spec": {"groupRef": "pool-a", "nodeName": "worker-01.lan",
                                                           "power": POWER}},
    {"metadata": {"name": "worker-02", "uid": "s2"}, "spec": {"groupRef": "pool-a", "power": POWER}},
    {"metadata": {"name": "big-01", "uid": "s3"}, "spec": {"groupRef": "pool-b", "power": POWER}},
]
SLOT_NODES = {"worker-01.lan", "worker-02", "big-01"}
RUNNER = "runner-1"
GROUP = {"metadata": {"name": "pool-a", "uid": "g"}, "spec": {"maxSize": 3, "jobs": {"tolerations": [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists"}]}}}


async def ok(rest: Rest, method: str, path: str, body=None) -> dict:
    status, answer = await rest.request(method, path, body)
    assert status in (200, 201), (method, path, status, answer)
    return answer


async def register_node(rest: Rest, name: str, cpu: str, memory: str) -> None:
    await ok(rest, "POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}})
    room = {"cpu": cpu, "memory": memory, "pods": "110"}
    await rest.request("PATCH", f"/api/v1/nodes/{name}/status",
                       {"status": {"capacity": room, "allocatable": room}}, "application/merge-patch+json")


def claim(name: str) -> dict:
    return {"metadata": {"name": name, "uid": f"{name}-uid"}, "spec": {"slotRef": "worker-01"},
            "status": {"phase": "pending", "attempt": 1}}


async def create_job(rest: Rest, job: dict) -> str:
    # no owner: the claims are not objects of this control plane, and the garbage collector would take the Job
    job["metadata"].pop("ownerReferences")
    await ok(rest, "POST", f"/apis/batch/v1/namespaces/{NS}/jobs", job)
    return job["metadata"]["name"]


async def pod_of(rest: Rest, job: str) -> dict | None:
    answer = await ok(rest, "GET", f"/api/v1/namespaces/{NS}/pods?labelSelector=job-name%3D{job}")
    return (answer.get("items") or [None])[0]


def startup(name: str) -> dict:
    return startup_job(claim(name), SLOTS[0], GROUP, Settings(), namespace=NS, image="runner:test", slots=SLOTS)


async def test_lifecycle_job_pods_never_land_on_a_slot_node(real_rest: Rest) -> None:
    await ok(real_rest, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": NS}})
    await ok(real_rest, "POST", f"/api/v1/namespaces/{NS}/serviceaccounts",
             {"apiVersion": "v1", "kind": "ServiceAccount", "metadata": {"name": "homecluster-job"}})
    for name in sorted(SLOT_NODES):
        await register_node(real_rest, name, "64", "256Gi")

    # only slot Nodes: the first Job's pod has nowhere to go
    first = await create_job(real_rest, startup("claim-a"))
    job = await until(lambda: pod_of(real_rest, first), "the Job controller's pod", 60)
    assert "nodeSelector" not in job["spec"]

    async def unschedulable():
        pod = await pod_of(real_rest, first)
        assert not pod["spec"].get("nodeName"), f'bound to slot Node {pod["spec"]["nodeName"]}'
        return next((c for c in pod["status"].get("conditions") or []
                     if c["type"] == "PodScheduled" and c["status"] == "False"), None)
    condition = await until(unschedulable, "PodScheduled=False (kube-scheduler)", 60)
    assert condition["reason"] == "Unschedulable", condition
    assert "affinity" in condition["message"], condition

    # a runner registers: the waiting pod and every new one go there, however much room the slot Nodes have
    await register_node(real_rest, RUNNER, "4", "8Gi")
    names = [first, await create_job(real_rest, startup("claim-b")), await create_job(real_rest, startup("claim-c")),
             await create_job(real_rest, shutdown_job(claim("claim-d"), SLOTS[0], GROUP, Settings(), force=True,
                                                      namespace=NS, image="runner:test", slots=SLOTS))]

    async def all_bound():
        pods = [await pod_of(real_rest, name) for name in names]
        nodes = [(p or {}).get("spec", {}).get("nodeName") for p in pods]
        return nodes if all(nodes) else None
    nodes = await until(all_bound, "every Job pod bound", 60)
    assert nodes == [RUNNER] * len(names), dict(zip(names, nodes))
