"""A slot removed (its Node CR deleted: Flux's prune, a person) lets its machine go before it goes (issue 25, item
3; model/slotremoval.py, lifecycle/slotremoval.py): the real pass against the lab API server, the Job controller
and the kubelet played by hand, the fake clock.
"""
from __future__ import annotations

import json

import pytest

from homecluster import names
from homecluster.lifecycle.slotpass import run_pass
from homecluster.lifecycle.slotremoval import REFUSED_RETRY

pytestmark = pytest.mark.lab
CLAIMS = "nodeclaims.infra.homecluster.dev"
SLOTS = "nodes.infra.homecluster.dev"
NS = "homecluster-system"


def job_vars(env, name: str) -> dict:
    job = env.lab.get("jobs.batch", name, NS)
    assert job is not None, f"no Job {name}: {[j['metadata']['name'] for j in env.jobs()]}"
    return json.loads(job["spec"]["template"]["metadata"]["annotations"]["infra.homecluster.dev/job-vars"])


def events(env, reason: str, name: str | None = None) -> list[dict]:
    return [e for e in env.lab.list("events", "default")
            if e["reason"] == reason and name in (None, e["involvedObject"]["name"])]


def finalizers(env, slot: str = "worker-01") -> list[str]:
    return (env.get(SLOTS, slot) or {}).get("metadata", {}).get("finalizers") or []


async def test_every_observed_slot_gets_the_finalizer_and_nothing_else_of_it_changes(pool):
    env = pool
    before = env.get(SLOTS, "worker-01")
    await env.step()
    after = env.get(SLOTS, "worker-01")
    assert finalizers(env) == [names.SLOT_FINALIZER]
    assert after["spec"] == before["spec"]
    patches = [e for e in env.writes() if e.resource == "nodes" and e.group == "infra.homecluster.dev"
               and not e.subresource]
    assert len(patches) == 1  # one metadata write, once
    await env.step()
    assert len([e for e in env.writes() if e.resource == "nodes" and e.group == "infra.homecluster.dev"
                and not e.subresource]) == 1


async def test_a_slot_removed_while_its_claim_is_ready_drains_and_powers_off_its_machine_then_goes(pool):
    env = pool
    await env.ready_claim()
    await env.lab.delete(SLOTS, "worker-01")
    assert env.get(SLOTS, "worker-01") is not None  # held by its finalizer
    await env.step()
    # the claim is deleted as `kubectl delete nodeclaim` would, and its reversal reads the still-present slot
    assert env.get(CLAIMS, "c1")["metadata"]["deletionTimestamp"]
    node = env.get("nodes", "worker-01")
    assert node["spec"]["unschedulable"] is True
    shutdown = job_vars(env, "c1-shutdown-1")
    assert shutdown["force"] is False  # graceful: cordon, drain, power off
    assert (shutdown["slot"], shutdown["power_method"], shutdown["ipmi"]["address"]) == \
        ("worker-01", "ipmi", "127.0.0.1")
    assert env.get(SLOTS, "worker-01") is not None  # the machine is still on
    [said] = events(env, "SlotRemoved", "c1")
    assert said["message"].endswith('slot "worker-01" is being removed (it is marked for deletion): its claim is '
                                    "deleted, so its machine is released (drained and powered off) before the slot "
                                    "goes")
    await env.node(ready=False)
    await env.step()
    assert env.get(SLOTS, "worker-01") is not None  # the shutdown Job has not ended
    await env.job_done("c1-shutdown-1")
    await env.step()
    assert env.get(CLAIMS, "c1") is None
    [released] = events(env, "Released", "c1")
    assert released["reason"] == "Released"
    assert env.get(SLOTS, "worker-01") is None, finalizers(env)
    [removed] = events(env, "Removed", "worker-01")
    assert removed["type"] == "Normal" and removed["message"] == (
        'slot "worker-01": no live claim, no Job running and the machine observed off: the slot\'s finalizer is '
        "released and the slot goes")


async def test_a_slot_removed_while_its_claim_is_pending_cancels_it_and_goes(pool):
    env = pool
    await env.step()  # the slot is observed: it carries the finalizer
    await env.claim()
    await env.lab.delete(SLOTS, "worker-01")
    await env.step()
    assert env.get(CLAIMS, "c1") is None  # nothing was started: gone at once, as a cancel
    assert env.jobs() == []
    assert env.get(SLOTS, "worker-01") is None


async def test_a_slot_removed_with_no_claim_and_its_machine_off_goes_at_once(pool):
    env = pool
    await env.step()
    await env.lab.delete(SLOTS, "worker-01")
    assert env.get(SLOTS, "worker-01") is not None
    await env.step()
    assert env.get(SLOTS, "worker-01") is None
    assert env.jobs() == []


async def test_a_slot_removed_while_its_claim_boots_stops_the_boot_forces_a_shutdown_and_goes(pool):
    env = pool
    await env.claim()
    await env.step()
    assert env.claim_status()["phase"] == "booting"
    await env.lab.delete(SLOTS, "worker-01")
    await env.step()
    assert env.lab.get("jobs.batch", "c1-startup", NS) is None  # the power-on is stopped
    assert job_vars(env, "c1-shutdown-1")["force"] is True  # the machine may be on without having joined
    assert env.get(SLOTS, "worker-01") is not None
    await env.job_done("c1-shutdown-1")
    await env.step()
    assert env.get(CLAIMS, "c1") is None
    assert env.get(SLOTS, "worker-01") is None


