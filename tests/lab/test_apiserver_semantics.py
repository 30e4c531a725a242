"""Object semantics over real HTTP: resourceVersions, conflicts, status subresource, generation, errors,
finalizers, garbage collection, dryRun and generateName. Raw aiohttp so the exact answers are visible."""
from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest
from support.waits import until

pytestmark = pytest.mark.lab
W = "/apis/lab.homecluster.dev/v1/widgets"
MERGE = {"Content-Type": "application/merge-patch+json"}
JSONPATCH = {"Content-Type": "application/json-patch+json"}


@pytest.fixture
async def http(lab_api):
    async with aiohttp.ClientSession(lab_api.url) as session:
        async def call(method: str, path: str, body=None, headers=None, raw: bytes | None = None):
            data = raw if raw is not None else (json.dumps(body) if body is not None else None)
            async with session.request(method, path, data=data, headers=headers or {}) as resp:
                return resp.status, await resp.json()
        yield call


def widget(name: str, size: int = 1, **meta):
    return {"apiVersion": "lab.homecluster.dev/v1", "kind": "Widget", "metadata": {"name": name, **meta},
            "spec": {"size": size}}


async def test_create_stamps_identity_and_rejects_duplicates(http, widgets):
    code, obj = await http("POST", W, widget("a"))
    assert code == 201
    md = obj["metadata"]
    assert md["uid"] and md["creationTimestamp"].endswith("Z") and md["generation"] == 1
    assert int(md["resourceVersion"]) > 0
    code, err = await http("POST", W, widget("a"))
    assert (code, err["reason"]) == (409, "AlreadyExists")
    assert err["message"] == 'widgets.lab.homecluster.dev "a" already exists'
    assert err["details"] == {"name": "a", "group": "lab.homecluster.dev", "kind": "widgets"}
    assert err["kind"] == "Status" and err["apiVersion"] == "v1" and err["status"] == "Failure"
    code, err = await http("GET", W + "/nope")
    assert (code, err["message"]) == (404, 'widgets.lab.homecluster.dev "nope" not found')
    code, err = await http("GET", "/api/v1/namespaces/default/pods/nope")
    assert (code, err["message"], err["details"]) == (404, 'pods "nope" not found', {"name": "nope", "kind": "pods"})


async def test_stale_resource_version_conflicts(http, widgets):
    _, obj = await http("POST", W, widget("a"))
    stale = obj["metadata"]["resourceVersion"]
    code, _ = await http("PATCH", W + "/a", {"spec": {"size": 2}}, MERGE)
    assert code == 200
    code, err = await http("PATCH", W + "/a", {"metadata": {"resourceVersion": stale}, "spec": {"size": 3}}, MERGE)
    assert (code, err["reason"]) == (409, "Conflict")
    assert err["message"] == ('Operation cannot be fulfilled on widgets.lab.homecluster.dev "a": the object has been '
                              'modified; please apply your changes to the latest version and try again')
    obj["spec"]["size"] = 4
    code, err = await http("PUT", W + "/a", obj)
    assert code == 409
    # a JSON patch whose `test` fails answers 422, which kopf relies on
    code, err = await http("PATCH", W + "/a", [{"op": "test", "path": "/metadata/resourceVersion", "value": stale},
                                                {"op": "add", "path": "/metadata/finalizers", "value": ["x"]}],
                           JSONPATCH)
    assert (code, err["reason"]) == (422, "Invalid")
    _, current = await http("GET", W + "/a")
    assert current["spec"]["size"] == 2 and "finalizers" not in current["metadata"]


async def test_status_subresource_isolation_and_generation(http, widgets):
    _, obj = await http("POST", W, {**widget("a"), "status": {"phase": "ignored-on-create"}})
    assert "status" not in obj and obj["metadata"]["generation"] == 1
    code, obj = await http("PATCH", W + "/a/status", {"status": {"phase": "Ready"}, "spec": {"size": 9}}, MERGE)
    assert code == 200
    assert obj["status"] == {"phase": "Ready"} and obj["spec"]["size"] == 1
    assert obj["metadata"]["generation"] == 1  # status writes do not bump generation
    code, obj = await http("PATCH", W + "/a", {"status": {"phase": "Hacked"}, "metadata": {"labels": {"x": "y"}}},
                           MERGE)
    assert obj["status"] == {"phase": "Ready"} and obj["metadata"]["labels"] == {"x": "y"}
    assert obj["metadata"]["generation"] == 1  # metadata-only change
    code, obj = await http("PATCH", W + "/a", {"spec": {"size": 5}}, MERGE)
    assert obj["metadata"]["generation"] == 2
    rv = obj["metadata"]["resourceVersion"]
    code, obj = await http("PATCH", W + "/a", {"spec": {"size": 5}}, MERGE)
    assert obj["metadata"]["resourceVersion"] == rv  # a no-op write stores nothing


