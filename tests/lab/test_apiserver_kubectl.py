"""kubectl 1.32 against the lab API server: the commands operators and our playbooks rely on."""
from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.lab


async def test_get_shows_server_side_columns(lab_api, kubectl, widgets, objs):
    await lab_api.create(objs.node("worker-1", **{"node-role.kubernetes.io/worker": ""}))
    await lab_api.create(objs.node("worker-2", ready=False))
    out = (await kubectl("get", "nodes")).check().out
    lines = out.splitlines()
    assert lines[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
    assert lines[1].split()[:3] == ["worker-1", "Ready", "worker"]
    assert lines[2].split()[:3] == ["worker-2", "NotReady", "<none>"]

    await lab_api.create({"apiVersion": "lab.homecluster.dev/v1", "kind": "Widget", "metadata": {"name": "w1"},
                          "spec": {"size": 3}, "status": {"phase": "Ready",
                                                          "conditions": [{"type": "Ready", "status": "True"}]}},
                         keep_status=True)
    out = (await kubectl("get", "widgets")).check().out.splitlines()
    assert out[0].split() == ["NAME", "SIZE", "PHASE", "READY", "AGE"]
    name, size, phase, ready, age = out[1].split()
    assert (name, size, phase, ready) == ("w1", "3", "Ready", "True")
    assert age.endswith("s")
    # short name and category resolve through discovery
    assert "w1" in (await kubectl("get", "wd")).check().out
    assert "w1" in (await kubectl("get", "homecluster")).check().out

    await lab_api.create(objs.pod("p1", "worker-1"), keep_status=True)
    lines = (await kubectl("get", "pods", "-o", "wide")).check().out.splitlines()
    assert lines[0].split()[:5] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    assert lines[1].split()[:4] == ["p1", "1/1", "Running", "0"]
    assert "worker-1" in lines[1]


async def test_apply_creates_then_updates(lab_api, kubectl, widgets):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "cfg", "namespace": "default"},
          "data": {"a": "1", "b": "2"}}
    (await kubectl("apply", "-f", "-", input=json.dumps(cm))).check()
    cm["data"] = {"a": "10"}
    out = (await kubectl("apply", "-f", "-", input=json.dumps(cm))).check().out
    assert "configured" in out
    assert lab_api.get("configmaps", "cfg", "default")["data"] == {"a": "10"}

    w = {"apiVersion": "lab.homecluster.dev/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}
    assert "created" in (await kubectl("apply", "-f", "-", input=json.dumps(w))).check().out
    stored = lab_api.get(widgets, "w")
    assert stored["spec"] == {"size": 1, "color": "red"}  # defaulted from the schema
    w["spec"] = {"size": 2, "color": "blue"}
    assert "configured" in (await kubectl("apply", "-f", "-", input=json.dumps(w))).check().out
    stored = lab_api.get(widgets, "w")
    assert stored["spec"] == {"size": 2, "color": "blue"}
    assert stored["metadata"]["generation"] == 2
    # unchanged apply is a no-op: no new resourceVersion
    rv = stored["metadata"]["resourceVersion"]
    assert "unchanged" in (await kubectl("apply", "-f", "-", input=json.dumps(w))).check().out
    assert lab_api.get(widgets, "w")["metadata"]["resourceVersion"] == rv
    # server-side validation (kubectl leaves it to the server: fieldValidation=Strict)
    w["spec"] = {"size": -1, "bogus": True}
    run = await kubectl("apply", "-f", "-", input=json.dumps(w))
    assert run.rc != 0
    assert 'unknown field "spec.bogus"' in run.err
    w["spec"] = {"size": -1}
    run = await kubectl("apply", "-f", "-", input=json.dumps(w))
    assert run.rc != 0
    # kubectl rewords Invalid errors from the Status details, as with a real server
    assert 'The Widget "w" is invalid: spec.size: Invalid value: -1' in run.err


async def test_server_side_apply(lab_api, kubectl):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "ssa", "namespace": "default"},
          "data": {"a": "1"}}
    (await kubectl("apply", "--server-side", "-f", "-", input=json.dumps(cm))).check()
    cm["data"]["b"] = "2"
    (await kubectl("apply", "--server-side", "-f", "-", input=json.dumps(cm))).check()
    assert lab_api.get("configmaps", "ssa", "default")["data"] == {"a": "1", "b": "2"}


async def test_create_patch_delete(lab_api, kubectl, widgets):
    (await kubectl("create", "configmap", "c1", "--from-literal=k=v")).check()
    assert lab_api.get("configmaps", "c1", "default")["data"] == {"k": "v"}
    (await kubectl("patch", "configmap", "c1", "--type=merge", "-p", '{"data":{"k2":"v2"}}')).check()
    (await kubectl("patch", "configmap", "c1", "--type=json",
                   "-p", '[{"op":"replace","path":"/data/k","value":"new"}]')).check()
    assert lab_api.get("configmaps", "c1", "default")["data"] == {"k": "new", "k2": "v2"}
    # strategic merge on a pod: containers merge by name
    await lab_api.create({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"},
                          "spec": {"containers": [{"name": "a", "image": "x"}, {"name": "b", "image": "y"}]}})
    (await kubectl("patch", "pod", "p", "-p", '{"spec":{"containers":[{"name":"b","image":"z"}]}}')).check()
    containers = lab_api.get("pods", "p", "default")["spec"]["containers"]
    assert containers == [{"name": "a", "image": "x"}, {"name": "b", "image": "z"}]
    # strategic merge is refused for custom resources, as the real server does
    await lab_api.create({"apiVersion": "lab.homecluster.dev/v1", "kind": "Widget", "metadata": {"name": "w"},
                          "spec": {"size": 1}})
    run = await kubectl("patch", "widget", "w", "--type=strategic", "-p", '{"spec":{"size":2}}')
    assert run.rc != 0
    assert "application/strategic-merge-patch+json is not supported by lab.homecluster.dev/v1, Kind=Widget" in run.err
    (await kubectl("delete", "configmap", "c1")).check()
    assert lab_api.get("configmaps", "c1", "default") is None
    run = await kubectl("delete", "configmap", "c1")
    assert run.rc != 0
    assert 'Error from server (NotFound): configmaps "c1" not found' in run.err