async def test_an_unwanted_machine_of_a_removed_slot_is_shut_down_before_the_slot_goes(pool):
    env = pool
    await env.node()  # on, no claim (row 2)
    await env.step()
    await env.lab.delete(SLOTS, "worker-01")
    await env.step()
    assert env.get(SLOTS, "worker-01") is not None
    [job] = [j["metadata"]["name"] for j in env.jobs()]
    await env.node(ready=False)
    await env.job_done(job)
    env.clock.advance(seconds=6)  # past the grace after the shutdown's end
    await env.step()
    assert env.get(SLOTS, "worker-01") is None


async def test_a_machine_that_will_not_go_off_lets_the_slot_go_past_the_bound_with_a_warning(pool):
    env = pool
    await env.node()
    await env.step()
    await env.lab.delete(SLOTS, "worker-01")
    await env.step()
    limit = env.ctx.settings.shutdown_attempt_limit
    for number in range(1, limit + 1):
        assert env.get(SLOTS, "worker-01") is not None, f"released before shutdown Job {number} ended"
        await env.job_done(f"worker-01-unwanted-{number}", "failed")  # the machine stays on
        env.clock.advance(seconds=6)
        await env.step()
    assert env.get(SLOTS, "worker-01") is None
    [warned] = events(env, "RemovedMachineOn", "worker-01")
    assert warned["type"] == "Warning"
    assert warned["message"] == (
        f'slot "worker-01": the machine may still be on: {limit} shutdown Jobs did not power it off, so the slot\'s '
        "finalizer is released anyway and nothing manages this machine any more; switch it off by hand (its BMC, "
        "or `ansible-playbook -i machines.yml homecluster.infra.power -e slot=worker-01 -e state=powered_off` "
        "with an inventory that describes it: docs/collection.md)")


async def test_a_claim_that_got_past_admission_onto_a_removed_slot_is_deleted_before_anything_starts(pool):
    env = pool
    await env.node()  # the machine is on: the slot waits for its shutdown, so it is still there
    await env.step()
    await env.lab.delete(SLOTS, "worker-01")
    await env.step()
    await env.claim("late")  # the lab API server runs no webhook: as if ours had been down
    await env.step()
    assert env.get(CLAIMS, "late") is None
    assert not [j for j in env.jobs() if "late" in j["metadata"]["name"]]


async def test_a_slot_without_its_finalizer_keeps_the_slot_not_found_path(pool):
    env = pool
    await env.ready_claim()
    await env.slot_gone_by_hand()
    await env.lab.delete(CLAIMS, "c1")
    await env.step()
    assert env.get(CLAIMS, "c1") is None
    assert [e["reason"] for e in events(env, "SlotNotFound", "c1")] == ["SlotNotFound"]


async def test_a_refused_finalizer_is_said_once_and_never_stops_the_pass(pool, logged):
    """An install whose RBAC predates the finalizer (no patch on slots): the slot works as before."""
    env = pool
    env.lab.faults.fail_next(SLOTS, count=1, code=403, verbs=["patch"])
    import logging
    with logged(env.ctx.log, logging.WARNING) as records:
        await env.claim()
        await env.refill()
        await run_pass(env.ctx, "worker-01")  # the refused finalizer, then the seed
        assert finalizers(env) == [] and env.claim_status()["attempt"] == 1  # the pass went on
        await env.step()
    assert env.claim_status()["phase"] == "booting"
    assert finalizers(env) == []  # not tried again on every pass (REFUSED_RETRY later: the next test)
    said = [r.getMessage() for r in records if "finalizer" in r.getMessage()]
    assert len(said) == 1 and said[0].startswith('slot "worker-01": cannot add the finalizer '
                                                 "infra.homecluster.dev/slot-release"), said
    assert said[0].endswith("grant patch on nodes.infra.homecluster.dev (config/rbac/role.yaml)"), said  # the fix


async def test_a_ready_claim_whose_slot_went_without_its_finalizer_ends_slot_not_found_at_once(pool):
    """Not failed/MachineGone a boot window later: its machine reads "off" only because no slot names its Node."""
    env = pool
    await env.ready_claim()
    await env.slot_gone_by_hand()
    await env.step()
    status = env.claim_status()
    assert (status["phase"], status.get("reason")) == ("completed", "SlotNotFound"), status
    assert not status.get("machineObservedOffAt")
    assert names.FINALIZER not in (env.get(CLAIMS, "c1")["metadata"].get("finalizers") or [])


async def test_a_refused_finalizer_is_tried_again_minutes_later_never_on_every_pass(pool, logged):
    """A refusal that stays (old RBAC: 403 every time) must not make every pass write -- a pass that wrote is run
    again at once, so that would be a loop of PATCHes: the next try is REFUSED_RETRY later, a wake, not a write."""
    env = pool
    env.lab.faults.fail_next(SLOTS, count=1, code=403, verbs=["patch"])
    await env.refill()
    first = await run_pass(env.ctx, "worker-01")
    assert first.wrote and finalizers(env) == []  # the refused patch
    await env.refill()
    again = await run_pass(env.ctx, "worker-01")
    assert (again.wrote, again.wake) == (False, env.clock.now + REFUSED_RETRY)  # nothing tried, a wake instead
    env.clock.advance(seconds=REFUSED_RETRY.total_seconds() - 1)
    await env.step()
    assert finalizers(env) == []
    env.clock.advance(seconds=1)
    await env.step()
    assert finalizers(env) == [names.SLOT_FINALIZER]  # tried again once the time came, and it landed
