"""lifecycle.finalizer.release_ended on the lab's API server: an ended claim that is deleted is released.

A terminal claim someone else wrote without status.finishedAt (its end not stamped by us) still gets its
digest on the slot, stamped with the pass's clock, and then its finalizer comes off: it is not left
Terminating.
"""
from __future__ import annotations

import pytest

from homecluster.lifecycle.recorder import Recorder
from homecluster.model.timestamps import format_time

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"


async def test_a_deleted_failed_claim_without_finished_at_is_released(pool):
    env = pool
    await Recorder(env.ctx).add_finalizer(await env.claim("c1"))
    await env.lab.patch(CLAIMS, "c1", {"status": {"attempt": 1, "phase": "failed", "reason": "DeadlineExceeded",
                                                  "startupJob": "c1-startup"}}, subresource="status")
    await env.lab.delete(CLAIMS, "c1")
    assert env.get(CLAIMS, "c1") is not None  # held by our finalizer
    await env.step(times=4)
    assert env.get(CLAIMS, "c1") is None
    last = env.slot_status()["lastClaim"]
    assert (last["name"], last["phase"], last["finishedAt"]) == ("c1", "failed", format_time(env.clock.now))


async def test_a_claim_waiting_for_its_own_job_does_not_hold_back_the_release_of_another(pool):
    """Two deleted failed claims of one slot: c1's forced shutdown still runs (kept), c2 has no Job left
    (released in the same pass, not after c1's Job ends)."""
    env = pool
    await env.claim("c1")
    await env.step()
    await env.job_done("c1-startup", "failed")
    await env.step()
    assert env.lab.get("jobs.batch", "c1-shutdown-1", "homecluster-system") is not None  # forced, still running
    await Recorder(env.ctx).add_finalizer(await env.claim("c2"))
    await env.lab.patch(CLAIMS, "c2", {"status": {"attempt": 2, "phase": "failed", "reason": "DeadlineExceeded",
                                                  "finishedAt": format_time(env.clock.now)}}, subresource="status")
    await env.lab.delete(CLAIMS, "c1")
    await env.lab.delete(CLAIMS, "c2")
    await env.step(times=4)
    assert env.get(CLAIMS, "c2") is None
    assert env.get(CLAIMS, "c1")["metadata"]["deletionTimestamp"]  # its own Job still runs: kept
