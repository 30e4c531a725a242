"""lifecycle.slotevents: the Events a user reads on a slot (infra.homecluster.dev Node), whole, on the lab's API server.

PowerObservedOff / PowerObservedOn / ShutdownHeldOff as the real pass posts them: the deterministic name
(the slot's uid, the change's key, the reason), the object and resourceVersion they are about, reason, type
and the whole message. An Event that cannot be posted is logged with the slot's name and never fails the
pass; a retried post (same key) lands once and says nothing.
"""
from __future__ import annotations

import hashlib
import logging

import pytest
from support.event_shapes import as_posted, as_read
from support.pool import newest_shutdown

from homecluster.lifecycle import slotevents
from homecluster.model.timestamps import format_time

pytestmark = pytest.mark.lab
SLOTS = "nodes.infra.homecluster.dev"
OFF = "the machine is observed off"
OFF_AFTER_ON = "the machine is observed off: its Kubernetes Node is not Ready, or gone"
ON = "the machine is observed on: its Kubernetes Node is Ready"


def slot_events(env) -> list[dict]:
    found = [e for e in env.lab.list("events", "default") if e["involvedObject"]["kind"] == "Node"
             and e["involvedObject"]["apiVersion"] == "infra.homecluster.dev/v2alpha1"]
    return sorted(found, key=lambda e: int(e["metadata"]["resourceVersion"]))


def expected(slot: dict, rv: str, key: str, reason: str, text: str, kind: str, stamp: str) -> dict:
    return as_posted(slot, "Node", rv, key, reason, f'slot "worker-01": {text}', kind, stamp)


def slot_status_rvs(env) -> list[str]:
    return [w.rv for w in env.writes() if w.resource == "nodes" and w.group == "infra.homecluster.dev"
            and w.subresource == "status"]


async def test_power_events_are_whole_and_about_the_write_that_changed_power(pool):
    env = pool
    t0 = format_time(env.clock.now)
    await env.step()
    slot = env.get(SLOTS, "worker-01")
    [off_rv] = slot_status_rvs(env)
    first = expected(slot, off_rv, f"power/{off_rv}", "PowerObservedOff", OFF, "Normal", t0)
    assert [as_read(e) for e in slot_events(env)] == [first]

    t1 = format_time(env.clock.advance(seconds=4))
    await env.ready_claim()
    await env.step()
    on = [e for e in slot_events(env) if e["reason"] == "PowerObservedOn"]
    assert [as_read(e) for e in on] == [expected(slot, on[0]["involvedObject"]["resourceVersion"],
                                                 f"power/{on[0]['involvedObject']['resourceVersion']}",
                                                 "PowerObservedOn", ON, "Normal", t1)]
    assert on[0]["involvedObject"]["resourceVersion"] in slot_status_rvs(env)  # about the write that saw it on

    t2 = format_time(env.clock.advance(seconds=3))
    await env.node(ready=False)
    await env.step()
    await env.step()
    last = slot_events(env)[-1]
    rv = last["involvedObject"]["resourceVersion"]
    assert rv in slot_status_rvs(env)
    assert as_read(last) == expected(slot, rv, f"power/{rv}", "PowerObservedOff", OFF_AFTER_ON, "Normal", t2)
    assert [e["reason"] for e in slot_events(env)] == ["PowerObservedOff", "PowerObservedOn", "PowerObservedOff"]


async def test_shutdown_held_off_is_a_whole_warning(env):
    await env.group()
    await env.slot()
    await env.node()  # on, and no claim wants it: shut down, counted on the slot
    await env.step()
    limit = env.ctx.settings.shutdown_attempt_limit
    for _ in range(limit):
        last_job = newest_shutdown(env)
        ended = format_time(env.clock.now)
        await env.job_done(last_job, "failed")  # each ends with the machine still on
        stamp = format_time(env.clock.advance(seconds=6))
        await env.step()
    [held] = [e for e in slot_events(env) if e["reason"] == "ShutdownHeldOff"]
    slot = env.get(SLOTS, "worker-01")
    until = slot["status"]["shutdown"]["heldUntil"]
    text = (f"{limit} shutdown Jobs did not power the machine off (the last, {last_job}, ended at {ended}); "
            f"no shutdown before {until}")
    assert as_read(held) == expected(slot, held["involvedObject"]["resourceVersion"], f"held/worker-01/{limit}",
                                     "ShutdownHeldOff", text, "Warning", stamp)


async def test_a_slot_event_that_cannot_be_posted_is_logged_and_the_pass_goes_on(pool, logged):
    env = pool
    env.lab.faults.fail_next("events", 1, 500, verbs=["create"])
    with logged(env.ctx.log, logging.WARNING) as records:
        await env.step()
    slot = env.get(SLOTS, "worker-01")
    assert slot["status"]["powerState"] == "off"  # the write landed; only the Event is missing
    assert slot_events(env) == []
    [rv] = slot_status_rvs(env)
    name = "worker-01." + hashlib.sha256(f'{slot["metadata"]["uid"]}/power/{rv}/PowerObservedOff'.encode()
                                         ).hexdigest()[:10]
    assert [(r.levelno, r.getMessage()) for r in records] == [(
        logging.WARNING, 'slot "worker-01": could not post the PowerObservedOff event: '
        f"create Event default/{name}: HTTP 500 InternalError: Internal error occurred: injected fault")]


async def test_a_retried_post_lands_once_and_says_nothing(pool, logged):
    env = pool
    slot = env.get(SLOTS, "worker-01")
    with logged(env.ctx.log, logging.DEBUG) as records:
        for _ in range(2):
            await slotevents.post(env.ctx, slot, "Checked", "looked at twice", key="k")
    [event] = slot_events(env)
    assert as_read(event) == expected(slot, slot["metadata"]["resourceVersion"], "k", "Checked", "looked at twice",
                                      "Normal", format_time(env.clock.now))
    assert records == []


def test_power_event_only_for_a_change_to_a_known_state():
    assert slotevents.power_event(None, "off") == ("PowerObservedOff", OFF)
    assert slotevents.power_event("unknown", "off") == ("PowerObservedOff", OFF)
    assert slotevents.power_event("on", "off") == ("PowerObservedOff", OFF_AFTER_ON)
    assert slotevents.power_event("off", "on") == ("PowerObservedOn", ON)
    assert slotevents.power_event(None, "on") == ("PowerObservedOn", ON)
    for before, after in (("on", "on"), ("off", "off"), ("on", "unknown"), (None, None), ("off", "")):
        assert slotevents.power_event(before, after) is None, (before, after)


async def test_a_long_slot_names_event_keeps_200_characters_of_it(env):
    await env.group()
    name = "w" * 230
    slot = await env.slot(name)
    await slotevents.post(env.ctx, slot, "Looked", "a long name", key="k")
    [event] = [e for e in env.lab.list("events", "default") if e["involvedObject"]["name"] == name]
    digest = hashlib.sha256(f'{slot["metadata"]["uid"]}/k/Looked'.encode()).hexdigest()[:10]
    assert event["metadata"]["name"] == f"{'w' * 200}.{digest}"
    assert event["message"] == f'slot "{name}": a long name'
