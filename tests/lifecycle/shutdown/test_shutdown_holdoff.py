"""The shutdown bound and its hold-off, on the fake clock, with the real pass against the lab's API server
(issue 11, item 4): (a) the hold-off survives the collection of the slot's last terminal claim, (b) it runs
from the END of the Job that reached the bound, (c) shutdownAttempts counts every shutdown Job of a claim.
"""
from __future__ import annotations

from datetime import timedelta

import pytest
from support.pool import newest_shutdown, shutdown_jobs

from homecluster.model.timestamps import parse_time

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"
NS = "homecluster-system"


def slot_shutdowns(env) -> list[str]:
    """The unwanted-machine shutdown Jobs, which the slot owns (a collected claim takes its own Jobs along)."""
    return sorted(j["metadata"]["name"] for j in shutdown_jobs(env) if j["metadata"]["name"].startswith("worker-01-"))


async def fail_to_the_bound(env) -> None:
    """Each shutdown Job ends with the machine still on, one grace apart, until the hold-off is set."""
    for _ in range(env.ctx.settings.shutdown_attempt_limit):
        await env.job_done(newest_shutdown(env), "failed")
        env.clock.advance(seconds=6)  # past the grace of one job_poll_interval
        await env.step()


async def test_a_hold_off_survives_the_collection_of_the_last_terminal_claim(env):
    await env.group(ttlSecondsAfterFinished=40)
    await env.slot()
    await env.claim("c1")
    await env.step()
    await env.job_done("c1-startup", "failed")
    await env.step()
    assert env.claim_status("c1")["phase"] == "failed"
    await env.node()  # the machine came on anyway and joined: row 11, a terminal claim is not a want
    await env.job_done("c1-shutdown-1", "failed")  # its forced shutdown did not land
    env.clock.advance(seconds=6)
    await env.step()
    await fail_to_the_bound(env)
    held = env.slot_status()["shutdown"]
    assert held["attempts"] == env.ctx.settings.shutdown_attempt_limit and held["heldUntil"]
    assert env.claim_status("c1")["shutdownAttempts"] == 1  # only the Job c1 fired itself counts on c1
    fired = len(slot_shutdowns(env))
    env.clock.advance(seconds=20)  # past c1's TTL
    await env.step()
    assert env.get(CLAIMS, "c1") is None, "the TTL did not collect the claim"
    env.clock.advance(seconds=60)  # well inside the hold-off
    await env.step()
    assert len(slot_shutdowns(env)) == fired, "a shutdown fired during the hold-off once the claim was collected"
    env.clock.now = parse_time(env.slot_status()["shutdown"]["heldUntil"])
    await env.step()
    assert len(slot_shutdowns(env)) == fired + 1
    assert env.slot_status()["shutdown"]["attempts"] == env.ctx.settings.shutdown_attempt_limit + 1


async def test_the_hold_off_runs_from_the_end_of_the_job_that_reached_the_bound(env):
    await env.group()
    await env.slot()
    await env.node()  # on, and no claim wants it (row 2)
    await env.step()
    limit, holdoff = env.ctx.settings.shutdown_attempt_limit, env.ctx.settings.shutdown_holdoff
    for _ in range(limit - 1):
        await env.job_done(newest_shutdown(env), "failed")
        env.clock.advance(seconds=6)
        await env.step()
    last = newest_shutdown(env)
    assert last == f"worker-01-unwanted-{limit}"
    fired_at = env.clock.now
    # while it runs, the hold written at its firing is the latest it can end: fire + Job timeout + hold-off
    assert parse_time(env.slot_status()["shutdown"]["heldUntil"]) == \
        fired_at + env.ctx.settings.shutdown_job_timeout + holdoff
    ended = env.clock.advance(seconds=50)  # the last Job runs 50 s and ends with the machine still on
    await env.job_done(last, "failed", at=ended)
    env.clock.advance(seconds=6)  # past the grace: the pass that would fire the next Job measures the hold
    await env.step()
    assert parse_time(env.slot_status()["shutdown"]["heldUntil"]) == ended + holdoff
    count = len(shutdown_jobs(env))
    env.clock.now = fired_at + holdoff + timedelta(seconds=10)  # a hold from the firing would be over
    await env.step()
    env.clock.now = ended + holdoff - timedelta(seconds=1)
    await env.step()
    assert len(shutdown_jobs(env)) == count, "fired before 30 minutes (here: the hold-off) after the Job's end"
    env.clock.now = ended + holdoff
    await env.step()
    assert len(shutdown_jobs(env)) == count + 1


async def test_shutdown_attempts_count_every_shutdown_job_of_the_claim(env):
    await env.group()
    await env.slot()
    await env.claim("c1")
    await env.step()
    await env.job_done("c1-startup")
    await env.node()
    await env.step()
    assert env.claim_status("c1")["phase"] == "ready"
    await env.lab.delete(CLAIMS, "c1")  # the reversal; its shutdowns never land
    await env.step()
    limit = env.ctx.settings.shutdown_attempt_limit
    await fail_to_the_bound(env)
    status = env.claim_status("c1")
    assert status["shutdownAttempts"] == limit and status["shutdownHeldUntil"]
    env.clock.now = parse_time(status["shutdownHeldUntil"])
    await env.step()
    status = env.claim_status("c1")
    assert status["shutdownAttempts"] == limit + 1, "the count restarted after the hold-off"
    assert status["shutdownJob"] == f"c1-shutdown-{limit + 1}"
    assert sorted(j["metadata"]["name"] for j in shutdown_jobs(env)) == \
        [f"c1-shutdown-{n}" for n in range(1, limit + 2)]
    # this one lands: the claim completes
    await env.job_done(f"c1-shutdown-{limit + 1}")
    await env.node(ready=False)
    await env.step()
    assert env.get(CLAIMS, "c1") is None
