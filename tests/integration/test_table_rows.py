"""Every row of the seed's decision table, reached with the real operator in the lab.

For each row the slot's PHASE column is checked twice: status.phase, and what `kubectl get slots` prints.
Rows that last (a Job running, a machine on by hand, a cordon) are checked at rest; rows that last only
between two writes (pending before the Job, a deleted claim whose machine is already off) are read from
a real watch stream of the slots (Timeline), where the observer's write shows them together with the claim.

Two rows are made to last on purpose:
- pending/off and pending/on: the lab API server refuses every Job create (its fault injection, a 500),
  so a seeded claim stays pending -- as it would behind a quota or an admission policy refusing Jobs;
- completed/off and completed/on: the test holds the released claim with a finalizer of its own, so a
  completed claim stays on the slot (a released claim is otherwise deleted the moment it completes).

Rows (live claim, observed power, usable -> PHASE):
 1 none/off -> off          2 none/on -> draining        3 pending/off -> pending     4 pending/on -> booting
 5 booting -> booting        6 ready/on/usable -> ready   7 ready/on/not usable -> booting
 8 ready/off -> booting      9 deleting/on -> draining    10 deleting/off -> off
 11 failed|completed/on -> draining                      12 failed|completed/off -> off
"""
from __future__ import annotations

import asyncio

import pytest
from integration_pool import (CLAIMS, NODES, Pool, kubectl, set_fault, settled_phase, short_lab_config,
                              slot_timelines)
from support.waits import until

from homecluster import names
from homecluster_lab.cluster import LabCluster
from homecluster_lab.topology import READINESS_TAINT

pytestmark = [pytest.mark.lab, pytest.mark.slow]
HOLD = "lab.homecluster.dev/test-hold"  # the test's own finalizer: keeps a completed claim on the slot




@pytest.fixture
async def pool(tmp_path):
    # No row is about the Jobs' own timeouts, and on a busy machine ansible-playbook alone can take more than
    # SHORT_SETTINGS' 25 s before it sends the power-on (b1 then failed StartupJobTimedOut before its machine
    # ever joined), and a shutdown Job past its 30 s is fired again (issue 28): short_lab_config stretches both
    # to the machine's load.
    async with LabCluster(short_lab_config(tmp_path, slots=3)) as lab:
        yield Pool(lab)


def node(pool: Pool, slot: str) -> dict:
    return pool.api.get(NODES, slot) or {}


async def add_hold(pool: Pool, claim: str) -> None:
    finalizers = list(pool.claim_obj(claim)["metadata"].get("finalizers") or [])
    await pool.api.patch(CLAIMS, claim, {"metadata": {"finalizers": finalizers + [HOLD]}})


async def drop_hold(pool: Pool, claim: str) -> None:
    finalizers = [f for f in pool.claim_obj(claim)["metadata"].get("finalizers") or [] if f != HOLD]
    await pool.api.patch(CLAIMS, claim, {"metadata": {"finalizers": finalizers}})


async def rows_1_3_4(pool: Pool) -> None:
    """Row 1 at rest; rows 3 and 4 held by refusing Job creates; then the boot goes on (row 5)."""
    await settled_phase(pool, "worker-01", "off")  # row 1
    pool.api.faults.fail_next("jobs.batch", count=10**6, code=500, verbs=["create"])
    try:
        await pool.claim("a1")
        await until(lambda: pool.status("a1").get("attempt") == 1, "a1 seeded", 10)
        await settled_phase(pool, "worker-01", "pending")  # row 3: pending/off, held
        await asyncio.sleep(1.5)
        assert pool.status("a1").get("phase") == "pending" and pool.jobs() == []
        assert pool.slot_status("worker-01")["phase"] == "pending"
        pool.lab.machine("worker-01").power_on()  # a person powers it on while the claim waits
        await until(lambda: pool.slot_status("worker-01").get("powerState") == "on", "worker-01 observed on", 15)
        await settled_phase(pool, "worker-01", "booting")  # row 4: pending/on
        assert pool.status("a1").get("phase") == "pending"
    finally:
        pool.api.faults.clear()
    # the machine is already on and joined: booting -> ready as soon as the Job exists (row 5 in passing;
    # slot_b_failed_rows reads it at rest)
    await pool.phase("a1", "ready", timeout=15)


