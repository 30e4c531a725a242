"""A pending claim whose deadline passes while its machine is on: failed DeadlineExceeded, forced off.

The seed: when the deadline passes "the machine is force-shut-down". No startup Job was created, so
the claim is not an attempt: the slot's lastClaim stays as it was.
"""
from __future__ import annotations

import json
from datetime import timedelta

import pytest

pytestmark = pytest.mark.lab


def job_vars(job):
    return json.loads(job["spec"]["template"]["metadata"]["annotations"]["infra.homecluster.dev/job-vars"])


async def test_pending_past_its_deadline_with_the_machine_on_is_forced_off(env):
    await env.group()
    await env.slot()
    await env.node()  # the machine is on (powered on out of band) before any claim
    await env.claim("late", deadline=timedelta(seconds=-1))
    await env.step()
    status = env.claim_status("late")
    assert (status["phase"], status["reason"]) == ("failed", "DeadlineExceeded")
    assert not status.get("startupJob")
    assert status["shutdownAttempts"] == 1
    names = [j["metadata"]["name"] for j in env.jobs()]
    assert names == ["late-shutdown-1"], names  # no startup Job; one shutdown Job, counted on the claim
    assert job_vars(env.jobs()[0])["force"] is True
    assert "lastClaim" not in env.slot_status()  # no startup Job: not an attempt


async def test_pending_past_its_deadline_with_the_machine_off_buys_nothing(env):
    await env.group()
    await env.slot()
    await env.claim("late", deadline=timedelta(seconds=-1))
    await env.step()
    assert env.claim_status("late")["reason"] == "DeadlineExceeded"
    assert env.jobs() == []
