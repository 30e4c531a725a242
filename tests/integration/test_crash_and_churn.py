"""Crash safety (SIGKILL after the Nth write, then restart) and GitOps churn on slot specs."""
from __future__ import annotations

import asyncio
import signal
import time

import pytest
from integration_pool import CLAIMS, SLOTS
from support.waits import until

pytestmark = [pytest.mark.lab, pytest.mark.slow]


async def kill_after(pool, n: int, since: float) -> int:
    """SIGKILL the operator as soon as it has made `n` writes since `since`; returns the count seen."""
    await until(lambda: len(pool.operator_writes(since)) >= n, f"{n} operator writes", 30, interval=0.002)
    pool.lab.operator.proc.send_signal(signal.SIGKILL)
    await pool.lab.operator.proc.wait()
    return len(pool.operator_writes(since))


def power_ons(pool, slot: str = "worker-01") -> int:
    return len([e for e in pool.lab.machine(slot).events if e.action == "on" and e.source != "lab"])


# the happy path's writes: seed, slot pending, finalizer, Job, booting, event, slot booting, slot on,
# ready, event, deadline clear, slot ready -- 4 is "Job created, not yet booting", 9 "ready, deadline not cleared"
@pytest.mark.parametrize("n", [3, 4, 5, 9])
async def test_crash_during_boot_heals_with_one_job_and_one_power_on(pool, n):
    since = time.time()
    await pool.claim("c1")
    killed_at = await kill_after(pool, n, since)
    await pool.lab.operator.start()
    await pool.phase("c1", "ready", timeout=40)
    await until(lambda: "deadlineAt" not in pool.claim_obj("c1")["spec"], "deadline cleared", 10)
    creates = [e for e in pool.api.audit.writes("jobs") if e.verb == "create" and e.code == 201]
    assert len(creates) == 1, f"killed after {killed_at} writes: {len(creates)} startup Jobs"
    assert power_ons(pool) == 1, list(pool.lab.machine("worker-01").events)
    assert pool.status("c1")["attempt"] == 1


@pytest.mark.parametrize("n", [1, 2, 3])
async def test_crash_during_release_heals(pool, n):
    await pool.claim("c1")
    await pool.phase("c1", "ready")
    await until(lambda: "deadlineAt" not in pool.claim_obj("c1")["spec"], "deadline cleared", 10)
    await asyncio.sleep(0.5)
    since = time.time()
    await pool.api.delete(CLAIMS, "c1")
    await kill_after(pool, n, since)
    await pool.lab.operator.start()
    await pool.gone("c1", timeout=40)
    assert pool.lab.machine("worker-01").power_state() == "off"
    last = pool.slot_status()["lastClaim"]
    assert (last["name"], last["reason"]) == ("c1", "Released")


async def test_gitops_churn_changes_nothing_and_the_operator_never_writes_slot_specs(pool):
    manifests = {s["metadata"]["name"]: {"apiVersion": s["apiVersion"], "kind": s["kind"],
                                         "metadata": {"name": s["metadata"]["name"]}, "spec": s["spec"]}
                 for s in pool.api.list(SLOTS)}
    stop = asyncio.Event()

    async def reapply():
        while not stop.is_set():
            for name, body in manifests.items():
                await pool.api.patch(SLOTS, name, {"spec": body["spec"]})  # what `kubectl apply` sends
            try:
                await asyncio.wait_for(stop.wait(), 2.0)
            except asyncio.TimeoutError:
                pass

    churn = asyncio.create_task(reapply())
    try:
        await pool.claim("up")
        await pool.phase("up", "ready", timeout=40)
        await asyncio.sleep(2.5)
        assert pool.status("up")["phase"] == "ready"
        await pool.api.delete(CLAIMS, "up")
        await pool.gone("up", timeout=40)
        await asyncio.sleep(2.5)
        assert pool.lab.machine("worker-01").power_state() == "off"
        assert power_ons(pool) == 1
    finally:
        stop.set()
        await churn
    main = [e for e in pool.operator_writes() if e.resource == "nodes" and e.group == "infra.homecluster.dev"
            and e.subresource != "status"]
    # the slot's finalizer (a merge patch of metadata.finalizers, lifecycle/slotremoval.py), once per slot
    # whatever the crashes: never its spec
    assert all(e.verb == "patch" for e in main) and len({e.name for e in main}) == len(main), main
    status_writes = [e for e in pool.operator_writes() if e.resource == "nodes" and e.group == "infra.homecluster.dev"
                     and e.subresource == "status"]
    assert status_writes, "the filter above must see the operator's slot writes at all"
