"""Issue 12's differential suite, deletion: propagation (foreground, orphan, background) and preconditions,
the same requests against kube-apiserver and the lab's in-memory API server (k8s_compare.step).

What the product sends: the operator deletes a claim conditional on its resourceVersion (the provider's
DeleteNodes, homecluster.operator.providerglue) and with Background propagation (homecluster.lifecycle.collection),
and its Jobs with Background (or Foreground) propagation (homecluster.lifecycle.jobio). On the real side
kube-controller-manager's garbage collector does the propagation; on the in-memory one its own collector.
"""
from __future__ import annotations

from typing import Any

import pytest
from k8s_compare import MERGE, step
from k8s_objects import API, sample
from k8s_rest import Rest
from support.waits import until

pytestmark = pytest.mark.asyncio(loop_scope="module")

CLAIMS = f"{API}/nodeclaims"
CONFIGMAPS = "/api/v1/namespaces/default/configmaps"
HOLD = "example.dev/hold"


def _claim(name: str) -> dict[str, Any]:
    claim = sample("infra_v2alpha1_nodeclaim.yaml")
    claim["metadata"] = {"name": name}
    return claim




async def _owner_and_dependent(rest: Rest, owner: str, dependent: str, *, block: bool = False,
                               finalizers: list[str] | None = None) -> None:
    """Two ConfigMaps, one owning the other. (Built-in kinds: kube-controller-manager's collector watches them
    from its start, where it learns a new custom resource only at its next discovery, up to 30 s later; the
    propagation is the same whatever the owner's kind, and test_k8s_differential.py has a claim's.)"""
    status, made = await rest.request("POST", CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                                           "metadata": {"name": owner}})
    assert status == 201, made
    ref = {"apiVersion": "v1", "kind": "ConfigMap", "name": owner, "uid": made["metadata"]["uid"]}
    if block:
        ref["blockOwnerDeletion"] = True
    metadata: dict[str, Any] = {"name": dependent, "ownerReferences": [ref]}
    if finalizers:
        metadata["finalizers"] = finalizers
    status, out = await rest.request("POST", CONFIGMAPS, {"apiVersion": "v1", "kind": "ConfigMap",
                                                         "metadata": metadata})
    assert status == 201, out


def _deleting(body: dict[str, Any]) -> tuple:
    """What a delete's answer says about the object: its kind, finalizers, whether it is being deleted."""
    md = body.get("metadata") or {}
    return body.get("kind"), md.get("finalizers"), bool(md.get("deletionTimestamp"))


async def test_preconditions_that_do_not_match_alike(servers: dict[str, Rest]) -> None:
    await step(servers, "create", "POST", CLAIMS, _claim("diff-pre"), expect=201)
    await step(servers, "create-configmap", "POST", CONFIGMAPS,
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "diff-pre"}}, expect=201)
    for path in (f"{CLAIMS}/diff-pre", f"{CONFIGMAPS}/diff-pre"):
        await step(servers, f"uid {path}", "DELETE", path,
                   {"preconditions": {"uid": "00000000-0000-0000-0000-000000000000"}}, expect=409)
        await step(servers, f"resourceVersion {path}", "DELETE", path, {"preconditions": {"resourceVersion": "1"}},
                   expect=409, numbers=True)
    # the provider's delete: conditional on the resourceVersion it decided on; a custom resource deleted at
    # once answers a Status (the operator's client reads either)
    answers = {}
    for server, rest in servers.items():
        _, current = await rest.request("GET", f"{CLAIMS}/diff-pre")
        status, out = await rest.request("DELETE", f"{CLAIMS}/diff-pre", {
            "preconditions": {"resourceVersion": current["metadata"]["resourceVersion"],
                              "uid": current["metadata"]["uid"]}})
        assert status == 200 and (await rest.request("GET", f"{CLAIMS}/diff-pre"))[0] == 404, (server, out)
        answers[server] = (_deleting(out), out.get("status"), out.get("details", {}).get("kind"))
    assert answers["real"] == (("Status", None, False), "Success", "nodeclaims"), answers
    assert answers["lab"] == answers["real"], answers


