"""watch_into: list, then watch, into the cache -- over real HTTP with the product's KubeClient.

The API server here is a minimal aiohttp stand-in (a TEST DOUBLE: it serves only list and watch
of the four kinds) so that the exact watch events (ADDED, DELETED, the resourceVersion the watch
starts from) are scripted; test_lab.py covers the same path against the lab API server.
"""
from __future__ import annotations

import asyncio
import json

import pytest
from aiohttp import web
from provider_objects import claim, corev1_node, group, slot
from support.waits import until

from homecluster.kube.cache import CLAIMS, Cache
from homecluster_lab.provider.watch import watch_into

PATHS = {
    "/apis/infra.homecluster.dev/v2alpha1/groups": [group()],
    "/apis/infra.homecluster.dev/v2alpha1/nodes": [slot("w1"), slot("w2")],
    "/apis/infra.homecluster.dev/v2alpha1/nodeclaims": [claim("w1", "ready", name="w1-old")],
    "/api/v1/nodes": [corev1_node("w1", "homecluster://w1")],
}


@pytest.fixture
async def fake_api(tmp_path):
    events: asyncio.Queue = asyncio.Queue()
    watch_params: list[dict] = []

    async def handle(request: web.Request) -> web.StreamResponse:
        items = PATHS.get(request.path)
        if items is None:
            return web.json_response({"kind": "Status", "code": 404}, status=404)
        if request.query.get("watch") not in ("true", "True", "1"):
            return web.json_response({"kind": "List", "metadata": {"resourceVersion": "10"}, "items": items})
        watch_params.append(dict(request.query))
        response = web.StreamResponse()
        await response.prepare(request)
        if request.path.endswith("/nodeclaims"):
            while True:
                event = await events.get()
                await response.write((json.dumps(event) + "\n").encode())
        await asyncio.sleep(3600)  # other kinds: a quiet watch
        return response

    app = web.Application()
    app.router.add_get("/{tail:.*}", handle)
    runner = web.AppRunner(app, shutdown_timeout=0.2)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "fake",
        "clusters": [{"name": "fake", "cluster": {"server": f"http://127.0.0.1:{port}"}}],
        "users": [{"name": "fake", "user": {"token": "t"}}],
        "contexts": [{"name": "fake", "context": {"cluster": "fake", "user": "fake"}}]}))
    yield kubeconfig, events, watch_params
    await runner.cleanup()


async def test_watch_into_lists_then_applies_events(fake_api):
    kubeconfig, events, watch_params = fake_api
    cache = Cache()
    task = asyncio.create_task(watch_into(cache, str(kubeconfig)))
    try:
        await until(lambda: cache.synced, "the initial lists")
        assert [c["metadata"]["name"] for c in cache.claims_of_slot("w1")] == ["w1-old"]
        assert cache.node_by_provider_id("homecluster://w1")["metadata"]["name"] == "w1"
        await until(lambda: any(p.get("resourceVersion") == "10" for p in watch_params), "a watch from the list's rv")
        new = claim("w2", None, name="w2-new")
        new["metadata"]["resourceVersion"] = "11"
        await events.put({"type": "ADDED", "object": new})
        gone = claim("w1", "ready", name="w1-old")
        gone["metadata"]["resourceVersion"] = "12"
        await events.put({"type": "DELETED", "object": gone})
        await until(lambda: cache.get(CLAIMS, "w2-new") is not None and cache.get(CLAIMS, "w1-old") is None,
                     "the watch events")
        assert cache.synced
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
