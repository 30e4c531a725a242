"""Watch streams under write load, consumed the way kopf consumes them: list, then watch from the list's
resourceVersion with bookmarks and a short timeoutSeconds, keep the latest resourceVersion seen (events and
BOOKMARKs alike), reconnect from it when the server ends the stream, re-list after an ERROR 410.

The property checked is the one an operator lives by: over many reconnect cycles, while heartbeats hammer
many objects of the watched kind and of other kinds, the watcher's view of every object converges to the
store's (no lost event), and no stream outlives its timeoutSeconds (no silent stream). A bookmark that
claimed a resourceVersion beyond events still queued for the stream made the client skip them on the next
reconnect: this is what the operator of a loaded lab hit at its 300 s server_timeout.
"""
from __future__ import annotations

import asyncio
import json
import random
import threading
import time
from dataclasses import dataclass, field

import aiohttp
import pytest

from homecluster_lab.apiserver import LabAPIServer

pytestmark = pytest.mark.lab
NODES = "/api/v1/nodes"


@dataclass
class View:
    """What a kopf-like watcher knows: each object's last seen resourceVersion, and how its streams went."""

    objects: dict[str, int] = field(default_factory=dict)
    streams: int = 0
    relists: int = 0
    bookmarks: int = 0
    events: int = 0
    longest_stream: float = 0.0
    problems: list[str] = field(default_factory=list)


async def kopf_like_watcher(url: str, path: str, timeout_s: int, view: View, stop: threading.Event,
                            read_delay: float) -> None:
    """kopf's continuous_watch, reduced: `read_delay` per line stands for a busy consumer (the operator on a
    loaded machine), so the server's sending falls behind its writers and events queue up per stream."""
    rv: str | None = None
    client_timeout = aiohttp.ClientTimeout(total=None, sock_read=timeout_s + 10)  # a silent stream fails
    async with aiohttp.ClientSession(url) as session:
        while not stop.is_set():
            if rv is None:
                async with session.get(path) as resp:
                    listing = await resp.json()
                view.objects = {o["metadata"]["name"]: int(o["metadata"]["resourceVersion"])
                                for o in listing["items"]}
                rv = listing["metadata"]["resourceVersion"]
                view.relists += 1
            query = f"watch=true&allowWatchBookmarks=true&resourceVersion={rv}&timeoutSeconds={timeout_s}"
            started = time.monotonic()
            view.streams += 1
            try:
                async with session.get(f"{path}?{query}", timeout=client_timeout) as resp:
                    assert resp.status == 200, f"watch answered {resp.status}"
                    async for line in resp.content:
                        if read_delay:
                            await asyncio.sleep(read_delay)
                        event = json.loads(line)
                        obj = event["object"]
                        if event["type"] == "ERROR":
                            assert obj["code"] == 410, f"unexpected watch error {obj}"
                            rv = None  # kopf re-lists
                            break
                        new_rv = obj["metadata"]["resourceVersion"]
                        assert int(new_rv) >= int(rv), f"resourceVersion went back from {rv} to {new_rv}"
                        rv = new_rv
                        if event["type"] == "BOOKMARK":
                            view.bookmarks += 1
                            continue
                        view.events += 1
                        name = obj["metadata"]["name"]
                        if event["type"] == "DELETED":
                            view.objects.pop(name, None)
                        else:
                            view.objects[name] = int(new_rv)
            except asyncio.TimeoutError:
                view.problems.append(f"a watch stream from resourceVersion {rv} sent nothing for "
                                     f"{timeout_s + 10}s (timeoutSeconds={timeout_s})")
                return
            view.longest_stream = max(view.longest_stream, time.monotonic() - started)


async def heartbeats(api: LabAPIServer, names: list[str], stop: asyncio.Event, burst: int) -> int:
    """Kubelet-like writers: bursts of Node status patches and Lease renewals, plus ConfigMap churn (another
    kind in the same resourceVersion sequence and history), with short pauses so bursts pile up in the
    watchers' queues."""
    rng = random.Random(7)
    writes = 0
    beat = 0
    while not stop.is_set():
        for _ in range(burst):
            name = rng.choice(names)
            beat += 1
            await api.patch("nodes", name, {"status": {"conditions": [
                {"type": "Ready", "status": rng.choice(["True", "False", "Unknown"]), "reason": f"beat-{beat}"}]}},
                subresource="status")
            await api.patch("leases.coordination.k8s.io", name, {"spec": {"renewTime": f"beat-{beat}"}},
                            namespace="kube-node-lease")
            await api.patch("configmaps", "churn", {"data": {"beat": str(beat)}}, namespace="default")
            writes += 3
        await asyncio.sleep(rng.uniform(0.01, 0.15))
    return writes