async def test_cordon_uncordon(lab_api, kubectl, objs):
    await lab_api.create(objs.node("n1"))
    (await kubectl("cordon", "n1")).check()
    assert lab_api.get("nodes", "n1")["spec"]["unschedulable"] is True
    assert "Ready,SchedulingDisabled" in (await kubectl("get", "node", "n1")).check().out
    (await kubectl("uncordon", "n1")).check()
    assert not lab_api.get("nodes", "n1")["spec"].get("unschedulable")


async def _drain_fixture(lab_api, objs):
    await lab_api.create(objs.node("n1"))
    await lab_api.create(objs.node("n2"))
    ds = await lab_api.create({"apiVersion": "apps/v1", "kind": "DaemonSet",
                               "metadata": {"name": "agent", "namespace": "kube-system"},
                               "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {}}})
    rs = await lab_api.create({"apiVersion": "apps/v1", "kind": "ReplicaSet",
                               "metadata": {"name": "web", "namespace": "default"},
                               "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}}, "template": {}}})
    for name, node_name in (("web-1", "n1"), ("web-2", "n1"), ("web-3", "n2")):
        await lab_api.create(objs.pod(name, node_name, labels={"app": "web"}, owner=objs.owner_ref(rs)),
                             keep_status=True)
    await lab_api.create(objs.pod("agent-n1", "n1", "kube-system", {"app": "agent"}, objs.owner_ref(ds)),
                         keep_status=True)


async def test_drain_evicts_only_that_nodes_pods(lab_api, kubectl, objs):
    await _drain_fixture(lab_api, objs)
    run = (await kubectl("drain", "n1", "--ignore-daemonsets", "--timeout=20s")).check()
    assert "node/n1 drained" in run.out
    assert lab_api.get("pods", "web-1", "default") is None
    assert lab_api.get("pods", "web-2", "default") is None
    assert lab_api.get("pods", "web-3", "default") is not None  # another node's pod
    assert lab_api.get("pods", "agent-n1", "kube-system") is not None  # DaemonSet pod skipped
    assert lab_api.get("nodes", "n1")["spec"]["unschedulable"] is True
    evictions = lab_api.audit.select("pods", verbs=["create"], user_agent="kubectl")
    assert sorted(e.name for e in evictions if e.subresource == "eviction") == ["web-1", "web-2"]


async def test_drain_blocked_by_pdb_times_out_and_evicts_nothing_protected(lab_api, kubectl, objs):
    await _drain_fixture(lab_api, objs)
    await lab_api.create({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                          "metadata": {"name": "web", "namespace": "default"},
                          "spec": {"minAvailable": 3, "selector": {"matchLabels": {"app": "web"}}}})
    run = await kubectl("drain", "n1", "--ignore-daemonsets", "--timeout=2s")
    assert run.rc != 0
    assert "Cannot evict pod as it would violate the pod's disruption budget." in run.err + run.out
    for name in ("web-1", "web-2", "web-3"):
        assert lab_api.get("pods", name, "default") is not None
    status = lab_api.get("poddisruptionbudgets", "web", "default")["status"]
    assert status["currentHealthy"] == 3 and status["desiredHealthy"] == 3
    assert status["disruptionsAllowed"] == 0 and status["expectedPods"] == 3


async def test_wait_for_condition_and_delete(lab_api, kubectl, widgets, objs):
    import asyncio
    await lab_api.create(objs.node("n1", ready=False))
    waiter = asyncio.create_task(kubectl("wait", "--for=condition=Ready", "node/n1", "--timeout=20s"))
    await asyncio.sleep(0.5)
    assert not waiter.done()
    await lab_api.patch("nodes", "n1", {"status": {"conditions": [{"type": "Ready", "status": "True"}]}},
                        subresource="status")
    assert "condition met" in (await waiter).check().out

    await lab_api.create({"apiVersion": "lab.homecluster.dev/v1", "kind": "Widget",
                          "metadata": {"name": "w", "finalizers": ["lab/hold"]}, "spec": {"size": 1}})
    (await kubectl("delete", "widget", "w", "--wait=false")).check()
    waiter = asyncio.create_task(kubectl("wait", "--for=delete", "widget/w", "--timeout=20s"))
    await asyncio.sleep(0.5)
    assert not waiter.done()
    assert lab_api.get(widgets, "w")["metadata"]["deletionTimestamp"]
    await lab_api.patch(widgets, "w", {"metadata": {"finalizers": None}})
    (await waiter).check()
    assert lab_api.get(widgets, "w") is None
