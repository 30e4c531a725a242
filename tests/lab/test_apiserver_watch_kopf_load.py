"""kopf itself against the lab under write load, with a 1 s server_timeout so that every second each stream
ends and kopf reconnects from the last resourceVersion it read (a BOOKMARK's included): every Node's last
write must reach the operator's handler. This is the operator's situation at its 300 s server_timeout in a
loaded lab, compressed; the raw-client variant with finer checks is test_apiserver_watch_load.py."""
from __future__ import annotations

import asyncio
import threading
import time

import kopf
import pytest
from test_apiserver_watch_load import busy_loop, heartbeats, seed

from homecluster_lab.apiserver import LabAPIServer

pytestmark = pytest.mark.lab


async def test_kopf_sees_every_nodes_last_write_across_reconnects(tmp_path):
    async with LabAPIServer(workdir=tmp_path / "lab-api", bookmark_interval=0.05) as api:
        names = await seed(api, 30)

        registry = kopf.OperatorRegistry()
        seen: dict[str, int] = {}
        watches = []

        @kopf.on.startup(registry=registry)
        def configure(settings: kopf.OperatorSettings, **_):
            settings.watching.server_timeout = 1
            settings.networking.error_backoffs = [0.1, 0.2]
            settings.posting.enabled = False
            settings.peering.standalone = True

        @kopf.on.login(registry=registry)
        def login(**_):
            return kopf.ConnectionInfo(server=api.url, insecure=True, scheme="Bearer", token="lab")

        @kopf.on.event("", "v1", "nodes", registry=registry)
        def node_event(body, **_):
            rv = int(body["metadata"]["resourceVersion"])
            name = body["metadata"]["name"]
            seen[name] = max(seen.get(name, 0), rv)

        # kopf runs on a thread with its own loop, as `homecluster run` does in its own process.
        stop, ready = threading.Event(), threading.Event()
        thread = threading.Thread(target=lambda: asyncio.run(kopf.operator(
            registry=registry, clusterwide=True, standalone=True, stop_flag=stop, ready_flag=ready)),
            daemon=True)
        thread.start()
        stop_writers = asyncio.Event()
        writers = None
        try:
            await asyncio.to_thread(ready.wait, 10)
            assert ready.is_set(), "kopf did not become ready"
            writers = asyncio.create_task(heartbeats(api, names[:10], stop_writers, burst=20))
            hog = asyncio.create_task(busy_loop(stop_writers))
            # Waves: every Node of the other 20 written once at the same moment (as 20 machines powered off
            # together), then kopf must see each wave's writes before the next one -- a write lost at a
            # reconnect is never repaired by a later one.
            waves, lost = 0, {}
            started = time.monotonic()
            while time.monotonic() - started < 8 and not lost:
                waves += 1
                wave = {}
                for n in names[10:]:
                    obj = await api.patch("nodes", n, {"status": {"conditions": [
                        {"type": "Ready", "status": "False", "reason": f"wave-{waves}"}]}}, subresource="status")
                    wave[n] = int(obj["metadata"]["resourceVersion"])
                deadline = time.monotonic() + 15  # generous for a loaded machine; a lost write never arrives
                while time.monotonic() < deadline and any(seen.get(n, 0) < rv for n, rv in wave.items()):
                    await asyncio.sleep(0.05)
                lost = {n: (seen.get(n), rv) for n, rv in wave.items() if seen.get(n, 0) < rv}
            stop_writers.set()
            await writers
            await hog
            watches = api.audit.select("nodes", verbs=["watch"], user_agent="kopf")
            assert len(watches) >= 3, f"expected kopf to reconnect many times, it watched {len(watches)} times"
            assert not lost, f"wave {waves}: kopf never saw {len(lost)} of {len(names) - 10} Node writes " \
                             f"(seen, written): {dict(list(lost.items())[:5])}"
            assert waves >= 5
        finally:
            stop_writers.set()
            stop.set()
            if writers is not None:
                writers.cancel()
            await asyncio.to_thread(thread.join, 10)
        assert not thread.is_alive(), "kopf did not stop"
