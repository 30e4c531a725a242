"""Watch streams as clients consume them: initial ADDED, replay from a resourceVersion, 410 Gone after
compaction, selector transitions, bookmarks, timeouts, and injected drops and delays."""
from __future__ import annotations

import asyncio
import json
import time

import aiohttp
import pytest
from load_factor import scaled

pytestmark = pytest.mark.lab
CM = "/api/v1/namespaces/default/configmaps"

# Real-time upper bounds tell an honoured limit from an ignored one, not speed: the suite shares 2 cores
# with another worker, and a step that takes 0.3 s alone can take several seconds there. Each
# bound adds it stretched by the machine's measured load (load_factor.scaled).
LOAD_SLACK = 8.0


def cm(name: str, **labels: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default",
                                                                 "labels": labels}}


async def read_events(lab_api, query: str, count: int, timeout: float = 5.0, path: str = CM) -> list[dict]:
    events = []
    async with aiohttp.ClientSession(lab_api.url) as session:
        async with session.get(f"{path}?watch=true&{query}",
                               timeout=aiohttp.ClientTimeout(total=timeout)) as resp:
            assert resp.status == 200
            async for line in resp.content:
                events.append(json.loads(line))
                if len(events) >= count:
                    break
    return events


async def test_watch_from_zero_lists_first_then_streams(lab_api):
    await lab_api.create(cm("a"))
    task = asyncio.create_task(read_events(lab_api, "resourceVersion=0", 3))
    await asyncio.sleep(0.2)
    await lab_api.patch("configmaps", "a", {"data": {"k": "v"}}, namespace="default")
    await lab_api.delete("configmaps", "a", namespace="default")
    events = await task
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert events[1]["object"]["data"] == {"k": "v"}
    assert events[0]["object"]["kind"] == "ConfigMap" and events[0]["object"]["apiVersion"] == "v1"
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs)


async def test_watch_replays_from_resource_version(lab_api):
    a = await lab_api.create(cm("a"))
    await lab_api.create(cm("b"))
    await lab_api.patch("configmaps", "a", {"data": {"x": "1"}}, namespace="default")
    events = await read_events(lab_api, f"resourceVersion={a['metadata']['resourceVersion']}", 2)
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "b"), ("MODIFIED", "a")]


async def test_watch_from_compacted_resource_version_is_gone(lab_api):
    a = await lab_api.create(cm("a"))
    await lab_api.patch("configmaps", "a", {"data": {"x": "1"}}, namespace="default")
    lab_api.compact()
    events = await read_events(lab_api, f"resourceVersion={a['metadata']['resourceVersion']}", 1)
    assert events[0]["type"] == "ERROR"
    status = events[0]["object"]
    assert (status["kind"], status["code"], status["reason"]) == ("Status", 410, "Expired")
    assert status["message"].startswith(f"too old resource version: {a['metadata']['resourceVersion']} (")


async def test_selectors_turn_transitions_into_added_and_deleted(lab_api):
    await lab_api.create(cm("a", tier="web"))
    task = asyncio.create_task(read_events(lab_api, "labelSelector=tier%3Dweb", 3))
    await asyncio.sleep(0.2)
    await lab_api.patch("configmaps", "a", {"metadata": {"labels": {"tier": "db"}}}, namespace="default")
    await lab_api.create(cm("b", tier="db"))  # never matches: not sent
    await lab_api.patch("configmaps", "b", {"metadata": {"labels": {"tier": "web"}}}, namespace="default")
    events = await task
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == \
        [("ADDED", "a"), ("DELETED", "a"), ("ADDED", "b")]


async def test_bookmarks_and_timeout(lab_api):
    lab_api.bookmark_interval = 0.1
    start = time.monotonic()
    async with aiohttp.ClientSession(lab_api.url) as session:
        async with session.get(f"{CM}?watch=1&allowWatchBookmarks=true&timeoutSeconds=1&resourceVersion="
                               f"{lab_api.store.rv}") as resp:
            lines = [json.loads(line) async for line in resp.content]
    elapsed = time.monotonic() - start
    assert 0.9 <= elapsed < 1 + scaled(LOAD_SLACK)
    assert lines and all(e["type"] == "BOOKMARK" for e in lines)
    assert lines[0]["object"]["kind"] == "ConfigMap" and lines[0]["object"]["metadata"]["resourceVersion"]


async def test_a_fractional_timeout_is_refused_as_kube_apiserver_does(lab_api):
    """kube-apiserver reads timeoutSeconds as an integer and answers 400 to 300.0; the operator once sent it
    and only the real server noticed (tests/k8s/test_k8s_operator.py)."""
    async with aiohttp.ClientSession(lab_api.url) as session:
        async with session.get(f"{CM}?watch=1&timeoutSeconds=300.0") as resp:
            body = await resp.json()
    assert (resp.status, body["reason"]) == (400, "BadRequest")
    assert "timeoutSeconds" in body["message"] and "300.0" in body["message"]


async def test_single_object_watch_by_name(lab_api):
    await lab_api.create(cm("a"))
    await lab_api.create(cm("b"))
    task = asyncio.create_task(read_events(lab_api, "fieldSelector=metadata.name%3Db", 2))
    await asyncio.sleep(0.2)
    await lab_api.patch("configmaps", "a", {"data": {"x": "1"}}, namespace="default")
    await lab_api.patch("configmaps", "b", {"data": {"x": "2"}}, namespace="default")
    events = await task
    assert [(e["type"], e["object"]["metadata"]["name"]) for e in events] == [("ADDED", "b"), ("MODIFIED", "b")]


async def test_injected_drop_and_delay(lab_api):
    async def stream_until_end():
        async with aiohttp.ClientSession(lab_api.url) as session:
            async with session.get(f"{CM}?watch=1&resourceVersion={lab_api.store.rv}") as resp:
                return [json.loads(line) async for line in resp.content]
    task = asyncio.create_task(stream_until_end())
    await asyncio.sleep(0.2)
    lab_api.faults.drop_watches("configmaps")
    assert await asyncio.wait_for(task, 3) == []

    lab_api.faults.delay_watches(0.5)
    task = asyncio.create_task(read_events(lab_api, f"resourceVersion={lab_api.store.rv}", 1))
    await asyncio.sleep(0.2)
    written = time.monotonic()
    await lab_api.create(cm("late"))
    events = await task
    assert events[0]["object"]["metadata"]["name"] == "late"
    assert time.monotonic() - written >= 0.45


@pytest.mark.parametrize("spelling", ["True", "1", "t"])
async def test_watch_flag_accepts_gos_true_spellings(lab_api, spelling):
    # kubernetes_asyncio sends watch=True; the real server parses the flag with Go's ParseBool
    await lab_api.create(cm("b"))
    async with aiohttp.ClientSession(lab_api.url) as session:
        async with session.get(f"{CM}?watch={spelling}&resourceVersion=0",
                               timeout=aiohttp.ClientTimeout(total=5)) as resp:
            assert resp.status == 200
            first = json.loads(await resp.content.readline())
    assert first["type"] == "ADDED" and first["object"]["metadata"]["name"] == "b"
