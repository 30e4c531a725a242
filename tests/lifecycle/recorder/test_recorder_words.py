"""lifecycle.recorder: the words a user reads on a NodeClaim and what the Recorder writes, on the lab's API server.

Each phase move leaves the claim's status (phase, reason, message, the `Ready` condition, readyAt /
finishedAt) and one core/v1 Event on the claim, whole: its deterministic name, the object and the
resourceVersion it is about, reason, type and message. A move that is already there writes nothing; an
Event that cannot be posted is logged and never fails the pass. The Recorder's other writes (seed, finalizer,
deadline clear, 409 from a stale copy): test_recorder_writes.py.
"""
from __future__ import annotations

import hashlib
import logging
from datetime import timedelta

import pytest
from support.event_shapes import as_posted, as_read
from support import objects

from homecluster.lifecycle.recorder import Recorder
from homecluster.model.phases import ClaimPhase, Reason
from homecluster.model.timestamps import format_time

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"
PREFIX = 'NodeClaim "c1" on slot "worker-01", attempt 1: '
BOOTING = 'startup Job c1-startup powers on slot "worker-01"'
READY = 'corev1 Node "worker-01" joined and is usable'
DEADLINE = "spec.deadlineAt passed before the machine was ready"


def claim_events(env, name: str = "c1") -> list[dict]:
    found = [e for e in env.lab.list("events", "default") if e["involvedObject"]["kind"] == "NodeClaim"
             and e["involvedObject"]["name"] == name]
    return sorted(found, key=lambda e: int(e["metadata"]["resourceVersion"]))


def expected_event(claim: dict, rv: str, key: str, reason: str, text: str, kind: str, stamp: str) -> dict:
    return as_posted(claim, "NodeClaim", rv, key, reason, PREFIX + text, kind, stamp)


def status_rvs(env) -> list[str]:
    """The resourceVersions the operator's claim status writes produced, in order."""
    return [w.rv for w in env.writes() if w.resource == "nodeclaims" and w.subresource == "status"]


def transitions(env, phase: str, reason: str = "") -> float | None:
    return env.ctx.metrics.registry.get_sample_value(
        "homecluster_claim_transitions_total", {"phase": phase, "reason": reason})


def failures(env, reason: str) -> float | None:
    return env.ctx.metrics.registry.get_sample_value("homecluster_claim_failures_total", {"reason": reason})


def claim_lines(records) -> list[str]:
    return [r.getMessage() for r in records if r.getMessage().startswith("claim=c1 ")]


async def test_a_boot_to_ready_leaves_whole_events_conditions_and_clocks(pool, logged):
    env = pool
    t0 = format_time(env.clock.now)
    await env.claim("c1")
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
        booting = env.get(CLAIMS, "c1")
        assert booting["status"] == {
            "attempt": 1, "phase": "booting", "startupJob": "c1-startup", "bootStartedAt": t0, "message": BOOTING,
            "conditions": [{"type": "Ready", "status": "False", "reason": "Booting", "message": BOOTING,
                            "lastTransitionTime": t0}]}  # no reason: the move has none, and no clock of an end
        t1 = format_time(env.clock.advance(seconds=7))
        await env.job_done("c1-startup")
        await env.node()
        await env.step()
    claim = env.get(CLAIMS, "c1")
    status = claim["status"]
    assert (status["phase"], status["message"], status["readyAt"]) == ("ready", READY, t1)
    assert "reason" not in status and "finishedAt" not in status
    assert status["conditions"] == [{"type": "Ready", "status": "True", "reason": "Ready", "message": READY,
                                     "lastTransitionTime": t1}]  # the status changed: a new transition time
    assert "deadlineAt" not in claim["spec"]  # cleared after the ready write
    rvs = status_rvs(env)  # the seed, booting, ready
    assert len(rvs) == 3
    assert [as_read(e) for e in claim_events(env)] == [
        expected_event(claim, rvs[1], "booting", "Booting", BOOTING, "Normal", t0),
        expected_event(claim, rvs[2], "ready", "Ready", READY, "Normal", t1)]
    assert claim_lines(records) == [
        "claim=c1 slot=worker-01 attempt=1: seeded attempt 1 from the slot's lastClaim",
        f"claim=c1 slot=worker-01 attempt=1: pending -> booting: {BOOTING}",
        f"claim=c1 slot=worker-01 attempt=1: booting -> ready: {READY}",
        "claim=c1 slot=worker-01 attempt=1: cleared spec.deadlineAt: the boot is over"]
    assert (transitions(env, "booting"), transitions(env, "ready")) == (1.0, 1.0)
    assert failures(env, "") is None


