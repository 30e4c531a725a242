"""Issue 12's differential suite, writes: server-side apply and the patch kinds, the same requests against
kube-apiserver and the lab's in-memory API server (k8s_compare.step: status, reason, message, causes).

What the product sends: the operator writes by merge patch, conditional on resourceVersion (claims, slots and
their status subresources: `homecluster.kube.client`), and patches corev1 Nodes by strategic merge (the
readiness gate and the cordon: `homecluster.lifecycle.gate`); it never applies. `kubectl apply --server-side`
installs `dist/install.yaml` (one field manager, `kubectl`). The machines' kubelets merge-patch Nodes and pods.
Server-side apply's field ownership (managedFields, conflicts between managers, force) is not modelled by the
in-memory server: listed in docs/lab.md, and asserted here as the listed difference.
"""
from __future__ import annotations

import asyncio
import copy
from typing import Any

import pytest
from k8s_compare import APPLY, JSON_PATCH, MERGE, STRATEGIC, managers, step
from k8s_objects import API, sample
from k8s_rest import Rest

pytestmark = pytest.mark.asyncio(loop_scope="module")

CLAIMS = f"{API}/nodeclaims"
# step -> the in-memory server's (status, reason), where it differs (docs/lab.md: no field ownership)
OWNERSHIP = {"apply-conflict": (200, None), "apply-status-conflict": (200, None)}
# the in-memory server does not validate updates of built-in kinds (docs/lab.md)
POD_UPDATES = {"pod-new-container": (200, None)}


def _claim(name: str, requested_by: str = "alice") -> dict[str, Any]:
    claim = sample("infra_v2alpha1_nodeclaim.yaml")
    claim["metadata"] = {"name": name}
    claim["spec"]["requestedBy"] = requested_by
    return claim


def _fields(bodies: dict[str, dict], *path: str) -> dict[str, Any]:
    out = {}
    for server, body in bodies.items():
        value: Any = body
        for key in path:
            value = (value or {}).get(key)
        out[server] = value
    return out


async def test_server_side_apply_alike(servers: dict[str, Rest]) -> None:
    path = f"{CLAIMS}/diff-apply"
    await step(servers, "apply-without-manager", "PATCH", path, _claim("diff-apply"), APPLY, expect=422)
    bodies = await step(servers, "apply-creates", "PATCH", f"{path}?fieldManager=kubectl", _claim("diff-apply"),
                        APPLY, expect=201)
    assert managers(bodies["real"]) == [("kubectl", "Apply", "")] and managers(bodies["lab"]) == [], bodies
    await step(servers, "apply-name-mismatch", "PATCH", f"{CLAIMS}/diff-other?fieldManager=kubectl",
               _claim("diff-apply"), APPLY, expect=400)
    await step(servers, "force-without-apply", "PATCH", f"{path}?force=true", {"spec": {"requestedBy": "x"}},
               MERGE, expect=422)
    bodies = await step(servers, "apply-again", "PATCH", f"{path}?fieldManager=kubectl", _claim("diff-apply", "bob"),
                        APPLY, expect=200)
    assert _fields(bodies, "spec", "requestedBy") == {"real": "bob", "lab": "bob"}
    # another manager applying a field kubectl owns, with another value: a conflict (not modelled in memory)
    await step(servers, "apply-conflict", "PATCH", f"{path}?fieldManager=someone", _claim("diff-apply", "carol"),
               APPLY, expect=409, known=OWNERSHIP)
    bodies = await step(servers, "apply-force", "PATCH", f"{path}?fieldManager=someone&force=true",
                        _claim("diff-apply", "carol"), APPLY, expect=200)
    assert _fields(bodies, "spec", "requestedBy") == {"real": "carol", "lab": "carol"}
    assert managers(bodies["real"]) == [("kubectl", "Apply", ""), ("someone", "Apply", "")], bodies["real"]
    # the operator's way to write status (merge patch of the status subresource) makes it the owner of the
    # phase; an apply of the status subresource by another manager then conflicts, unless forced
    bodies = await step(servers, "status-merge-patch", "PATCH", f"{path}/status", {"status": {"phase": "pending"}},
                        MERGE, expect=200)
    assert ("Python", "Update", "status") in managers(bodies["real"]), bodies["real"]
    status_apply = {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "NodeClaim",
                    "metadata": {"name": "diff-apply"}, "status": {"phase": "booting"}}
    await step(servers, "apply-status-conflict", "PATCH", f"{path}/status?fieldManager=other", status_apply, APPLY,
               expect=409, known=OWNERSHIP)
    bodies = await step(servers, "apply-status-forced", "PATCH", f"{path}/status?fieldManager=other&force=true",
                        status_apply, APPLY, expect=200)
    assert _fields(bodies, "status", "phase") == {"real": "booting", "lab": "booting"}
    assert _fields(bodies, "spec", "requestedBy") == {"real": "carol", "lab": "carol"}  # status apply: spec kept