async def slot_a_ready_rows(pool: Pool, slots) -> None:
    """Rows 6-12 on worker-01 with claim a1."""
    await settled_phase(pool, "worker-01", "ready")  # row 6

    # row 7 by a person's cordon: reported booting, and the gate never lifts it
    await kubectl(pool, "cordon", "worker-01")
    await settled_phase(pool, "worker-01", "booting", timeout=10)
    await asyncio.sleep(3)  # several polls and uncordon retries
    assert node(pool, "worker-01")["spec"].get("unschedulable") is True, "a person's cordon was lifted"
    assert pool.status("a1")["phase"] == "ready"
    await kubectl(pool, "uncordon", "worker-01")
    await settled_phase(pool, "worker-01", "ready", timeout=10)

    # row 7 by a readiness taint put back: waited for, never removed by the operator
    taints = list(node(pool, "worker-01")["spec"].get("taints") or [])
    await pool.api.patch(NODES, "worker-01", {"spec": {"taints": taints + [{"key": READINESS_TAINT,
                                                                            "effect": "NoSchedule"}]}})
    await settled_phase(pool, "worker-01", "booting", timeout=10)
    await asyncio.sleep(2)
    assert any(t["key"] == READINESS_TAINT for t in node(pool, "worker-01")["spec"].get("taints") or [])
    assert pool.status("a1")["phase"] == "ready"
    await pool.api.patch(NODES, "worker-01", {"spec": {"taints": taints}})
    await settled_phase(pool, "worker-01", "ready", timeout=10)

    # row 8: the machine powers itself off while ready; the claim stays ready, the slot reports booting
    await set_fault(pool, "worker-01", "powers-off-while-ready=0")
    await until(lambda: pool.lab.machine("worker-01").power_state() == "off", "worker-01 off by itself", 10)
    await set_fault(pool, "worker-01", None)
    await settled_phase(pool, "worker-01", "booting", timeout=15)
    assert pool.slot_status("worker-01")["powerState"] == "off"
    assert pool.status("a1")["phase"] == "ready" and pool.status("a1").get("machineObservedOffAt")
    pool.lab.machine("worker-01").power_on()  # back before the window: row 6 again
    await settled_phase(pool, "worker-01", "ready", timeout=15)
    assert "machineObservedOffAt" not in pool.status("a1")

    # rows 9 and 10: delete the ready claim (held by our finalizer once the operator's is released)
    await add_hold(pool, "a1")
    await pool.api.delete(CLAIMS, "a1")
    await settled_phase(pool, "worker-01", "draining", timeout=10)  # row 9: the shutdown Job runs
    await pool.phase("a1", "completed", timeout=40)
    slot_tl, _ = slots
    row10 = slot_tl.first("worker-01", lambda o: (o.get("status") or {}).get("claim") == "a1"
                          and o["status"].get("phase") == "off" and o["status"].get("powerState") == "off")
    assert row10 is not None, f"no slot write showed row 10 (deleting/off): {slot_tl.statuses('worker-01')[-6:]}"
    # the release is the reversal's last write, after completed and the slot's lastClaim: wait for it
    await until(lambda: names.FINALIZER not in pool.claim_obj("a1")["metadata"]["finalizers"],
                "our finalizer to be released after the claim completed", 10)

    # row 12 (completed/off), then row 11 (completed/on): a completed claim is not a want
    await settled_phase(pool, "worker-01", "off")
    before = pool.status("a1").get("shutdownAttempts", 0)
    assert not [j for j in pool.jobs() if j["metadata"]["name"].startswith("worker-01-unwanted-")]
    pool.lab.machine("worker-01").power_on()
    await settled_phase(pool, "worker-01", "draining", timeout=15)  # row 11
    await until(lambda: pool.lab.machine("worker-01").power_state() == "off", "worker-01 shut down", 40)
    await settled_phase(pool, "worker-01", "off", timeout=15)  # row 12
    # an unwanted machine's shutdown counts on the slot (which no TTL collects), not on the terminal claim
    assert pool.status("a1").get("shutdownAttempts", 0) == before, "the shutdown counted on the terminal claim"
    assert [j["metadata"]["name"] for j in pool.jobs() if j["metadata"]["name"].startswith("worker-01-unwanted-")] \
        == ["worker-01-unwanted-1"]
    await drop_hold(pool, "a1")
    await pool.gone("a1")
    await settled_phase(pool, "worker-01", "off")  # row 1 again: a free slot


async def slot_b_failed_rows(pool: Pool) -> None:
    """Row 5 at rest, then rows 11 and 12 with a failed claim: the readiness taints never clear, the gate
    times out with the machine on (failed/on -> draining while the forced shutdown runs), then off."""
    await set_fault(pool, "worker-02", "taints-never-clear")
    await pool.claim("b1", slot="worker-02")
    await pool.phase("b1", "booting", timeout=15)
    await settled_phase(pool, "worker-02", "booting")  # row 5: the startup Job runs, then the gate waits
    status = await pool.phase("b1", "failed", timeout=40)
    assert status["reason"] == "ReadinessGateTimedOut", status
    await settled_phase(pool, "worker-02", "draining", timeout=10)  # row 11: failed/on
    await until(lambda: pool.lab.machine("worker-02").power_state() == "off", "worker-02 forced off", 40)
    await settled_phase(pool, "worker-02", "off", timeout=15)  # row 12: failed/off
    await set_fault(pool, "worker-02", None)


async def slot_c_unwanted(pool: Pool) -> None:
    """Row 2: a machine powered on by hand with no claim is shut down."""
    pool.lab.machine("worker-03").power_on()
    await settled_phase(pool, "worker-03", "draining", timeout=15)
    await until(lambda: pool.lab.machine("worker-03").power_state() == "off", "worker-03 shut down", 40)
    await settled_phase(pool, "worker-03", "off", timeout=15)
    assert pool.slot_status("worker-03").get("claim") is None


async def test_every_row_of_the_decision_table(pool):
    slots = slot_timelines(pool)
    for tl in slots:
        await tl.start()
    try:
        await rows_1_3_4(pool)
        await asyncio.gather(slot_a_ready_rows(pool, slots), slot_b_failed_rows(pool), slot_c_unwanted(pool))
        slot_tl, claim_tl = slots
        # what the watch saw, in order: each slot went through the phases its rows name
        assert slot_tl.phases("worker-01")[:5] == ["off", "pending", "booting", "ready", "booting"], \
            slot_tl.phases("worker-01")
        assert "draining" in slot_tl.phases("worker-02") and slot_tl.phases("worker-02")[-1] == "off"
        assert slot_tl.phases("worker-03") == ["off", "draining", "off"], slot_tl.phases("worker-03")
        assert claim_tl.phases("a1") == ["pending", "booting", "ready", "completed"], claim_tl.phases("a1")
    finally:
        for tl in slots:
            await tl.stop()
