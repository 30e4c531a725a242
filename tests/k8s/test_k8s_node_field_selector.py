"""What our kubelets rely on, on both servers alike: the pods of one node, by `fieldSelector=spec.nodeName=`.

The runner node (homecluster_lab.executor.runnernode) may list and watch only the pods bound to it — the
real Node authorizer refuses a node's list or watch of pods without that selector — and `kubectl drain`
(the shutdown Job's cordon-and-drain) lists a node's pods the same way. The in-memory server must filter
alike: the same pods listed, the same events watched, the same refusal of a field it does not index.
"""
from __future__ import annotations

import asyncio
import time

import pytest
from k8s_rest import Rest, watch_events

pytestmark = pytest.mark.asyncio(loop_scope="module")
NS = "field-selector"


def _pod(name: str, node: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": NS},
            "spec": {"nodeName": node, "containers": [{"name": "c", "image": "lab.invalid/none:0"}]}}


async def _prepare(rest: Rest, real: bool) -> None:
    status, body = await rest.request("POST", "/api/v1/namespaces", {
        "apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}})
    assert status in (201, 409), body
    # kube-controller-manager makes the namespace's `default` ServiceAccount a moment after the namespace; until
    # then the ServiceAccount admission plugin refuses pods (403): wait for the account, not for time (the
    # in-memory server has neither the controller nor the plugin)
    deadline = time.monotonic() + 60
    while real and (await rest.request("GET", f"/api/v1/namespaces/{NS}/serviceaccounts/default"))[0] != 200:
        assert time.monotonic() < deadline, "no default ServiceAccount"
        await asyncio.sleep(0.1)
    for name, node in (("a-1", "node-a"), ("a-2", "node-a"), ("b-1", "node-b")):
        status, body = await rest.request("POST", f"/api/v1/namespaces/{NS}/pods", _pod(name, node))
        assert status == 201, body


async def test_pods_of_one_node_list_and_watch_alike(real_rest: Rest, lab_rest: Rest) -> None:
    answers = {}
    for server, rest in (("real", real_rest), ("lab", lab_rest)):
        await _prepare(rest, server == "real")
        status, listing = await rest.request("GET", "/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a")
        assert status == 200, listing
        names = sorted(p["metadata"]["name"] for p in listing["items"])
        rv = listing["metadata"]["resourceVersion"]
        for name, node in (("a-3", "node-a"), ("b-2", "node-b")):
            status, body = await rest.request("POST", f"/api/v1/namespaces/{NS}/pods", _pod(name, node))
            assert status == 201, body
        events = await watch_events(rest, f"/api/v1/pods?fieldSelector=spec.nodeName%3Dnode-a&watch=1"
                                          f"&resourceVersion={rv}&timeoutSeconds=2", stop_after=10)
        watched = [(e["type"], e["object"]["metadata"]["name"]) for e in events if e["type"] != "BOOKMARK"]
        status, refusal = await rest.request("GET", "/api/v1/pods?fieldSelector=spec.image%3Dx")
        answers[server] = (names, watched, status, refusal.get("reason"), refusal.get("message"))
    assert answers["real"][:2] == (["a-1", "a-2"], [("ADDED", "a-3")]), answers
    assert answers["lab"] == answers["real"], answers
