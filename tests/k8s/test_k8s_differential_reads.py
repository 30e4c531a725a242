"""Issue 12's differential suite, reads: field selectors beyond a node's pods and 410 Gone, the same requests
against kube-apiserver and the lab's in-memory API server (k8s_compare.step).

The field selectors are those the product sends: the operator lists a pending pod's Events by
`involvedObject.kind=Pod,involvedObject.name=<pod>` (homecluster.lifecycle.jobpods), the kubelets and the
drain list pods by `spec.nodeName` (test_k8s_node_field_selector.py); `metadata.name` is what kubectl sends for
`kubectl get <kind> <name> --watch`; a field our CRDs do not declare selectable is refused.
"""
from __future__ import annotations

import asyncio
from typing import Any

import pytest
from k8s_compare import answer, step
from k8s_objects import API, sample
from k8s_rest import Rest, watch_events

from homecluster_lab.apiserver import LabAPIServer

pytestmark = pytest.mark.asyncio(loop_scope="module")

CLAIMS = f"{API}/nodeclaims"
EVENTS = "/api/v1/namespaces/default/events"


def _claim(name: str) -> dict[str, Any]:
    claim = sample("infra_v2alpha1_nodeclaim.yaml")
    claim["metadata"] = {"name": name}
    return claim


def _event(name: str, kind: str, about: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Event", "metadata": {"name": name, "namespace": "default"},
            "involvedObject": {"kind": kind, "name": about, "namespace": "default"},
            "reason": "FailedScheduling", "message": "0/1 nodes are available", "type": "Warning"}


async def _names(servers: dict[str, Rest], path: str) -> dict[str, list[str]]:
    out = {}
    for server, rest in servers.items():
        status, listing = await rest.request("GET", path)
        assert status == 200, (server, path, listing)
        out[server] = sorted(o["metadata"]["name"] for o in listing["items"])
    return out


async def test_field_selectors_select_and_refuse_alike(servers: dict[str, Rest]) -> None:
    for name in ("diff-fields-a", "diff-fields-b"):
        await step(servers, "create-claim", "POST", CLAIMS, _claim(name), expect=201)
    for name, kind, about in (("diff-ev-1", "Pod", "job-pod-1"), ("diff-ev-2", "Pod", "job-pod-2"),
                              ("diff-ev-3", "Node", "job-pod-1")):
        await step(servers, "create-event", "POST", EVENTS, _event(name, kind, about), expect=201)
    # the operator's question: the Events about one pod
    names = await _names(servers, f"{EVENTS}?fieldSelector=involvedObject.kind%3DPod,involvedObject.name%3Djob-pod-1")
    assert names["real"] == ["diff-ev-1"] and names["lab"] == names["real"], names
    names = await _names(servers,
                         f"{EVENTS}?fieldSelector=involvedObject.name%21%3Djob-pod-1,reason%3DFailedScheduling")
    assert names["real"] == ["diff-ev-2"] and names["lab"] == names["real"], names
    names = await _names(servers, f"{CLAIMS}?fieldSelector=metadata.name%3Ddiff-fields-a")
    assert names["real"] == ["diff-fields-a"] and names["lab"] == names["real"], names
    names = await _names(servers, f"{CLAIMS}?fieldSelector=metadata.name%21%3Ddiff-fields-a")
    assert "diff-fields-b" in names["real"] and names["lab"] == names["real"], names
    # refused: a field our CRDs do not declare selectable, metadata.namespace of a cluster-scoped kind,
    # an Event field that is not indexed, and a ConfigMap's data
    for path in (f"{CLAIMS}?fieldSelector=spec.slotRef%3Dworker-01",
                 f"{CLAIMS}?fieldSelector=status.phase%3Dready",
                 f"{CLAIMS}?fieldSelector=metadata.namespace%3Ddefault",
                 f"{EVENTS}?fieldSelector=involvedObject.bogus%3Dx",
                 "/api/v1/namespaces/default/configmaps?fieldSelector=data.x%3Dy"):
        await step(servers, f"refused {path}", "GET", path, expect=400)
    # a watch is refused alike (before it starts: a 400, not an ERROR event)
    await step(servers, "refused-watch", "GET", f"{CLAIMS}?watch=1&fieldSelector=spec.slotRef%3Dx&timeoutSeconds=1",
               expect=400)


async def test_a_watch_from_a_compacted_resource_version_is_gone_alike(servers: dict[str, Rest],
                                                                      lab_api: LabAPIServer) -> None:
    """A watch from a resourceVersion the server no longer keeps: HTTP 200, then one ERROR event carrying a
    410 Status (reason Expired, `too old resource version: <asked> (<oldest kept>)`), then the end.

    The same resourceVersion is asked of both: one from before the claims' CRD existed. kube-apiserver no longer
    keeps it (its watch cache starts at the resource's first list, and the watch is served from that cache
    whatever etcd still holds); on the in-memory server the history is compacted first (`LabAPIServer.compact`,
    as the lab's fault tests do). The numbers in the message are each server's own, so they are normalised."""
    old = "2"
    bodies = await step(servers, "create", "POST", CLAIMS, _claim("diff-gone"), expect=201)
    assert all(int(b["metadata"]["resourceVersion"]) > int(old) for b in bodies.values()), bodies
    lab_api.compact()
    seen = {}
    for server, rest in servers.items():
        events = await watch_events(rest, f"{CLAIMS}?watch=1&resourceVersion={old}&timeoutSeconds=2",
                                    stop_after=20)
        seen[server] = [(e["type"], answer(e["object"]["code"], e["object"], numbers=True)) for e in events]
    assert seen["real"] == [("ERROR", (410, "Expired", "too old resource version: <n> (<n>)", []))], seen
    assert seen["lab"] == seen["real"], seen
    # the same watch from the list's resourceVersion starts (what a client does after a 410: list, watch again)
    for server, rest in servers.items():
        status, listing = await rest.request("GET", CLAIMS)
        assert status == 200, listing
        rv = listing["metadata"]["resourceVersion"]
        watching = asyncio.create_task(watch_events(rest, f"{CLAIMS}?watch=1&resourceVersion={rv}&timeoutSeconds=1",
                                                    stop_after=20))
        status, _ = await rest.request("DELETE", f"{CLAIMS}/diff-gone")
        assert status == 200
        seen[server + "-after"] = [(e["type"], e["object"]["metadata"]["name"]) for e in await watching]
    assert seen["real-after"] == [("DELETED", "diff-gone")] and seen["lab-after"] == seen["real-after"], seen
