"""reversal.cancel: a pending claim deleted before anything was bought ends completed/Canceled.

The claim carries our finalizer as a launch that stopped between adding it and creating the startup
Job would leave it (and, in the first test, someone else's finalizer too, so the ended claim stays
readable): everything a user reads is pinned -- phase, reason, message, condition, Event, finalizers.
"""
from __future__ import annotations

import pytest
from support import objects

from homecluster import names
from homecluster.lifecycle.slotpass import run_pass

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"
HOLD = "example.com/hold"
SAID = "deleted while pending: nothing was started"


async def seeded_claim(env, finalizers: list[str]) -> None:
    """A claim with `finalizers`, seeded (attempt 1, pending) by exactly one pass, then deleted."""
    await env.lab.create(objects.claim("c1", requested_at="2026-01-01T00:00:00Z", labelled=True,
                                       finalizers=finalizers))
    await env.refill()
    await run_pass(env.ctx, "worker-01")
    assert (env.claim_status()["phase"], env.claim_status()["attempt"]) == ("pending", 1)
    await env.lab.delete(CLAIMS, "c1")


def events(env, reason: str) -> list[dict]:
    return [e for e in env.lab.list("events", "default")
            if e["involvedObject"]["name"] == "c1" and e["reason"] == reason]


async def test_cancel_lands_completed_canceled_and_drops_only_our_finalizer(pool):
    env = pool
    await seeded_claim(env, [names.FINALIZER, HOLD])
    await env.step()
    claim = env.get(CLAIMS, "c1")
    assert claim["metadata"]["finalizers"] == [HOLD]  # ours is gone, the other stays
    status = claim["status"]
    assert (status["phase"], status["reason"], status["message"]) == ("completed", "Canceled", SAID)
    assert status["finishedAt"] == status["conditions"][0]["lastTransitionTime"]
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in status["conditions"]] == [
        ("Ready", "False", "Canceled", SAID)]
    [said] = events(env, "Canceled")
    assert said["type"] == "Normal"  # a cancel is not a failure
    assert said["message"] == f'NodeClaim "c1" on slot "worker-01", attempt 1: {SAID}'
    assert env.jobs() == []  # nothing was bought
    assert "lastClaim" not in env.slot_status()  # a cancel is not an attempt
    await env.lab.patch(CLAIMS, "c1", {"metadata": {"finalizers": None}})
    assert env.get(CLAIMS, "c1") is None


async def test_cancel_with_only_our_finalizer_lets_the_claim_go(pool, logged):
    import logging
    env = pool
    await seeded_claim(env, [names.FINALIZER])
    await env.refill()
    with logged(env.ctx.log, logging.INFO) as records:
        await run_pass(env.ctx, "worker-01")
    assert env.get(CLAIMS, "c1") is None  # in the one pass that canceled it, not left to a later one
    said = [r.getMessage() for r in records]
    assert any(m.endswith(f"pending -> completed (Canceled): {SAID}") for m in said), said
    assert any(m.endswith("released the finalizer") for m in said), said
    assert len(events(env, "Canceled")) == 1
    assert env.jobs() == []
