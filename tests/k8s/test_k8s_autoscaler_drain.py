"""Scale-down of a node that is not empty, and the next scale-up onto the machine it powered off (newest version).

Two slots. Two big pods (3 of a machine's 4 CPUs) buy both machines; then two small pods (600m, so only one
fits beside a big pod: one per machine) under a PodDisruptionBudget. With the big pods gone, each machine
holds one small pod and one machine is enough for both: the autoscaler drains one node (an eviction the
budget admits), calls DeleteNodes, and the operator's reversal powers the machine off. Asserted: that
machine off, its claim deleted once and ended completed, both small pods Running on the other machine, the
autoscaler's status ConfigMap at target 1, one scale-down in its metrics and none of the other node.

Then one more big pod: with two slots it can only go to the machine the autoscaler powered off. The
autoscaler cordoned that Node before DeleteNodes and left the cordon (and its ToBeDeletedByClusterAutoscaler
taint) on the Node; the readiness gate must lift both, or the pod never runs and the autoscaler removes the
"empty" node again (benchmarks/autoscaler_e2e.py's second cycle hung so).
"""
from __future__ import annotations

import pytest
import pytest_asyncio
import yaml
from k8s_autoscaler import (NS, Pool, audit, claims_created, clocks, delete_asks, epoch, newest_lab, now,
                            scans_later, story, until_running, workload)
from support.waits import until

from homecluster_lab.k8s.autoscaler import STATUS_CONFIGMAP, Autoscaler

pytestmark = pytest.mark.asyncio(loop_scope="module")
BOUND = 600.0  # the waits end when the thing happens; a drain and a shutdown Job took 6 min at load 36
SMALL_CPU = "600m"  # beside a 3-CPU pod only one fits on a 4-CPU machine; two fit on an empty one


@pytest_asyncio.fixture(scope="module", loop_scope="module")
async def pool(tmp_path_factory: pytest.TempPathFactory):
    async with newest_lab(tmp_path_factory, "ca-drain-", slots=2) as (lab, build):
        async with Autoscaler.for_lab(lab, build, clocks=clocks()) as ca:
            yield Pool(lab, ca, build)


def _story(pool: Pool) -> str:
    return story(pool.lab, pool.ca)


async def _all_running(pool: Pool, app: str, wanted: int, what: str) -> list[dict]:
    return await until_running(pool.lab, pool.ca, {app: wanted}, what, BOUND)


def _pdb(app: str) -> dict:
    return {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": app, "namespace": NS},
            "spec": {"maxUnavailable": 1, "selector": {"matchLabels": {"app": app}}}}


def _movable(deployment: dict) -> dict:
    """Without the anti-affinity: two such pods may share a machine, so the autoscaler can move one."""
    del deployment["spec"]["template"]["spec"]["affinity"]
    return deployment


def _group_status(text: str) -> dict:
    return next(g for g in (yaml.safe_load(text).get("nodeGroups") or []) if g.get("name") == "workers")


