"""A minimal kopf operator against the lab: discovery, list+watch, finalizers (kopf's JSON patch guarded by a
`test` of the resourceVersion), status patches through /status, events, and recovery from injected faults."""
from __future__ import annotations

import asyncio
import threading

import kopf
import pytest
from support.waits import until

pytestmark = pytest.mark.lab
FINALIZER = "lab.homecluster.dev/kopf-smoke"


@pytest.fixture
async def operator(lab_api, widgets):
    registry = kopf.OperatorRegistry()
    seen: dict[str, list[str]] = {"created": [], "deleted": []}

    @kopf.on.startup(registry=registry)
    def configure(settings: kopf.OperatorSettings, **_):
        settings.persistence.finalizer = FINALIZER
        settings.watching.server_timeout = 10
        settings.networking.error_backoffs = [0.1, 0.2]
        settings.queueing.idle_timeout = 0.1
        settings.posting.idle_timeout = 0.1  # event posters linger this long at shutdown

    @kopf.on.login(registry=registry)
    def login(**_):
        return kopf.ConnectionInfo(server=lab_api.url, insecure=True, scheme="Bearer", token="lab",
                                   default_namespace="default")

    @kopf.on.create("lab.homecluster.dev", "v1", "widgets", registry=registry)
    def created(name, body, patch, **_):
        seen["created"].append(name)
        kopf.info(body, reason="Seen", message="the lab saw it")
        patch.status["phase"] = "Seen"

    @kopf.on.delete("lab.homecluster.dev", "v1", "widgets", registry=registry)
    def deleted(name, **_):
        seen["deleted"].append(name)

    # kopf runs on a thread with its own loop, as `kopf run` would in its own process: kopf.operator() waits
    # for tasks spawned after it started to finish, which would include this fixture's own teardown task.
    stop, ready = threading.Event(), threading.Event()
    thread = threading.Thread(target=lambda: asyncio.run(kopf.operator(
        registry=registry, clusterwide=True, standalone=True, stop_flag=stop, ready_flag=ready)), daemon=True)
    thread.start()
    await asyncio.to_thread(ready.wait, 10)
    assert ready.is_set(), "kopf did not become ready"
    yield seen
    stop.set()
    await asyncio.to_thread(thread.join, 10)
    assert not thread.is_alive(), "kopf did not stop"


async def test_kopf_adds_finalizer_patches_status_and_releases(lab_api, widgets, operator):
    await lab_api.create({"apiVersion": "lab.homecluster.dev/v1", "kind": "Widget", "metadata": {"name": "w1"},
                          "spec": {"size": 2}})
    await until(lambda: (lab_api.get(widgets, "w1") or {}).get("status", {}).get("phase") == "Seen",
                "kopf to mark w1 Seen", 15)
    obj = lab_api.get(widgets, "w1")
    assert FINALIZER in obj["metadata"]["finalizers"]
    assert operator["created"] == ["w1"]
    status_writes = [e for e in lab_api.audit.writes("widgets") if e.subresource == "status"]
    assert status_writes and all(e.code == 200 for e in status_writes)
    # kopf posts its per-object events to core/v1 events (asynchronously)
    await until(lambda: any(e.resource == "events" and e.code == 201 for e in lab_api.audit.writes()),
                "kopf to post an Event", 15)
    event = lab_api.list("events", "default")[0]
    assert (event["reason"], event["involvedObject"]["name"]) == ("Seen", "w1")
    # kopf found the resource through discovery and listed before watching
    kopf_reads = lab_api.audit.select("widgets", verbs=["list", "watch"], user_agent="kopf")
    assert {e.verb for e in kopf_reads} == {"list", "watch"}

    await lab_api.delete(widgets, "w1")
    await until(lambda: lab_api.get(widgets, "w1") is None, "w1 to be gone", 15)
    assert operator["deleted"] == ["w1"]


async def test_kopf_recovers_from_injected_write_faults(lab_api, widgets, operator):
    lab_api.faults.fail_next("widgets", count=2, code=500, verbs=["patch"])
    await lab_api.create({"apiVersion": "lab.homecluster.dev/v1", "kind": "Widget", "metadata": {"name": "w2"},
                          "spec": {"size": 1}})
    await until(lambda: (lab_api.get(widgets, "w2") or {}).get("status", {}).get("phase") == "Seen",
                "kopf to mark w2 Seen", 15)
    failed = [e for e in lab_api.audit.writes("widgets") if e.code == 500]
    assert len(failed) == 2
    assert FINALIZER in lab_api.get(widgets, "w2")["metadata"]["finalizers"]
