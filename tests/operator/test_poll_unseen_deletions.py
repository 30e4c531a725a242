"""An object deleted while no watch covered it is not held in the store for good, whatever its kind (issue 23).

kopf starts each watch with a list of its own and sends no DELETED for what went before it, so an object deleted
between two lists (the operator's first one and its watch's, or a watch's again after 410 Gone) stays in the
store. Chaos seed 7000 found it for a Job (tests/lifecycle/reversal/test_job_gone_unseen.py); seed 7018 for a
claim, patched 12 s after its deletion. Two things now drop such a ghost:
- a write answered 404 reads its object's name again (one list, by field selector) and the store drops it at once
  (lifecycle.conditional), so the pass does not send the same write again;
- the sweep (operator.sweep, every job_poll_interval, in every replica) lists every kind, not only the Jobs,
  and drops what it shows gone (kube.store.forget_unlisted).
No watch runs here: the lab's server is changed behind the store's back.
"""
from __future__ import annotations

import dataclasses
import logging
from datetime import timedelta

import aiohttp
import pytest

from support import objects
from support.pool import NS, SHORT, Clock, Env
from support.waits import until
from homecluster.kube.client import GROUPS, KubeClient
from homecluster.kube.connection import Connection
from homecluster.kube.store import Store
from homecluster.lifecycle.context import Context
from homecluster.operator.controller import Controller
from homecluster.model.timestamps import format_time

pytestmark = pytest.mark.lab

CLAIMS = "nodeclaims.infra.homecluster.dev"


def _claim_writes(env) -> list[int]:
    return [e.code for e in env.lab.audit.select("nodeclaims", verbs=["patch", "update"],
                                                 user_agent="homecluster-operator") if e.name == "c1"]


async def test_a_claim_deleted_unseen_is_dropped_by_the_first_write_it_refuses(pool):
    env = pool
    await env.claim()
    await env.slot("worker-02")
    await env.lab.create(objects.claim("other", "worker-02", requested_at=format_time(env.clock.now), labelled=True))
    await env.refill()  # the store holds c1: new, not yet seeded, no finalizer of ours
    await env.lab.delete(CLAIMS, "c1")  # the autoscaler takes it back at once; no watch tells the store
    assert env.get(CLAIMS, "c1") is None and env.ctx.store.claim("c1") is not None
    await env.controller.process("worker-01")  # the pass seeds c1: answered 404
    assert _claim_writes(env) == [404]
    assert env.ctx.store.claim("c1") is None, "a write answered 404 left its object in the store"
    await env.controller.process("worker-01")
    await env.controller.process("worker-01")
    assert _claim_writes(env) == [404], "the pass wrote to a claim already known gone"
    assert env.jobs() == [], "a startup Job was launched for a claim that is gone"
    assert env.ctx.store.claim("other") is not None, "a 404 of c1 dropped another slot's claim from the store"


async def test_the_sweep_drops_a_claim_a_node_and_a_job_deleted_unseen_and_queues_their_slot(pool, logged):
    env = pool
    await env.claim()
    await env.step()  # c1 booting: its startup Job runs
    await env.node()
    await env.refill()
    held = sorted(j["metadata"]["name"] for j in env.ctx.store.jobs_of_slot("worker-01"))
    assert held == ["c1-startup"] and env.ctx.store.cache.node_by_name("worker-01") is not None
    await env.lab.patch(CLAIMS, "c1", {"metadata": {"finalizers": None}})  # by hand, as an admin would
    await env.lab.delete(CLAIMS, "c1")
    await env.lab.delete("nodes", "worker-01")
    await env.lab.delete("jobs.batch", "c1-startup", namespace=NS)
    env.lab.collector.run_once()
    assert env.ctx.store.claim("c1") is not None  # none of the three deletions reached the store
    await env.drain_queue()
    with logged(env.ctx.log, logging.INFO) as records:
        await env.controller.sweep.once()
    assert sorted(r.getMessage() for r in records if "is gone" in r.getMessage()) == [
        "jobs.batch c1-startup is gone (no watch event said so; a list found it)",
        "nodeclaims.infra.homecluster.dev c1 is gone (no watch event said so; a list found it)",
        "nodes worker-01 is gone (no watch event said so; a list found it)"]
    assert env.ctx.store.claim("c1") is None, "the sweep kept a claim the list shows gone"
    assert env.ctx.store.cache.node_by_name("worker-01") is None, "the sweep kept a Node the list shows gone"
    assert env.ctx.store.jobs_of_slot("worker-01") == []
    assert len(env.controller.queue) == 1  # worker-01, once
    assert env.ctx.store.slot("worker-01") is not None  # what is listed stays


async def test_a_list_that_fails_is_said_and_the_other_kinds_are_swept(pool, logged, monkeypatch):
    """aiohttp's dropped connection is no OSError: it once ended the whole poll, and the loop with it."""
    env = pool
    await env.claim()
    await env.refill()
    await env.lab.delete(CLAIMS, "c1")
    listing = env.ctx.client.list

    async def groups_fail(res, **kw):
        if res == GROUPS:
            raise aiohttp.ServerDisconnectedError()
        return await listing(res, **kw)
    monkeypatch.setattr(env.ctx.client, "list", groups_fail)
    with logged(env.ctx.log, logging.WARNING) as records:
        await env.controller.sweep.once()
    assert env.ctx.store.claim("c1") is None, "one kind's failed list stopped the sweep of the others"
    assert [r.getMessage() for r in records] == [
        "sweep: could not list the groups.infra.homecluster.dev (Server disconnected); the next sweep lists again"]


async def test_a_replica_that_does_not_act_sweeps_too_and_a_failed_sweep_is_not_its_last(lab, logged):
    """Every replica sweeps from its fill on (handlers.startup): a follower's cache answers admission. Here the
    controller never starts (no worker, no pass); its first sweep raises, the next one drops the ghost."""
    client = KubeClient(Connection(server=lab.url))
    ctx = Context(client=client, store=Store(), settings=dataclasses.replace(
        SHORT, job_poll_interval=timedelta(seconds=0.5)), namespace=NS, job_image="runner:test", clock=Clock())
    controller = Controller(ctx, workers=1)
    env = Env(lab, ctx, controller, ctx.clock)
    await env.group()
    await env.slot()
    await env.claim()
    await env.refill()
    await lab.delete(CLAIMS, "c1")
    calls = []
    once = controller.sweep.once

    async def first_raises():
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("a bug in the first sweep")
        await once()
    controller.sweep.once = first_raises
    try:
        with logged(ctx.log, logging.ERROR) as records:
            controller.start_sweeping()
            await until(lambda: ctx.store.claim("c1") is None, "the follower's sweep to drop the deleted claim")
        assert [r.getMessage() for r in records] == ["sweep failed; the next one runs in 0s"]  # 0.5 s, rounded
        assert controller.passes == 0 and not env.writes()
    finally:
        await controller.stop()
        await client.close()