async def test_patch_kinds_on_our_resources_alike(servers: dict[str, Rest]) -> None:
    await step(servers, "create", "POST", CLAIMS, _claim("diff-patch"), expect=201)
    path = f"{CLAIMS}/diff-patch"
    await step(servers, "strategic-merge-on-a-custom-resource", "PATCH", path, {"spec": {"requestedBy": "x"}},
               STRATEGIC, expect=415)
    rv = {}
    for server, rest in servers.items():
        rv[server] = (await rest.request("GET", path))[1]["metadata"]["resourceVersion"]
    # the recorder's conditional merge patch: on the current resourceVersion it lands, on a stale one 409
    for server, rest in servers.items():
        status, out = await rest.request("PATCH", path, {"metadata": {"resourceVersion": rv[server]},
                                                         "spec": {"requestedBy": "bob"}}, content_type=MERGE)
        assert status == 200 and out["spec"]["requestedBy"] == "bob", (server, out)
    await step(servers, "merge-patch-stale", "PATCH", path,
               {"metadata": {"resourceVersion": "1"}, "spec": {"requestedBy": "carol"}}, MERGE, expect=409)
    await step(servers, "merge-patch-labels", "PATCH", path, {"metadata": {"labels": {"a": "1", "b": "2"}}}, MERGE,
               expect=200)
    bodies = await step(servers, "merge-patch-null", "PATCH", path, {"metadata": {"labels": {"a": None}}}, MERGE,
                        expect=200)
    assert _fields(bodies, "metadata", "labels") == {"real": {"b": "2"}, "lab": {"b": "2"}}
    bodies = await step(servers, "merge-patch-removes-the-last-label", "PATCH", path,
                        {"metadata": {"labels": {"b": None}}}, MERGE, expect=200)
    assert _fields(bodies, "metadata", "labels") == {"real": None, "lab": None}  # no empty map left behind
    # kopf-style guard: JSON patch whose `test` fails is refused whole
    await step(servers, "json-patch-test-fails", "PATCH", path,
               [{"op": "test", "path": "/metadata/resourceVersion", "value": "1"},
                {"op": "replace", "path": "/spec/requestedBy", "value": "dave"}], JSON_PATCH, expect=422)
    await step(servers, "json-patch-test-of-a-missing-field", "PATCH", path,
               [{"op": "test", "path": "/spec/nope", "value": 1}], JSON_PATCH, expect=422)
    bodies = await step(servers, "json-patch-test-passes", "PATCH", path,
                        [{"op": "test", "path": "/spec/requestedBy", "value": "bob"},
                         {"op": "replace", "path": "/spec/requestedBy", "value": "dave"}], JSON_PATCH, expect=200)
    assert _fields(bodies, "spec", "requestedBy") == {"real": "dave", "lab": "dave"}


async def _conditional_patch(rest: Rest, path: str, patch: dict[str, Any]) -> dict[str, Any]:
    """A strategic merge patch carrying the resourceVersion just read, read again and resent after a 409, as
    the operator does (on the real side kube-controller-manager's node lifecycle controller may write the Node
    in between)."""
    for _ in range(20):
        _, current = await rest.request("GET", path)
        body = copy.deepcopy(patch)
        body["metadata"]["resourceVersion"] = current["metadata"]["resourceVersion"]
        status, out = await rest.request("PATCH", path, body, content_type=STRATEGIC)
        if status != 409:
            assert status == 200, out
            return out
    raise AssertionError(f"{path}: 20 conflicts in a row")


def _ours_meta(node: dict[str, Any], field: str) -> dict[str, str] | None:
    """A Node's labels or annotations without those the real control plane writes itself (kube-controller-manager's
    TTL controller annotates `node.alpha.kubernetes.io/ttl`; docs/lab.md)."""
    return {k: v for k, v in (node["metadata"].get(field) or {}).items() if "kubernetes.io/" not in k} or None


def _ours(spec: dict[str, Any]) -> dict[str, Any]:
    """A Node's spec without the taints the real control plane adds itself (`node.kubernetes.io/not-ready` by
    the TaintNodesByCondition admission plugin and the node lifecycle controller; docs/lab.md)."""
    return {**spec, "taints": [t for t in spec.get("taints") or [] if not t["key"].startswith("node.kubernetes.io/")]}


