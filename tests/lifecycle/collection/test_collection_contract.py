"""collection.collect's contract: a terminal claim is deleted at finishedAt + its TTL exactly (not a moment
before), the pass asks to look again at that moment, the delete is conditional on the copy the pass decided
from, one claim's pending TTL does not hold back the next claim's collection, and its log line; and
supersede's words on the claims it ends.
"""
from __future__ import annotations

import logging
from datetime import timedelta

import pytest
from support import objects

from homecluster.lifecycle.slotpass import run_pass
from homecluster.model.timestamps import format_time, parse_time

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"


def collected(env, name: str = "c1") -> bool:
    """Deleted: gone, or marked for deletion while a finalizer still holds it."""
    claim = env.get(CLAIMS, name)
    return claim is None or bool(claim["metadata"].get("deletionTimestamp"))


async def failed_claim(env) -> object:
    """c1's boot fails; its forced shutdown ends and the grace after it passes. Returns when c1 is due."""
    await env.claim()
    await env.step()
    await env.job_done("c1-startup", "failed")
    await env.step()
    await env.job_done("c1-shutdown-1")
    env.clock.advance(seconds=6)
    await env.step()
    status = env.claim_status()
    assert status["phase"] == "failed" and env.slot_status()["lastClaim"]["name"] == "c1"
    return parse_time(status["finishedAt"]) + env.ctx.settings.claim_ttl


async def test_a_terminal_claim_is_collected_exactly_at_its_ttl_and_the_pass_wakes_for_it(pool, logged):
    env = pool
    due = await failed_claim(env)
    env.clock.now = due - timedelta(seconds=1)
    await env.refill()
    waiting = await run_pass(env.ctx, "worker-01")
    assert not collected(env)
    assert not waiting.wrote and waiting.wake == due
    env.clock.now = due
    await env.refill()
    with logged(env.ctx.log, logging.INFO) as records:
        await run_pass(env.ctx, "worker-01")
    assert collected(env)
    assert [r.getMessage() for r in records if "collected" in r.getMessage()] == [
        "claim=c1 slot=worker-01 attempt=1: collected: ttlSecondsAfterFinished passed"]


async def test_the_collection_delete_is_conditional_on_the_copy_it_decided_from(pool):
    env = pool
    env.clock.now = await failed_claim(env)
    await env.refill()
    await env.lab.patch(CLAIMS, "c1", {"metadata": {"labels": {"changed": "by-someone"}}})  # the store is behind
    await run_pass(env.ctx, "worker-01")  # the refused delete is not an error: the next pass decides again
    assert not collected(env), "deleted although the server's copy changed after the decision"
    await env.refill()
    await run_pass(env.ctx, "worker-01")
    assert collected(env)


async def claim_with_ttl(env, name: str, ttl: int | None) -> None:
    await env.lab.create(objects.claim(name, requested_at=format_time(env.clock.now), labelled=True,
                                       deadline_at=format_time(env.clock.now + timedelta(minutes=5)),
                                       spec={"ttlSecondsAfterFinished": ttl} if ttl is not None else None))


async def test_superseded_claims_are_told_who_owns_and_a_later_ttl_does_not_hold_back_an_earlier_one(pool):
    env = pool
    # three live claims created together (the same creationTimestamp second): the greatest name, c3, owns
    await claim_with_ttl(env, "c1", 100)
    await claim_with_ttl(env, "c2", 10)
    await claim_with_ttl(env, "c3", None)
    await env.step()
    for name in ("c1", "c2"):
        status = env.claim_status(name)
        assert (status["phase"], status["reason"]) == ("failed", "Superseded")
        assert status["message"] == 'slot "worker-01" is owned by the newer live NodeClaim "c3": one live claim per slot'
    assert env.claim_status("c3")["phase"] in ("pending", "booting")
    env.clock.advance(seconds=10)  # c2 is due; c1 (read first) is not
    await env.refill()
    await run_pass(env.ctx, "worker-01")
    assert collected(env, "c2"), "c1's later TTL held back c2's collection"
    assert not collected(env, "c1")