async def test_a_node_with_a_budgeted_pod_is_drained_deleted_once_and_powered_off(pool: Pool, record_property):
    record_property("cluster_autoscaler", pool.build.release)
    lab, deployments = pool.lab, f"/apis/apps/v1/namespaces/{NS}/deployments"
    await lab.api.kube.create(deployments, workload("big", 2))
    await _all_running(pool, "big", 2, "two big pods Running on the two machines the autoscaler bought")
    await lab.api.kube.create(f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets", _pdb("small"))
    await lab.api.kube.create(deployments, _movable(workload("small", 2, cpu=SMALL_CPU)))
    small = await _all_running(pool, "small", 2, "two small pods Running, one beside each big pod")
    assert len({p["spec"]["nodeName"] for p in small}) == 2, [p["spec"]["nodeName"] for p in small]
    owned = {c["spec"]["slotRef"]: c["metadata"]["name"] for c in lab.claims()}
    since = now()
    await lab.api.kube.merge_patch(f"{deployments}/big", {"spec": {"replicas": 0}})

    async def one_off():
        off = [s for s in owned if lab.machine(s).power_state() == "off"]
        return off if len(off) == 1 and owned[off[0]] not in {c["metadata"]["name"] for c in lab.claims()} else None
    try:
        gone = (await until(one_off, "one machine drained, deleted and powered off", BOUND))[0]
    except AssertionError as exc:
        raise AssertionError(f"{exc}\n{_story(pool)}") from None
    kept = next(s for s in owned if s != gone)
    placed = await _all_running(pool, "small", 2, f"both small pods Running on {kept}")
    assert {p["spec"]["nodeName"] for p in placed} == {kept}, placed
    assert lab.machine(kept).power_state() == "on"
    evictions = [e for e in audit(lab) if (e.get("objectRef") or {}).get("subresource") == "eviction"
                 and e["user"]["username"].endswith(":cluster-autoscaler") and epoch(e["requestReceivedTimestamp"]) >= since]
    assert evictions, f"the autoscaler evicted no pod (a drain, not an empty-node deletion, was meant)\n{_story(pool)}"
    deletes = [e["objectRef"].get("name") for e in audit(lab) if e.get("verb") == "delete"
               and (e.get("objectRef") or {}).get("resource") == "nodeclaims"
               and (e.get("responseStatus") or {}).get("code") in (200, 202)
               and epoch(e["requestReceivedTimestamp"]) >= since]
    assert deletes == [owned[gone]], f"one DeleteNodes, of {owned[gone]}: {deletes}\n{_story(pool)}"

    async def completed():
        last = ((lab.api.get("nodes.infra.homecluster.dev", gone) or {}).get("status") or {}).get("lastClaim") or {}
        return (last.get("name"), last.get("phase")) == (owned[gone], "completed")
    await until(completed, f"{gone}'s lastClaim to say {owned[gone]} completed", 60)

    async def status_agrees():
        cm = await lab.api.kube.get(f"/api/v1/namespaces/{lab.config.namespace}/configmaps/{STATUS_CONFIGMAP}")
        group = _group_status((cm.get("data") or {}).get("status") or "{}")
        return (group.get("health") or {}).get("cloudProviderTarget") == 1
    await until(status_agrees, "the autoscaler's status ConfigMap to say workers' target is 1", 60)
    text = await pool.ca.metrics()
    scaled = sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                 if line.startswith("cluster_autoscaler_scaled_down_nodes_total{"))
    assert scaled == 1, (scaled, _story(pool))
    removing = [line for line in pool.ca.log_text().splitlines()  # its decisions, not their Event echoes
                if "Scale-down: removing node" in line and "Event(" not in line]
    assert len(removing) == 1 and gone in removing[0], removing
    # one DeleteNodes ask for the drained node over the whole test, a repeated one (no API call) included
    await scans_later(pool.ca, 5, BOUND)
    assert delete_asks(lab) == {gone: 1}, (delete_asks(lab), _story(pool))


async def test_the_machine_it_powered_off_boots_again_uncordoned_and_runs_the_next_pod(pool: Pool, record_property):
    record_property("cluster_autoscaler", pool.build.release)
    lab = pool.lab
    off = [s for s in lab.slot_names if lab.machine(s).power_state() == "off"]
    if len(off) != 1:
        pytest.skip(f"the drain test did not leave one machine off: {lab.machine_summary()}")
    node = await lab.api.kube.get(f"/api/v1/nodes/{off[0]}")
    assert node["spec"].get("unschedulable"), "the autoscaler's cordon should be on the powered-off Node"
    since = now()
    await lab.api.kube.create(f"/apis/apps/v1/namespaces/{NS}/deployments", workload("again", 1))
    placed = await _all_running(pool, "again", 1, f"the next big pod Running on {off[0]}, booted again")
    assert placed[0]["spec"]["nodeName"] == off[0]
    node = await lab.api.kube.get(f"/api/v1/nodes/{off[0]}")
    assert not node["spec"].get("unschedulable"), node["spec"]
    assert len(claims_created(lab, since)) == 1, _story(pool)