async def test_strategic_merge_patches_of_nodes_alike(servers: dict[str, Rest]) -> None:
    """The readiness gate's and the cordon's patches (homecluster.lifecycle.gate), conditional on the
    resourceVersion, on a Node carrying cluster-autoscaler's taint and a pool taint."""
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "diff-smp", "labels": {"pool": "a"}},
            "spec": {"taints": [{"key": "ToBeDeletedByClusterAutoscaler", "value": "1", "effect": "NoSchedule"},
                                {"key": "example.dev/not-ready", "effect": "NoExecute"}]}}
    await step(servers, "create-node", "POST", "/api/v1/nodes", node, expect=201)
    path = "/api/v1/nodes/diff-smp"
    cordon = {"metadata": {"annotations": {"homecluster.dev/cordoned-by": "homecluster"},
                           "labels": {"pool": None, "zone": "z"}}, "spec": {"unschedulable": True}}
    gate = {"metadata": {"annotations": {"homecluster.dev/cordoned-by": None}},
            "spec": {"unschedulable": False, "providerID": "homecluster://diff-smp",
                     "taints": [{"key": "example.dev/not-ready", "effect": "NoExecute"}]}}
    results = {}
    for server, rest in servers.items():
        cordoned = await _conditional_patch(rest, path, cordon)
        gated = await _conditional_patch(rest, path, gate)
        results[server] = (_ours_meta(cordoned, "labels"), _ours_meta(cordoned, "annotations"), _ours(cordoned["spec"]),
                           _ours_meta(gated, "annotations"), _ours(gated["spec"]))
    assert results["lab"] == results["real"], results
    await step(servers, "strategic-merge-stale", "PATCH", path,
               {"metadata": {"resourceVersion": "1"}, "spec": {"unschedulable": True}}, STRATEGIC, expect=409)
    # conditions are merged by type; a `$patch: delete` directive removes one
    bodies = await step(servers, "node-status-conditions", "PATCH", f"{path}/status", {"status": {"conditions": [
        {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"},
        {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory", "message": "ok"}]}},
        STRATEGIC, expect=200)
    bodies = await step(servers, "node-status-condition-merged", "PATCH", f"{path}/status", {"status": {"conditions": [
        {"type": "Ready", "status": "False", "reason": "KubeletNotReady", "message": "down"},
        {"type": "MemoryPressure", "$patch": "delete"}]}}, STRATEGIC, expect=200)
    conditions = {s: [(c["type"], c["status"], c["reason"]) for c in b["status"]["conditions"]]
                  for s, b in bodies.items()}
    assert conditions["real"] == [("Ready", "False", "KubeletNotReady")] and conditions["lab"] == conditions["real"]


async def test_strategic_merge_patch_of_a_pod_alike(servers: dict[str, Rest]) -> None:
    """A pod's containers and conditions merged by name and type (a kubelet's status, kubectl's patches).
    The pod is bound to a Node of its own at creation, so kube-scheduler writes none of its conditions."""
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "diff-smp-pod"},
           "spec": {"nodeName": "diff-smp-pod-node",
                    "containers": [{"name": "a", "image": "registry.invalid/a:1"},
                                   {"name": "b", "image": "registry.invalid/b:1"}]}}
    for server, rest in servers.items():
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 60
        while server == "real" and (await rest.request(  # the ServiceAccount admission plugin needs it
                "GET", "/api/v1/namespaces/default/serviceaccounts/default"))[0] != 200:
            assert loop.time() < deadline, "no default ServiceAccount"
            await asyncio.sleep(0.1)
    await step(servers, "create-pod-node", "POST", "/api/v1/nodes",
               {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "diff-smp-pod-node"}}, expect=201)
    await step(servers, "create-pod", "POST", "/api/v1/namespaces/default/pods", copy.deepcopy(pod), expect=201)
    path = "/api/v1/namespaces/default/pods/diff-smp-pod"
    bodies = await step(servers, "pod-image-by-name", "PATCH", path,
                        {"spec": {"containers": [{"name": "b", "image": "registry.invalid/b:2"}]}}, STRATEGIC,
                        expect=200)
    images = {s: [(c["name"], c["image"]) for c in b["spec"]["containers"]] for s, b in bodies.items()}
    assert images["real"] == [("a", "registry.invalid/a:1"), ("b", "registry.invalid/b:2")], images
    assert images["lab"] == images["real"], images
    await step(servers, "pod-new-container", "PATCH", path,
               {"spec": {"containers": [{"name": "c", "image": "registry.invalid/c:1"}]}}, STRATEGIC, expect=422,
               known=POD_UPDATES)
    bodies = await step(servers, "pod-status-conditions", "PATCH", f"{path}/status", {"status": {
        "phase": "Running", "conditions": [{"type": "Ready", "status": "True"},
                                           {"type": "PodScheduled", "status": "True"}]}}, STRATEGIC, expect=200)
    bodies = await step(servers, "pod-status-condition-merged", "PATCH", f"{path}/status", {"status": {
        "conditions": [{"type": "Ready", "status": "False"}]}}, STRATEGIC, expect=200)
    conditions = {s: sorted((c["type"], c["status"]) for c in b["status"]["conditions"]) for s, b in bodies.items()}
    assert conditions["real"] == [("PodScheduled", "True"), ("Ready", "False")], conditions
    assert conditions["lab"] == conditions["real"], conditions