async def test_a_due_claim_deleted_unseen_is_deleted_once_and_forgotten(pool):
    """Its DELETED event fell between two watch streams: the pass's DELETE is answered 404, and the store drops
    the claim at once, so the next pass sends no second DELETE (before: one DELETE a pass until a sweep)."""
    env = pool
    env.clock.now = await failed_claim(env)
    await env.refill()
    await env.lab.patch(CLAIMS, "c1", {"metadata": {"finalizers": None}})
    await env.lab.delete(CLAIMS, "c1")  # an admin's, unseen by the store
    await run_pass(env.ctx, "worker-01")
    assert env.ctx.store.claim("c1") is None
    await run_pass(env.ctx, "worker-01")
    deletes = [e.code for e in env.lab.audit.select("nodeclaims", verbs=["delete"], user_agent="homecluster-operator")]
    assert deletes == [404], deletes


async def test_a_due_claim_already_being_deleted_is_not_deleted_again_nor_waited_for(pool):
    """Someone else's finalizer holds a terminal claim that is already marked for deletion: its collection is
    done, so the pass sends no DELETE of its own (one a pass, for as long as that finalizer stays) and sets no
    wake for it."""
    env = pool
    due = await failed_claim(env)
    await env.lab.patch(CLAIMS, "c1", {"metadata": {"finalizers": ["example.com/backup"]}})
    await env.lab.delete(CLAIMS, "c1")  # an admin's: held by the backup tool's finalizer
    assert env.get(CLAIMS, "c1")["metadata"].get("deletionTimestamp")
    env.clock.now = due - timedelta(seconds=1)
    await env.refill()
    early = await run_pass(env.ctx, "worker-01")
    assert early.wake != due, "the pass woke for a claim whose deletion is already under way"
    env.clock.now = due + timedelta(seconds=1)
    await env.refill()
    await run_pass(env.ctx, "worker-01")
    await run_pass(env.ctx, "worker-01")
    deletes = [e for e in env.lab.audit.select("nodeclaims", verbs=["delete"], user_agent="homecluster-operator")]
    assert deletes == [], [(e.name, e.code) for e in deletes]


async def test_a_live_claim_read_first_does_not_hold_back_a_due_ones_collection(pool):
    """Claims are read by name: a live claim ("a0", no collection time) read before the due c1 is passed over,
    not the end of the look."""
    env = pool
    env.clock.now = await failed_claim(env)
    await claim_with_ttl(env, "a0", None)
    await env.refill()
    assert (await run_pass(env.ctx, "worker-01")).wake is None  # a0 seeded: the pass ends there, as every seed
    assert not collected(env)
    await env.refill()
    await run_pass(env.ctx, "worker-01")  # a0's boot begins, and the collection looks past it
    assert collected(env), "a live claim read first held back the due claim's collection"
    assert not collected(env, "a0")


async def test_one_claims_refused_delete_does_not_hold_back_the_next_ones(pool):
    """c1's delete is refused (the server's copy changed after the decision): c2, due too, is still collected
    in the same pass; c1 at the next one."""
    env = pool
    await claim_with_ttl(env, "c1", 10)
    await claim_with_ttl(env, "c2", 10)
    await claim_with_ttl(env, "c3", None)  # owns the slot: c1 and c2 end Superseded
    await env.step()
    env.clock.advance(seconds=10)
    await env.refill()
    await env.lab.patch(CLAIMS, "c1", {"metadata": {"labels": {"changed": "by-someone"}}})  # the store is behind
    await run_pass(env.ctx, "worker-01")
    assert not collected(env, "c1") and collected(env, "c2"), "c1's refused delete held back c2's collection"
    await env.refill()
    await run_pass(env.ctx, "worker-01")
    assert collected(env, "c1")