async def test_validation_errors_name_fields(http, widgets):
    code, err = await http("POST", W, {**widget("bad"), "spec": {"size": "big", "color": "green"}})
    assert (code, err["reason"]) == (422, "Invalid")
    assert err["message"].startswith('Widget.lab.homecluster.dev "bad" is invalid: [')
    fields = {c["field"] for c in err["details"]["causes"]}
    assert {"spec.size", "spec.color"} <= fields
    code, err = await http("POST", W, {**widget("bad"), "spec": {}})
    assert code == 422 and err["details"]["causes"][0]["field"] == "spec.size"
    assert err["details"]["causes"][0]["reason"] == "FieldValueRequired"
    code, err = await http("POST", W, widget("Not_A_Name"))
    assert code == 422 and "a lowercase RFC 1123 subdomain" in err["message"]
    # the status subresource is validated against the schema too
    await http("POST", W, widget("ok"))
    code, err = await http("PATCH", W + "/ok/status", {"status": {"phase": 7}}, MERGE)
    assert code == 422 and err["details"]["causes"][0]["field"] == "status.phase"


async def test_namespaces_must_exist(http, lab_api):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c"}}
    code, err = await http("POST", "/api/v1/namespaces/missing/configmaps", cm)
    assert (code, err["message"]) == (404, 'namespaces "missing" not found')
    code, _ = await http("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace",
                                                       "metadata": {"name": "team"}})
    assert code == 201
    code, obj = await http("POST", "/api/v1/namespaces/team/configmaps", cm)
    assert code == 201 and obj["metadata"]["namespace"] == "team"
    code, ns = await http("DELETE", "/api/v1/namespaces/team")
    assert code == 200 and ns["status"]["phase"] == "Terminating"
    code, err = await http("POST", "/api/v1/namespaces/team/configmaps", {**cm, "metadata": {"name": "d"}})
    assert code == 403 and "because it is being terminated" in err["message"]
    await until(lambda: lab_api.get("namespaces", "team") is None, "namespace team to be gone", 5)
    assert lab_api.get("configmaps", "c", "team") is None


async def test_finalizers_hold_deletion(http, widgets, lab_api):
    await http("POST", W, widget("a", finalizers=["lab/one", "lab/two"]))
    code, obj = await http("DELETE", W + "/a")
    assert code == 200 and obj["metadata"]["deletionTimestamp"]
    assert obj["metadata"]["generation"] == 2
    code, err = await http("PATCH", W + "/a", {"metadata": {"finalizers": ["lab/one", "lab/two", "lab/new"]}},
                           MERGE)
    assert code == 422 and "no new finalizers can be added" in err["message"]
    await http("PATCH", W + "/a", {"metadata": {"finalizers": ["lab/two"]}}, MERGE)
    assert lab_api.get(widgets, "a") is not None
    code, obj = await http("PATCH", W + "/a", [{"op": "remove", "path": "/metadata/finalizers"}], JSONPATCH)
    assert code == 200
    assert lab_api.get(widgets, "a") is None