async def test_foreground_deletion_waits_for_blocking_dependents_alike(servers: dict[str, Rest]) -> None:
    """The owner is kept (finalizer `foregroundDeletion`) while a dependent with blockOwnerDeletion exists;
    the collector deletes the dependent; the owner goes once the dependent is gone."""
    for rest in servers.values():
        await _owner_and_dependent(rest, "diff-fg", "diff-fg-dep", block=True, finalizers=[HOLD])
    bodies = await step(servers, "delete-foreground", "DELETE", f"{CONFIGMAPS}/diff-fg",
                        {"propagationPolicy": "Foreground"}, expect=200)
    assert {s: _deleting(b) for s, b in bodies.items()} == {
        "real": ("ConfigMap", ["foregroundDeletion"], True), "lab": ("ConfigMap", ["foregroundDeletion"], True)}
    for server, rest in servers.items():
        async def dependent_deleting():
            _, dep = await rest.request("GET", f"{CONFIGMAPS}/diff-fg-dep")
            return dep["metadata"].get("deletionTimestamp")
        await until(dependent_deleting, f"{server}: the collector to delete the dependent", 60)
        status, owner = await rest.request("GET", f"{CONFIGMAPS}/diff-fg")
        assert status == 200 and owner["metadata"]["finalizers"] == ["foregroundDeletion"], (server, owner)
    await step(servers, "release-dependent", "PATCH", f"{CONFIGMAPS}/diff-fg-dep", {"metadata": {"finalizers": None}},
               MERGE, expect=200)
    for server, rest in servers.items():
        async def owner_gone():
            return (await rest.request("GET", f"{CONFIGMAPS}/diff-fg"))[0] == 404
        await until(owner_gone, f"{server}: the owner to go after its dependent", 60)


async def test_orphan_deletion_keeps_dependents_alike(servers: dict[str, Rest]) -> None:
    """The owner is kept (finalizer `orphan`) until the collector has removed its ownerReferences from the
    dependents; the dependents stay."""
    for rest in servers.values():
        await _owner_and_dependent(rest, "diff-orphan", "diff-orphan-dep")
    bodies = await step(servers, "delete-orphan", "DELETE", f"{CONFIGMAPS}/diff-orphan",
                        {"propagationPolicy": "Orphan"}, expect=200)
    assert {s: _deleting(b) for s, b in bodies.items()} == {
        "real": ("ConfigMap", ["orphan"], True), "lab": ("ConfigMap", ["orphan"], True)}, bodies
    for server, rest in servers.items():
        async def owner_gone():
            return (await rest.request("GET", f"{CONFIGMAPS}/diff-orphan"))[0] == 404
        await until(owner_gone, f"{server}: the orphaning owner to go", 60)
        status, dep = await rest.request("GET", f"{CONFIGMAPS}/diff-orphan-dep")
        assert status == 200 and not dep["metadata"].get("ownerReferences"), (server, dep)


async def test_background_deletion_alike(servers: dict[str, Rest]) -> None:
    """The owner goes at once; the collector deletes the dependent after."""
    for rest in servers.values():
        await _owner_and_dependent(rest, "diff-bg", "diff-bg-dep")
    bodies = await step(servers, "delete-background", "DELETE", f"{CONFIGMAPS}/diff-bg",
                        {"propagationPolicy": "Background"}, expect=200)
    assert {s: _deleting(b) for s, b in bodies.items()} == {
        "real": ("Status", None, False), "lab": ("Status", None, False)}, bodies
    await step(servers, "owner-gone", "GET", f"{CONFIGMAPS}/diff-bg", expect=404)
    for server, rest in servers.items():
        async def dependent_gone():
            return (await rest.request("GET", f"{CONFIGMAPS}/diff-bg-dep"))[0] == 404
        await until(dependent_gone, f"{server}: the collector to delete the dependent", 60)
