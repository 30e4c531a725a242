"""The Lease watch (kube.leasewatch) against the lab's API server: listed, then followed, and a renewal after
a silence queues its slot while an ordinary renewal does not (one per machine every ~10 s would be a pass
each)."""
from __future__ import annotations

import asyncio

import pytest
from support.waits import until

from homecluster.kube.leasewatch import watch_leases

pytestmark = pytest.mark.lab


async def test_leases_are_listed_then_watched_and_only_news_queues_the_slot(pool):
    env = pool
    await env.node()
    await env.lease()
    await env.refill()
    leases, controller = env.ctx.store.leases, env.controller
    task = asyncio.create_task(watch_leases(env.ctx.client, leases.replace, controller.ingest_lease))
    try:
        first = leases.heartbeat("worker-01")
        assert first is not None and first.renewed_at == env.clock.now
        while len(controller.queue):  # start from an empty queue
            controller.queue.done(await controller.queue.get())
        env.clock.advance(seconds=10)
        await env.lease()  # an ordinary renewal: seen, stamped, nothing queued
        await until(lambda: leases.heartbeat("worker-01").renewed_at == env.clock.now, "the renewal to be seen")
        assert len(controller.queue) == 0
        env.clock.advance(seconds=60)  # silent past the 40 s grace, then renewed: the machine is back
        await env.lease()
        await until(lambda: len(controller.queue) == 1, "the slot to be queued")
        assert await controller.queue.get() == "worker-01"
        await env.lab.delete("leases.coordination.k8s.io", "worker-01", namespace="kube-node-lease")
        await until(lambda: leases.heartbeat("worker-01") is None, "the deleted Lease to be forgotten")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_the_first_renewal_after_a_short_power_off_queues_the_slot_that_reads_off(pool):
    """A machine switched off and on again within SILENCE of its grace (the lab's seconds-long boots, a quick
    power cycle): its first renewal is no news by the gap, yet it is what turns the slot's machine back on
    (model.liveness: a renewal after the last shutdown Job that succeeded). The slot reads off, so the
    renewal queues it. Before: nothing was queued, the boot waited for an unrelated event, and the readiness
    gate's clock ran out before the gate ever looked (CI of stop 29, test_shutdown_race)."""
    env = pool
    await env.node()
    await env.lease()
    await env.step()  # on and wanted by nobody: its unwanted-machine shutdown Job
    [job] = [j["metadata"]["name"] for j in env.jobs()]
    env.clock.advance(seconds=3)
    await env.job_done(job)  # the machine is off now; its Node still reads Ready (a silent kubelet)
    await env.step()
    assert env.slot_status()["powerState"] == "off"
    await env.refill()  # the slot's status event, as the controller's watch brings it
    leases, controller = env.ctx.store.leases, env.controller
    task = asyncio.create_task(watch_leases(env.ctx.client, leases.replace, controller.ingest_lease))
    try:
        await until(lambda: env.lab.store.watchers, "the Lease watch to be established")  # after its list
        while len(controller.queue):  # start from an empty queue
            controller.queue.done(await controller.queue.get())
        env.clock.advance(seconds=3)  # 6 s after the last renewal: far within 0.4 x 40 s
        await env.lease()
        await until(lambda: len(controller.queue) == 1, "the slot to be queued")
        assert await controller.queue.get() == "worker-01"
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)


async def test_while_the_watch_is_blind_ready_is_believed_and_it_resumes(pool):
    """A list refused (a missing grant, an API outage): what was seen is forgotten, so no machine reads as off
    for want of news; the next list brings the Leases back."""
    env = pool
    await env.node()
    await env.lease()
    await env.refill()
    leases = env.ctx.store.leases
    env.lab.faults.fail_next("leases.coordination.k8s.io", count=1, code=403, verbs=("list",))
    task = asyncio.create_task(watch_leases(env.ctx.client, leases.replace, env.controller.ingest_lease))
    try:
        await until(lambda: leases.heartbeat("worker-01") is None, "the Leases to be forgotten")
        await until(lambda: leases.heartbeat("worker-01") is not None, "the next list")
        env.lab.faults.drop_watches("leases")  # a stream that ends: listed and watched again
        env.clock.advance(seconds=20)
        await env.lease()
        await until(lambda: leases.heartbeat("worker-01").renewed_at == env.clock.now, "the renewal after the drop")
    finally:
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
