"""lifecycle.recorder: what the Recorder writes besides a phase move, on the lab's API server.

Every write carries the resourceVersion it was decided from (a stale copy is refused with 409 and changes
nothing); a write whose fields are already there is not sent; the seed stamps status.attempt once; the
boot deadline is cleared only on a ready claim; the finalizer edits touch only our entry. The words of the
moves and their Events: test_recorder_words.py.
"""
from __future__ import annotations

import copy
import logging

import pytest
from support import objects
from test_recorder_words import CLAIMS, DEADLINE, claim_events

from homecluster.kube import client as kube
from homecluster.lifecycle.recorder import Recorder
from homecluster.model.phases import ClaimPhase, Reason
from homecluster.model.timestamps import format_time
from homecluster.names import FINALIZER

pytestmark = pytest.mark.lab


async def test_a_write_from_a_stale_copy_is_refused_and_changes_nothing(pool):
    env = pool
    await env.claim("c1")
    await env.step()
    stale = env.get(CLAIMS, "c1")
    await env.lab.patch(CLAIMS, "c1", {"metadata": {"labels": {"touched": "yes"}}})
    with pytest.raises(kube.Conflict):
        await Recorder(env.ctx).move(stale, ClaimPhase.FAILED, Reason.DEADLINE_EXCEEDED, DEADLINE)
    assert env.claim_status()["phase"] == "booting"
    assert [e["reason"] for e in claim_events(env)] == ["Booting"]
    with pytest.raises(kube.Conflict):
        await Recorder(env.ctx).patch_status(stale, {"shutdownAttempts": 3})
    assert "shutdownAttempts" not in env.claim_status()


async def test_patch_status_writes_only_what_differs(pool):
    env = pool
    await env.claim("c1")
    await env.step()
    claim = env.get(CLAIMS, "c1")
    rec = Recorder(env.ctx)
    before = len(env.writes())
    assert await rec.patch_status(claim, {"phase": "booting", "attempt": 1}) is claim
    assert len(env.writes()) == before
    written = await rec.patch_status(claim, {"phase": "booting", "shutdownAttempts": 2})
    assert written == env.get(CLAIMS, "c1")
    assert written["status"]["shutdownAttempts"] == 2 and written["status"]["phase"] == "booting"
    assert [(w.verb, w.subresource) for w in env.writes()[before:]] == [("patch", "status")]


async def test_seed_stamps_attempt_and_pending_once(pool):
    env = pool
    claim = await env.claim("c1")
    rec = Recorder(env.ctx)
    seeded = await rec.seed(claim, env.get("nodes.infra.homecluster.dev", "worker-01"))
    assert seeded["status"] == {"attempt": 1, "phase": "pending"}
    assert seeded == env.get(CLAIMS, "c1")
    before = len(env.writes())
    assert await rec.seed(seeded, None) is seeded  # seeded once: never rewritten
    assert len(env.writes()) == before


async def test_clear_boot_deadline_only_on_a_ready_claim(pool):
    env = pool
    await env.claim("c1")
    await env.step()
    booting = env.get(CLAIMS, "c1")
    rec = Recorder(env.ctx)
    before = len(env.writes())
    assert await rec.clear_boot_deadline(booting) is booting  # the boot still runs: its deadline stays
    assert len(env.writes()) == before
    assert env.get(CLAIMS, "c1")["spec"]["deadlineAt"] == booting["spec"]["deadlineAt"]
    await env.job_done("c1-startup")
    await env.node()
    await env.step()
    ready = env.get(CLAIMS, "c1")
    assert ready["status"]["phase"] == "ready" and "deadlineAt" not in ready["spec"]
    before = len(env.writes())
    assert await rec.clear_boot_deadline(ready) is ready  # cleared already: no write
    assert len(env.writes()) == before


async def test_finalizer_edits_touch_only_our_entry(pool, logged):
    env = pool
    body = objects.claim("c1", requested_at=format_time(env.clock.now), labelled=True, finalizers=["example.com/keep"])
    claim = await env.lab.create(body)
    rec = Recorder(env.ctx)
    added = await rec.add_finalizer(claim)
    assert added["metadata"]["finalizers"] == ["example.com/keep", FINALIZER]
    assert added == env.get(CLAIMS, "c1")
    before = len(env.writes())
    assert await rec.add_finalizer(added) is added  # there already: no write
    with logged(env.ctx.log, logging.INFO) as records:
        removed = await rec.remove_finalizer(added)
    assert removed["metadata"]["finalizers"] == ["example.com/keep"]
    assert removed == env.get(CLAIMS, "c1")
    assert [r.getMessage() for r in records] == ["claim=c1 slot=worker-01 attempt=0: released the finalizer"]
    assert len(env.writes()) == before + 1
    assert await rec.remove_finalizer(removed) is removed  # not ours: no write
    assert len(env.writes()) == before + 1

    only_ours = await rec.add_finalizer(await env.lab.patch(CLAIMS, "c1", {"metadata": {"finalizers": None}}))
    assert only_ours["metadata"]["finalizers"] == [FINALIZER]
    await env.lab.delete(CLAIMS, "c1")  # held by our finalizer
    held = env.get(CLAIMS, "c1")
    await rec.remove_finalizer(copy.deepcopy(held))
    assert env.get(CLAIMS, "c1") is None  # the last finalizer: the server deleted the claim


async def test_removing_the_finalizer_of_a_claim_already_gone_is_none(pool):
    env = pool
    claim = await env.claim("c1")
    held = await Recorder(env.ctx).add_finalizer(claim)
    await env.lab.patch(CLAIMS, "c1", {"metadata": {"finalizers": None}})
    await env.lab.delete(CLAIMS, "c1")
    assert env.get(CLAIMS, "c1") is None
    held = {**held, "metadata": {**held["metadata"], "resourceVersion": ""}}  # unconditional: the 404 answers
    assert await Recorder(env.ctx).remove_finalizer(held) is None
