"""A pool machine's kubelet on the real control plane: its Node's pods run, and power-off is the real controller's.

RealLabCluster without the operator (one IPMI machine, powered on and off through the lab's own handle, as
its BMC would): the machine's kubelet, as `system:node:worker-01`,
- marks the pods the real scheduler binds to its Node Running (it runs nothing, as KWOK) and finishes
  their graceful deletions: a Deployment's pods run, an eviction (what `kubectl drain` sends) and a scale
  to zero complete — what cluster-autoscaler needs of a node it added;
- posts nothing once the machine is off: the real node lifecycle controller marks the Node Unknown
  ("Kubelet stopped posting node status.") and taints it node.kubernetes.io/unreachable; after power-on
  the kubelet's Ready lifts both.
"""
from __future__ import annotations

import json
import time
from typing import Any

import pytest
import pytest_asyncio
from support.waits import until

from homecluster_lab.config import LabConfig
from homecluster_lab.k8s.labcluster import RealLabCluster

pytestmark = pytest.mark.asyncio(loop_scope="module")
SLOT = "worker-01"
NS = "default"
APP = "on-pool"
UNREACHABLE = "node.kubernetes.io/unreachable"
BOUND = 120.0  # the waits end when the thing happens; generous for 2 loaded cores


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def lab(tmp_path_factory: pytest.TempPathFactory):
    config = LabConfig(slots=1, driver="ipmi", boot_seconds=0.5, provider_address="127.0.0.1:0",
                       workdir=tmp_path_factory.mktemp("pool-nodes"), operator=False, control_plane="kubernetes")
    async with RealLabCluster(config) as lab:
        yield lab


async def node(lab: RealLabCluster) -> dict[str, Any]:
    return await lab.api.kube.get(f"/api/v1/nodes/{SLOT}")


def ready(node: dict[str, Any]) -> dict[str, Any]:
    return next(c for c in node["status"]["conditions"] if c["type"] == "Ready")


async def pods(lab: RealLabCluster) -> list[dict[str, Any]]:
    return (await lab.api.kube.get(f"/api/v1/namespaces/{NS}/pods", {"labelSelector": f"app={APP}"}))["items"]


def deployment(replicas: int) -> dict[str, Any]:
    # placed by the real scheduler, only onto the machine's Node (not the runner's)
    on_slot = {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [SLOT]}]}]}
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": APP, "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": APP}}, "template": {
                "metadata": {"labels": {"app": APP}},
                "spec": {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": on_slot}},
                         "terminationGracePeriodSeconds": 30,
                         "containers": [{"name": "app", "image": "registry.invalid/app:1",
                                         "resources": {"requests": {"cpu": "100m", "memory": "64Mi"}}}]}}}}


def running(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}
    return (pod["spec"].get("nodeName") == SLOT and status.get("phase") == "Running" and bool(status.get("podIP"))
            and not pod["metadata"].get("deletionTimestamp")
            and all(conditions.get(t) == "True" for t in ("PodScheduled", "Initialized", "ContainersReady", "Ready"))
            and all("running" in s["state"] for s in status.get("containerStatuses") or [{"state": {}}]))


async def test_pods_bound_to_a_machines_node_run_and_their_deletions_finish(lab: RealLabCluster) -> None:
    lab.machine(SLOT).power_on()
    await until(lambda: _ready_status(lab, "True"), "the machine's Node Ready", BOUND)
    await lab.api.kube.create(f"/apis/apps/v1/namespaces/{NS}/deployments", deployment(2))

    async def both_running():
        found = await pods(lab)
        return found if len(found) == 2 and all(running(p) for p in found) else None
    first = await until(both_running, "the Deployment's two pods Running on the machine", BOUND)

    # kubectl drain's eviction: the API server marks the pod for deletion, the kubelet finishes it
    victim = first[0]["metadata"]
    await lab.api.kube.create(f"/api/v1/namespaces/{NS}/pods/{victim['name']}/eviction", {
        "apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": victim["name"], "namespace": NS}})

    async def replaced():
        found = await pods(lab)
        uids = {p["metadata"]["uid"] for p in found}
        return found if victim["uid"] not in uids and len(found) == 2 and all(running(p) for p in found) else None
    await until(replaced, "the evicted pod gone (well inside its 30 s grace) and its replacement Running",
                timeout=25)

    await lab.api.kube.merge_patch(f"/apis/apps/v1/namespaces/{NS}/deployments/{APP}", {"spec": {"replicas": 0}})

    async def none_left():
        return not await pods(lab)
    await until(none_left, "every pod deleted once the Deployment is scaled to zero", timeout=25)


async def test_powered_off_the_node_lifecycle_controller_marks_it_unknown_and_unreachable(lab: RealLabCluster) -> None:
    await until(lambda: _ready_status(lab, "True"), "the machine's Node Ready", BOUND)
    lab.machine(SLOT).power_off()
    # a status post or Lease renewal already in flight at the power-off may still land; the kubelet's loop
    # finishes it, then sees the machine off and forgets what it posted: from then on it must stay silent
    kubelet = lab.fleet.kubelets[SLOT]

    async def observed_off() -> bool:
        return kubelet.posted is None
    await until(observed_off, "the kubelet to observe the power-off", BOUND)
    off_at = time.time()
    gone = await until(lambda: _with(lab, lambda n: ready(n)["status"] == "Unknown" and _unreachable(n)),
                       "the Node Unknown and tainted unreachable", BOUND)
    condition = ready(gone)
    # the node lifecycle controller's words, not a kubelet's
    assert condition["reason"] == "NodeStatusUnknown", condition
    assert condition["message"] == "Kubelet stopped posting node status.", condition
    # and the machine's kubelet said nothing after the power-off
    node_user = f"system:node:{SLOT}"
    late = [e for e in _audit(lab) if e["user"]["username"] == node_user
            and e["verb"] in ("patch", "update", "create") and _epoch(e["requestReceivedTimestamp"]) > off_at]
    assert late == [], [(e["verb"], e["requestURI"]) for e in late]

    lab.machine(SLOT).power_on()
    await until(lambda: _with(lab, lambda n: ready(n)["status"] == "True" and not _unreachable(n)),
                "the Node Ready again, the unreachable taint lifted", BOUND)


async def _with(lab: RealLabCluster, test) -> dict[str, Any] | None:
    found = await node(lab)
    return found if (found.get("status") or {}).get("conditions") and test(found) else None


async def _ready_status(lab: RealLabCluster, status: str) -> bool:
    try:
        return bool(await _with(lab, lambda n: ready(n)["status"] == status))
    except Exception:  # not registered yet
        return False


def _unreachable(node: dict[str, Any]) -> bool:
    return any(t["key"] == UNREACHABLE for t in node["spec"].get("taints") or [])


def _audit(lab: RealLabCluster) -> list[dict[str, Any]]:
    assert lab.control_plane is not None and lab.control_plane.files is not None
    lines = lab.control_plane.files.audit_log.read_text().splitlines()
    events = []
    for index, line in enumerate(lines):
        try:
            events.append(json.loads(line))
        except json.JSONDecodeError:
            if index < len(lines) - 1:
                raise
            # the last line may be one the API server is still writing
    return events


def _epoch(stamp: str) -> float:
    import datetime as dt
    return dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
