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