async def busy_loop(stop: asyncio.Event, block: float = 0.003) -> None:
    """Stands for everything else on a loaded lab's event loop (kubelets, the Job executor, 80 runnable
    processes on 2 cores): every turn of the loop costs `block` seconds, so a stream that needs a turn per
    event falls behind its writers and builds a backlog."""
    while not stop.is_set():
        time.sleep(block)
        await asyncio.sleep(0)


def lease(name: str) -> dict:
    return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": "kube-node-lease"}, "spec": {"holderIdentity": name}}


async def seed(api: LabAPIServer, nodes: int) -> list[str]:
    """`nodes` Ready Nodes with their Leases, and the ConfigMap the churn writers rewrite; their names."""
    names = [f"worker-{i:02d}" for i in range(nodes)]
    for n in names:
        await api.create({"apiVersion": "v1", "kind": "Node", "metadata": {"name": n}, "spec": {},
                          "status": {"conditions": [{"type": "Ready", "status": "True"}]}}, keep_status=True)
        await api.create(lease(n))
    await api.create({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "churn", "namespace": "default"}})
    return names


async def run_load(tmp_path, *, history_limit: int, seconds: float, timeout_s: int = 1, nodes: int = 40,
                   burst: int = 60, read_delay: float = 0.0005) -> tuple[View, LabAPIServer, int]:
    async with LabAPIServer(workdir=tmp_path / "lab-api", history_limit=history_limit,
                            bookmark_interval=0.05) as api:
        names = await seed(api, nodes)
        view, stop_writers, stop_watch = View(), asyncio.Event(), threading.Event()
        # The watcher runs on a thread with its own loop, as the operator runs in its own process: only the
        # server's loop is loaded.
        watcher = asyncio.ensure_future(asyncio.to_thread(asyncio.run, kopf_like_watcher(
            api.url, NODES, timeout_s, view, stop_watch, read_delay)))
        writers = asyncio.create_task(heartbeats(api, names, stop_writers, burst))
        hog = asyncio.create_task(busy_loop(stop_writers))
        try:
            await asyncio.sleep(seconds)
            stop_writers.set()
            writes = await writers
            truth = {o["metadata"]["name"]: int(o["metadata"]["resourceVersion"]) for o in api.list("nodes")}
            # A few reconnect cycles to catch up (generous: the machine may be loaded); a lost event never
            # shows up, so this times out.
            deadline = time.monotonic() + 10 * timeout_s + 10
            while view.objects != truth and time.monotonic() < deadline and not watcher.done():
                await asyncio.sleep(0.05)
            if watcher.done():
                watcher.result()  # the watcher's own assertion (a resourceVersion going back) fails the test
            stale = {n: (view.objects.get(n), rv) for n, rv in truth.items() if view.objects.get(n) != rv}
            assert not view.problems, view.problems
            assert not stale, (f"{len(stale)} of {len(truth)} Nodes never reached their last resourceVersion "
                               f"(seen, stored): {dict(list(stale.items())[:5])}; {view}")
            return view, api, writes
        finally:
            stop_writers.set()
            stop_watch.set()
            for t in (writers, hog):
                t.cancel()
            await asyncio.gather(writers, hog, return_exceptions=True)
            await asyncio.wait_for(asyncio.gather(watcher, return_exceptions=True), 2 * timeout_s + 15)


async def test_no_event_is_lost_across_many_reconnects_under_load(tmp_path):
    """History large enough that every reconnect resumes from the history: every update must be streamed."""
    view, api, writes = await run_load(tmp_path, history_limit=100000, seconds=6)
    assert view.streams >= 4, f"expected many reconnect cycles, got {view.streams}"
    assert view.relists == 1, "no 410 was expected with this history"
    assert view.bookmarks > 0
    # The server checks its deadline between batches of writes; on a loaded machine a stream may overrun a
    # little, never for long (a silent stream would also trip the watcher's read timeout).
    assert view.longest_stream < 1 + 8, f"a stream outlived timeoutSeconds=1: {view.longest_stream:.1f}s"
    assert writes > 1000