async def test_owner_references_are_garbage_collected(http, widgets, lab_api):
    _, owner = await http("POST", W, widget("claim"))
    ref = {"apiVersion": "lab.homecluster.dev/v1", "kind": "Widget", "name": "claim",
           "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}
    _, job = await http("POST", "/apis/batch/v1/namespaces/default/jobs", {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "startup", "ownerReferences": [ref]},
        "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}})
    job_ref = {"apiVersion": "batch/v1", "kind": "Job", "name": "startup", "uid": job["metadata"]["uid"],
               "controller": True}
    await http("POST", "/api/v1/namespaces/default/pods", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "startup-x", "ownerReferences": [job_ref]},
        "spec": {"containers": [{"name": "c", "image": "x"}]}})
    await http("POST", "/api/v1/namespaces/default/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "orphan-me", "ownerReferences": [ref]}})
    await http("DELETE", W + "/claim")
    await until(lambda: lab_api.get("pods", "startup-x", "default") is None, "pod startup-x to be gone", 5)
    assert lab_api.get("jobs", "startup", "default") is None
    assert lab_api.get("configmaps", "orphan-me", "default") is None
    gc_deletes = lab_api.audit.select(verbs=["delete"], user_agent="lab-controller-manager")
    assert {e.resource for e in gc_deletes} == {"jobs", "pods", "configmaps"}


async def test_orphan_and_foreground_propagation(http, widgets, lab_api):
    _, owner = await http("POST", W, widget("o"))
    ref = {"apiVersion": "lab.homecluster.dev/v1", "kind": "Widget", "name": "o", "uid": owner["metadata"]["uid"]}
    await http("POST", "/api/v1/namespaces/default/configmaps",
               {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kept", "ownerReferences": [ref]}})
    await http("DELETE", W + "/o", {"propagationPolicy": "Orphan"})
    await asyncio.sleep(0.2)
    kept = lab_api.get("configmaps", "kept", "default")
    assert kept is not None and "ownerReferences" not in kept["metadata"]

    _, owner = await http("POST", W, widget("f"))
    ref = {"apiVersion": "lab.homecluster.dev/v1", "kind": "Widget", "name": "f", "uid": owner["metadata"]["uid"]}
    await http("POST", "/api/v1/namespaces/default/configmaps", {
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": {"name": "dep", "ownerReferences": [ref], "finalizers": ["lab/slow"]}})
    code, obj = await http("DELETE", W + "/f?propagationPolicy=Foreground")
    assert "foregroundDeletion" in obj["metadata"]["finalizers"]
    await until(lambda: lab_api.get("configmaps", "dep", "default")["metadata"].get("deletionTimestamp"),
                "configmap dep to be marked deleted", 5)
    assert lab_api.get(widgets, "f") is not None  # waits for its dependent
    await lab_api.patch("configmaps", "dep", {"metadata": {"finalizers": None}}, namespace="default")
    await until(lambda: lab_api.get(widgets, "f") is None, "widget f to be gone", 5)


async def test_dry_run_stores_nothing(http, widgets, lab_api):
    rv = lab_api.store.rv
    code, obj = await http("POST", W + "?dryRun=All", widget("dry"))
    assert code == 201 and obj["metadata"]["uid"] and obj["spec"]["color"] == "red"
    assert lab_api.get(widgets, "dry") is None
    await http("POST", W, widget("real"))
    code, obj = await http("PATCH", W + "/real?dryRun=All", {"spec": {"size": 7}}, MERGE)
    assert code == 200 and obj["spec"]["size"] == 7
    code, _ = await http("DELETE", W + "/real?dryRun=All")
    assert code == 200
    assert lab_api.get(widgets, "real")["spec"]["size"] == 1
    assert lab_api.store.rv == rv + 1
    code, err = await http("POST", W + "?dryRun=All", {**widget("bad"), "spec": {"size": -1}})
    assert code == 422
    assert [e.dry_run for e in lab_api.audit.writes(include_dry_run=True) if e.resource == "widgets"] == \
        [True, False, True, True, True]


async def test_generate_name_and_put_and_delete_collection(http, widgets, lab_api):
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"generateName": "job-", "labels": {"k": "v"}}}
    names = set()
    for _ in range(3):
        code, obj = await http("POST", "/api/v1/namespaces/default/configmaps", cm)
        assert code == 201 and obj["metadata"]["name"].startswith("job-") and len(obj["metadata"]["name"]) == 9
        names.add(obj["metadata"]["name"])
    assert len(names) == 3
    name = names.pop()
    _, obj = await http("GET", f"/api/v1/namespaces/default/configmaps/{name}")
    obj["data"] = {"x": "1"}
    code, updated = await http("PUT", f"/api/v1/namespaces/default/configmaps/{name}", obj)
    assert code == 200 and updated["data"] == {"x": "1"}
    code, body = await http("DELETE", "/api/v1/namespaces/default/configmaps?labelSelector=k%3Dv")
    assert code == 200 and body["kind"] == "ConfigMapList" and len(body["items"]) == 3
    assert lab_api.list("configmaps", "default") == []


async def test_lists_and_selectors(http, lab_api, objs):
    for i, (n, zone) in enumerate((("n1", "a"), ("n2", "b"), ("n3", None))):
        labels = {"zone": zone} if zone else {}
        await lab_api.create(objs.node(n, **labels))
    await lab_api.create(objs.pod("p1", "n1"), keep_status=True)
    await lab_api.create(objs.pod("p2", "n2", phase="Pending"), keep_status=True)

    async def names(path):
        code, body = await http("GET", path)
        assert code == 200
        return [o["metadata"]["name"] for o in body["items"]], body

    found, body = await names("/api/v1/nodes")
    assert found == ["n1", "n2", "n3"]
    assert body["kind"] == "NodeList" and body["apiVersion"] == "v1" and body["metadata"]["resourceVersion"]
    assert (await names("/api/v1/nodes?labelSelector=zone%3Da"))[0] == ["n1"]
    assert (await names("/api/v1/nodes?labelSelector=zone%3D%3Da"))[0] == ["n1"]
    assert (await names("/api/v1/nodes?labelSelector=zone!%3Da"))[0] == ["n2", "n3"]
    assert (await names("/api/v1/nodes?labelSelector=zone+in+(a,b)"))[0] == ["n1", "n2"]
    assert (await names("/api/v1/nodes?labelSelector=zone+notin+(a)"))[0] == ["n2", "n3"]
    assert (await names("/api/v1/nodes?labelSelector=zone"))[0] == ["n1", "n2"]
    assert (await names("/api/v1/nodes?labelSelector=!zone"))[0] == ["n3"]
    assert (await names("/api/v1/pods?fieldSelector=spec.nodeName%3Dn2"))[0] == ["p2"]
    assert (await names("/api/v1/pods?fieldSelector=status.phase!%3DPending"))[0] == ["p1"]
    assert (await names("/api/v1/nodes?fieldSelector=metadata.name%3Dn3"))[0] == ["n3"]
    assert (await names("/api/v1/namespaces/kube-system/pods"))[0] == []
