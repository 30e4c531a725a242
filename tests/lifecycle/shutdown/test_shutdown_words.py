"""shutdown.fire and shutdown._hold_from_end: their log lines (their only account of a firing), the
ShutdownHeldOff Event's words, and a hold-off measured only once the Job that reached the bound has ended
-- its pods included.
"""
from __future__ import annotations

import logging

import pytest

from homecluster import names
from homecluster.model.timestamps import format_time, parse_time

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"
NS = "homecluster-system"


def lines(records, word: str) -> list[str]:
    return [r.getMessage() for r in records if word in r.getMessage()]


def newest_shutdown(env) -> str:
    jobs = [j for j in env.jobs() if j["metadata"]["labels"][names.LABEL_JOB_KIND] == "shutdown"]
    return max(jobs, key=lambda j: int(j["metadata"]["resourceVersion"]))["metadata"]["name"]


async def test_fire_logs_graceful_and_the_bound_on_the_claim(pool, logged):
    env = pool
    await env.ready_claim()
    await env.lab.delete(CLAIMS, "c1")
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
        limit = env.ctx.settings.shutdown_attempt_limit
        for _ in range(limit - 1):
            await env.job_done(newest_shutdown(env), "failed")
            env.clock.advance(seconds=6)
            await env.step()
    prefix = "claim=c1 slot=worker-01 attempt=1: "
    said = [m.removeprefix(prefix) for m in lines(records, "fired")]
    assert said == [f"fired graceful shutdown Job c1-shutdown-{n} (shutdown attempt {n})" for n in range(1, limit)] \
        + [f"fired graceful shutdown Job c1-shutdown-{limit} (shutdown attempt {limit}, holding off after it)"]


async def test_fire_logs_forced_for_a_machine_that_never_joined(pool, logged):
    env = pool
    await env.claim()
    await env.step()
    await env.lab.delete(CLAIMS, "c1")
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
    assert lines(records, "fired") == [
        "claim=c1 slot=worker-01 attempt=1: fired forced shutdown Job c1-shutdown-1 (shutdown attempt 1)"]
    assert lines(records, "deleted Job") == ["deleted Job homecluster-system/c1-startup"]


async def test_unwanted_shutdowns_log_and_the_hold_waits_for_the_last_jobs_pods(pool, logged):
    env = pool
    await env.node()  # on, and no claim wants it
    limit, holdoff = env.ctx.settings.shutdown_attempt_limit, env.ctx.settings.shutdown_holdoff
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
        for _ in range(limit - 1):
            await env.job_done(newest_shutdown(env), "failed")
            env.clock.advance(seconds=6)
            await env.step()
    assert lines(records, "fired") == [
        f'slot "worker-01": fired shutdown Job worker-01-unwanted-{n} for an unwanted machine (attempt {n})'
        for n in range(1, limit + 1)]
    last = f"worker-01-unwanted-{limit}"
    written = env.slot_status()["shutdown"]["heldUntil"]
    ended = env.clock.advance(seconds=20)
    await env.job_done(last, "failed", at=ended)
    await env.lab.patch("jobs.batch", last, {"status": {"terminating": 1}}, namespace=NS, subresource="status")
    env.clock.advance(seconds=6)
    await env.step()  # failed, but its pod is still being killed: it may still power the machine off
    assert env.slot_status()["shutdown"]["heldUntil"] == written
    assert not [e for e in env.lab.list("events", "default") if e["reason"] == "ShutdownHeldOff"]
    await env.lab.patch("jobs.batch", last, {"status": {"terminating": 0}}, namespace=NS, subresource="status")
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
    until = ended + holdoff
    assert parse_time(env.slot_status()["shutdown"]["heldUntil"]) == until
    assert lines(records, "no shutdown before") == [
        f'slot "worker-01": shutdown Job {last} ended at {format_time(ended)} with the machine still on; '
        f"no shutdown before {format_time(until)}"]
    [said] = [e for e in env.lab.list("events", "default") if e["reason"] == "ShutdownHeldOff"]
    assert said["type"] == "Warning" and said["involvedObject"]["name"] == "worker-01"
    assert said["message"] == (f'slot "worker-01": {limit} shutdown Jobs did not power the machine off (the last, '
                               f"{last}, ended at {format_time(ended)}); no shutdown before {format_time(until)}")