async def test_a_failed_boot_is_a_warning_with_its_reason_and_keeps_the_transition_time(pool, logged):
    env = pool
    t0 = format_time(env.clock.now)
    await env.claim("c1", deadline=timedelta(seconds=30))
    await env.step()
    t1 = format_time(env.clock.advance(seconds=31))
    with logged(env.ctx.log, logging.INFO) as records:
        await env.step()
    claim = env.get(CLAIMS, "c1")
    status = claim["status"]
    assert (status["phase"], status["reason"], status["message"], status["finishedAt"]) == (
        "failed", "DeadlineExceeded", DEADLINE, t1)
    assert "readyAt" not in status
    assert status["conditions"] == [{"type": "Ready", "status": "False", "reason": "DeadlineExceeded",
                                     "message": DEADLINE, "lastTransitionTime": t0}]  # still False: time kept
    assert claim["spec"]["deadlineAt"]  # a failed claim keeps its deadline: only a ready one is cleared
    failed = claim_events(env)[-1]
    assert as_read(failed) == expected_event(claim, status_rvs(env)[-1], "failed", "DeadlineExceeded", DEADLINE,
                                             "Warning", t1)
    assert f"claim=c1 slot=worker-01 attempt=1: booting -> failed (DeadlineExceeded): {DEADLINE}" \
        in claim_lines(records)
    assert (transitions(env, "failed", "DeadlineExceeded"), failures(env, "DeadlineExceeded")) == (1.0, 1.0)
    assert transitions(env, "failed", "") is None and failures(env, "") is None

    before, events = len(env.writes()), len(claim_events(env))
    landed = await Recorder(env.ctx).move(claim, ClaimPhase.FAILED, Reason.DEADLINE_EXCEEDED, DEADLINE,
                                          shutdownAttempts=status["shutdownAttempts"])
    assert landed is claim  # re-landing what is there writes nothing and posts nothing
    assert (len(env.writes()), len(claim_events(env))) == (before, events)
    assert failures(env, "DeadlineExceeded") == 1.0


async def test_a_move_to_a_new_message_rewrites_status_and_the_event_is_posted_once(pool, logged):
    env = pool
    await env.ready_claim()
    claim = env.get(CLAIMS, "c1")
    ready_time = claim["status"]["conditions"][0]["lastTransitionTime"]
    env.clock.advance(seconds=5)
    rec = Recorder(env.ctx)
    assert await rec.move(claim, ClaimPhase.READY, None, READY) is claim  # the same move: no write
    with logged(env.ctx.log, logging.INFO) as records:
        moved = await rec.move(claim, ClaimPhase.READY, None, "joined again")
    assert moved == env.get(CLAIMS, "c1")  # what the server holds is what the pass goes on with
    assert moved["metadata"]["resourceVersion"] != claim["metadata"]["resourceVersion"]
    assert moved["status"]["message"] == "joined again"
    assert moved["status"]["readyAt"] == claim["status"]["readyAt"]  # set once
    assert moved["status"]["conditions"] == [{"type": "Ready", "status": "True", "reason": "Ready",
                                              "message": "joined again", "lastTransitionTime": ready_time}]
    # the same phase and reason name the same Event: AlreadyExists is success, said once, nothing logged
    assert [e["message"] for e in claim_events(env)] == [PREFIX + BOOTING, PREFIX + READY]
    assert [r.getMessage() for r in records if r.levelno >= logging.WARNING] == []
    assert claim_lines(records) == ["claim=c1 slot=worker-01 attempt=1: ready -> ready: joined again"]


async def test_an_event_that_cannot_be_posted_is_logged_and_the_move_lands(pool, logged):
    env = pool
    claim = await env.claim("c1")
    env.lab.faults.fail_next("events", 2, 500, verbs=["create"])  # the slot's PowerObservedOff, then Booting
    with logged(env.ctx.log, logging.WARNING) as records:
        await env.step()
    assert env.claim_status()["phase"] == "booting"
    assert claim_events(env) == []
    name = "c1." + hashlib.sha256(f'{claim["metadata"]["uid"]}/booting/Booting'.encode()).hexdigest()[:10]
    assert [r.getMessage() for r in records if r.getMessage().startswith("claim=c1 ")] == [
        "claim=c1 slot=worker-01 attempt=1: could not post the Booting event: "
        f"create Event default/{name}: HTTP 500 InternalError: Internal error occurred: injected fault"]
    assert [r.levelno for r in records if r.getMessage().startswith("claim=c1 ")] == [logging.WARNING]


