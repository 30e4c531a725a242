"""The cache ignores stale events and resurrections; the work queue dedups and never runs a key twice at once."""
from __future__ import annotations

import asyncio

from homecluster.kube.store import JOBS, Store
from homecluster.operator.workqueue import WorkQueue
from homecluster.kube.cache import CLAIMS, SLOTS, Cache


def obj(name: str, rv: str, slot: str = "worker-01", **spec) -> dict:
    return {"metadata": {"name": name, "resourceVersion": rv}, "spec": {"slotRef": slot, **spec}}


def test_older_events_are_ignored_and_deletes_leave_tombstones():
    store = Store()
    assert store.apply(CLAIMS, obj("c1", "10"))
    assert not store.apply(CLAIMS, obj("c1", "9"))  # a late watch event after our own write
    assert not store.apply(CLAIMS, obj("c1", "10"))  # the echo of our write
    assert store.apply(CLAIMS, obj("c1", "11"))
    assert store.apply(CLAIMS, obj("c1", "12"), deleted=True)
    assert store.claim("c1") is None
    assert not store.apply(CLAIMS, obj("c1", "11"))  # no resurrection
    assert store.apply(CLAIMS, obj("c1", "13"))  # a new object of the same name


def test_the_store_remembers_the_newest_deletions_and_forgets_the_oldest(monkeypatch):
    from homecluster.kube import store as store_module
    monkeypatch.setattr(store_module, "MAX_TOMBSTONES", 3)
    store = Store()
    for i in range(1, 5):  # c1..c4 created at rv 10i, deleted at 10i+1
        store.apply(CLAIMS, obj(f"c{i}", str(10 * i)))
        store.apply(CLAIMS, obj(f"c{i}", str(10 * i + 1)), deleted=True)
    store.apply(CLAIMS, obj("c2", "25"), deleted=True)  # buried again: now the newest of the three
    store.apply(JOBS, {"metadata": {"name": "j", "resourceVersion": "50"}})
    store.apply(JOBS, {"metadata": {"name": "j", "resourceVersion": "51"}}, deleted=True)  # c3 is forgotten
    assert not store.apply(CLAIMS, obj("c2", "20"))  # remembered: no resurrection
    assert not store.apply(CLAIMS, obj("c4", "40"))
    assert not store.apply(JOBS, {"metadata": {"name": "j", "resourceVersion": "50"}})
    assert store.apply(CLAIMS, obj("c3", "30"))  # forgotten: a stale event of it is taken again (the bound's price)
    assert store.apply(CLAIMS, obj("c1", "10"))  # forgotten first


def test_a_kinds_resource_and_its_key_are_one_name():
    """The client's Resource is the kind's one name; its key ("claims") names the same objects, tombstones too."""
    store = Store()
    assert store.apply(CLAIMS, obj("c1", "10"))
    assert not store.apply("claims", obj("c1", "9"))
    assert store.cache.get("claims", "c1") is store.claim("c1")
    assert store.apply("claims", obj("c1", "11"), deleted=True)
    assert not store.apply(CLAIMS, obj("c1", "10"))
    assert store.apply(JOBS, {"metadata": {"name": "j", "resourceVersion": "1"}}) and store.job("j") is not None
    try:
        Cache().upsert("jobs", obj("j", "1"))
    except ValueError as exc:
        assert "'jobs'" in str(exc) and "claims" in str(exc), exc
    else:
        raise AssertionError("the cache took a kind it does not hold")


def test_objects_map_to_their_slot():
    store = Store()
    store.apply(SLOTS, {"metadata": {"name": "worker-01", "resourceVersion": "1"},
                        "spec": {"groupRef": "g", "providerID": "k3s://w1"}})
    assert store.slots_for(CLAIMS, obj("c1", "2")) == ["worker-01"]
    assert store.slots_for("nodes", {"metadata": {"name": "x"}, "spec": {"providerID": "k3s://w1"}}) == ["worker-01"]
    assert store.slots_for("nodes", {"metadata": {"name": "worker-01"}, "spec": {}}) == ["worker-01"]
    job = {"metadata": {"name": "j", "resourceVersion": "3", "labels": {"infra.homecluster.dev/slot": "worker-01"}}}
    store.apply(JOBS, job)
    assert store.slots_for(JOBS, job) == ["worker-01"]
    assert store.jobs_of_slot("worker-01") == [job]


async def test_queue_dedups_reruns_dirty_keys_and_keeps_the_earliest_timer():
    q = WorkQueue()
    q.add("a")
    q.add("a")
    assert len(q) == 1
    key = await q.get()
    q.add("a")  # while running: marked dirty, not queued twice
    assert len(q) == 0
    q.done(key)
    assert len(q) == 1
    await q.get()
    q.done("a")
    q.add_after("b", 0.2)
    q.add_after("b", 0.05)
    q.add_after("b", 1.0)
    assert 0 < q.next_timer("b") <= 0.05
    assert await asyncio.wait_for(q.get(), 1) == "b"
    q.close()


async def test_queue_reports_how_long_a_key_waited_from_the_first_ask():
    waits: list[float] = []
    q = WorkQueue(on_wait=waits.append)
    q.add("a")
    await asyncio.sleep(0.05)
    q.add("a")  # already queued: does not restart the clock
    await q.get()
    assert len(waits) == 1 and waits[0] >= 0.05
    q.add("a")  # while running: the news waits for the running pass to end
    await asyncio.sleep(0.03)
    q.done("a")
    await q.get()
    assert len(waits) == 2 and waits[1] >= 0.03
    q.done("a")
    q.add("b")
    await q.get()
    assert len(waits) == 3 and waits[2] < 0.05
    q.close()