async def test_small_history_answers_410_and_the_relist_converges(tmp_path):
    """A history shorter than what a reconnect must replay: the server answers ERROR 410 in a 200 stream and
    the client's re-list plus the following watches still converge."""
    view, api, _ = await run_load(tmp_path, history_limit=150, seconds=6, read_delay=0.002)
    assert view.relists > 1, f"expected at least one 410 and re-list: {view}"
    assert view.longest_stream < 1 + 8


async def test_stream_from_an_old_version_gets_410_event_in_a_200_stream(tmp_path):
    async with LabAPIServer(workdir=tmp_path / "lab-api", history_limit=5) as api:
        first = await api.create({"apiVersion": "v1", "kind": "ConfigMap",
                                  "metadata": {"name": "a", "namespace": "default"}})
        for i in range(10):
            await api.patch("configmaps", "a", {"data": {"i": str(i)}}, namespace="default")
        async with aiohttp.ClientSession(api.url) as session:
            rv = first["metadata"]["resourceVersion"]
            async with session.get(f"/api/v1/nodes?watch=true&resourceVersion={rv}&timeoutSeconds=5") as resp:
                assert resp.status == 200
                lines = [json.loads(line) async for line in resp.content]
        assert [(e["type"], e["object"]["code"]) for e in lines] == [("ERROR", 410)]


def test_watcher_backlog_is_taken_whole_and_bounded():
    """The per-stream backlog: offered in order, taken without awaiting (so nothing taken can be dropped by a
    timeout), and bounded -- past max_backlog the stream is marked to end instead of growing without limit."""
    from homecluster_lab.apiserver.store import Event, Watcher

    key = ("", "nodes")
    w = Watcher(key, None, max_backlog=3)
    events = [Event(rv, key, "MODIFIED", {"metadata": {"name": "n"}}, None) for rv in range(1, 5)]
    w.offer(events[0])
    w.offer(events[1])
    assert w.wakeup.is_set()
    assert [e.rv for e in w.take(1)] == [1]
    assert [e.rv for e in w.take()] == [2]
    assert w.take() == []
    for e in events[:3]:
        w.offer(e)
    assert not w.overflowed
    w.offer(events[3])
    assert w.overflowed and w.take() == [], "an overflowed stream must end, not skip ahead"
    w.close()
    w.offer(events[0])
    assert w.closed and w.take() == []


async def test_a_stream_to_a_client_that_stopped_reading_is_closed_after_its_deadline(tmp_path, monkeypatch):
    """A write blocked on a client that reads nothing would hold the stream (and its subscription) open
    forever; past timeoutSeconds plus a grace the server closes the connection."""
    from homecluster_lab.apiserver import watch

    monkeypatch.setattr(watch, "STALLED_WRITE_GRACE", 0.5, raising=False)
    async with LabAPIServer(workdir=tmp_path / "lab-api") as api:
        await api.create({"apiVersion": "v1", "kind": "ConfigMap",
                          "metadata": {"name": "big", "namespace": "default"}})
        reader, writer = await asyncio.open_connection(api.host, api.port)
        writer.write(f"GET /api/v1/namespaces/default/configmaps?watch=true&timeoutSeconds=1&resourceVersion="
                     f"{api.store.rv} HTTP/1.1\r\nHost: {api.address}\r\n\r\n".encode())
        await writer.drain()
        await asyncio.sleep(0.2)
        assert len(api.store.watchers) == 1
        blob = "x" * 100_000
        for i in range(300):  # ~30 MB: more than the socket buffers hold, so the server's write blocks
            await api.patch("configmaps", "big", {"data": {"blob": blob, "i": str(i)}}, namespace="default")
            await asyncio.sleep(0)
        written = time.monotonic()
        while api.store.watchers and time.monotonic() - written < 10:
            await asyncio.sleep(0.1)
        assert not api.store.watchers, "the stalled stream was never ended"
        writer.close()


def test_a_bookmark_never_claims_a_version_beyond_a_pending_event():
    from homecluster_lab.apiserver.watch import bookmark_rv

    assert bookmark_rv(sent_rv=10, store_rv=50, backlog=3, overflowed=False) == 10
    assert bookmark_rv(sent_rv=10, store_rv=50, backlog=0, overflowed=False) == 50  # idle streams advance
    assert bookmark_rv(sent_rv=10, store_rv=50, backlog=0, overflowed=True) == 10