async def test_the_ready_condition_is_upserted_by_type_and_others_are_kept(pool):
    env = pool
    await env.ready_claim()
    other = {"type": "Example", "status": "True", "reason": "Someone", "message": "not ours",
             "lastTransitionTime": "2026-01-01T00:00:00Z"}
    ready = {"type": "Ready", "status": "True", "reason": "Ready", "message": READY}  # lost its transition time
    claim = await env.lab.patch(CLAIMS, "c1", {"status": {"conditions": [other, ready]}}, subresource="status")
    now = format_time(env.clock.advance(seconds=9))
    moved = await Recorder(env.ctx).move(claim, ClaimPhase.READY, None, "joined again")
    assert moved["status"]["conditions"] == [
        other, {**ready, "message": "joined again", "lastTransitionTime": now}]  # in place, others untouched


async def test_a_move_without_a_message_says_its_reason_and_an_end_is_stamped_once(pool, logged):
    env = pool
    await env.claim("c1", deadline=timedelta(seconds=30))
    await env.step()
    env.clock.advance(seconds=31)
    await env.step()
    claim = env.get(CLAIMS, "c1")
    finished = claim["status"]["finishedAt"]
    later = format_time(env.clock.advance(seconds=5))
    with logged(env.ctx.log, logging.INFO) as records:
        moved = await Recorder(env.ctx).move(claim, ClaimPhase.FAILED, "MachineGone")
    status = moved["status"]
    assert (status["reason"], status["message"], status["finishedAt"]) == ("MachineGone", DEADLINE, finished)
    assert status["conditions"][0] == {"type": "Ready", "status": "False", "reason": "MachineGone", "message": "MachineGone",
                                       "lastTransitionTime": claim["status"]["conditions"][0]["lastTransitionTime"]}
    assert as_read(claim_events(env)[-1]) == expected_event(moved, moved["metadata"]["resourceVersion"], "failed",
                                                            "MachineGone", "MachineGone", "Warning", later)
    assert claim_lines(records) == ["claim=c1 slot=worker-01 attempt=1: failed -> failed (MachineGone)"]
    assert (failures(env, "MachineGone"), transitions(env, "failed", "MachineGone")) == (1.0, 1.0)


async def test_a_move_with_neither_reason_nor_message_says_its_phase(pool, logged):
    env = pool
    claim = await Recorder(env.ctx).seed(await env.claim("c1"), None)
    now = format_time(env.clock.now)
    with logged(env.ctx.log, logging.INFO) as records:
        moved = await Recorder(env.ctx).move(claim, ClaimPhase.BOOTING)
    assert moved["status"] == {"attempt": 1, "phase": "booting", "conditions": [
        {"type": "Ready", "status": "False", "reason": "Booting", "message": "Booting", "lastTransitionTime": now}]}
    assert [(e["reason"], e["message"]) for e in claim_events(env)] == [("Booting", PREFIX + "Booting")]
    assert claim_lines(records) == ["claim=c1 slot=worker-01 attempt=1: pending -> booting"]


async def test_a_long_claim_names_event_keeps_200_characters_of_it(pool):
    env = pool
    name = "c" * 230  # a valid object name; the Event's name must stay within 253
    claim = await env.lab.create(objects.claim(name))
    await Recorder(env.ctx).event(claim, "Looked", "a long name")
    [event] = [e for e in env.lab.list("events", "default") if e["involvedObject"]["name"] == name]
    digest = hashlib.sha256(f'{claim["metadata"]["uid"]}//Looked'.encode()).hexdigest()[:10]
    assert event["metadata"]["name"] == f"{'c' * 200}.{digest}"
    assert event["message"] == f'NodeClaim "{name}" on slot "worker-01", attempt 0: a long name'
    assert event["type"] == "Normal"  # warning only when asked


async def test_waiting_for_a_running_shutdown_is_a_normal_event(pool):
    env = pool
    await env.node()  # on, and nobody wants it: its shutdown runs
    await env.step()
    await env.claim("c1")
    await env.step()
    text = ('shutdown Job worker-01-unwanted-1 of slot "worker-01" is still running; the startup waits until it '
            "has ended, so that its power-off cannot land after the boot")
    assert [(e["reason"], e["type"], e["message"]) for e in claim_events(env)] == [
        ("WaitingForShutdown", "Normal", PREFIX + text)]
