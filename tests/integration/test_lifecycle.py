"""The claim lifecycle end to end: real operator, real playbooks, simulated machines over real IPMI."""
from __future__ import annotations

import asyncio
import time

import aiohttp

import pytest
from integration_pool import CLAIMS, Phases
from support import objects
from support.waits import until

from homecluster import names

pytestmark = [pytest.mark.lab, pytest.mark.slow]


async def test_boot_to_ready_then_release(pool):
    watch = Phases(pool.api.url, "/apis/infra.homecluster.dev/v2alpha1/nodes").start()
    await asyncio.sleep(0.2)
    since = time.time()
    await pool.claim("c1")
    await pool.phase("c1", "ready")
    await until(lambda: "deadlineAt" not in pool.claim_obj("c1")["spec"], "deadline cleared", 5)
    await until(lambda: pool.slot_status().get("phase") == "ready", "slot ready", 5)
    await asyncio.sleep(0.5)
    # the leader's Lease renewals (every --leader-retry-period, whatever the pool does) are not the boot's writes
    writes = [e for e in pool.operator_writes(since) if e.resource != "leases"]
    seq = [(e.resource, e.subresource, e.verb) for e in writes]
    # the ready status write lands before the spec write that clears the deadline
    claim_status = [i for i, w in enumerate(seq) if w == ("nodeclaims", "status", "patch")]
    claim_spec = [i for i, w in enumerate(seq) if w == ("nodeclaims", "", "patch")]
    assert claim_spec[-1] > claim_status[-1]
    # 12 before the slot's Events; the boot adds one, PowerObservedOn (docs/events.md#events-on-slots); and one
    # since the Jobs' token was confined to the pool's Nodes: the readiness gate labels the corev1 Node as the
    # slot's machine (names.LABEL_MACHINE_OF), the only write to it here, as config/policy needs it
    assert len(writes) <= 14, f"{len(writes)} writes for one boot: {seq}"
    assert [(e.resource, e.verb) for e in writes if e.group == ""].count(("nodes", "patch")) == 1, seq
    assert pool.api.get("nodes", "worker-01")["metadata"]["labels"][names.LABEL_MACHINE_OF] == "worker-01"
    assert len([w for w in seq if w == ("events", "", "create")]) == 3  # Booting, Ready, PowerObservedOn
    assert len([w for w in seq if w == ("jobs", "", "create")]) == 1
    history = watch.seen.get("worker-01", [])
    assert history[-3:] == ["pending", "booting", "ready"] or history[-4:-1] == ["pending", "booting", "ready"], history
    assert pool.lab.machine("worker-01").power_state() == "on"

    # release: delete the ready claim -> cordon, drain, power off, completed, lastClaim, finalizer, gone
    await pool.api.delete(CLAIMS, "c1")
    await pool.gone("c1", timeout=40)
    last = pool.slot_status()["lastClaim"]
    assert (last["name"], last["phase"], last["reason"], last["reachedReady"]) == ("c1", "completed", "Released", True)
    assert pool.lab.machine("worker-01").power_state() == "off"
    cordons = [e for e in pool.operator_writes(since) if e.resource == "nodes" and e.group == "" and e.verb == "patch"]
    assert cordons, "the operator cordoned the Node"
    await until(lambda: pool.slot_status().get("phase") == "off", "slot off", 10)
    await watch.stop()


async def test_delete_of_pending_claim_is_gone_at_once_without_a_job(pool):
    await pool.drop_webhook()
    await pool.lab.operator.stop()  # nothing launches the claim while the operator is away
    await pool.claim("p1")
    await pool.api.delete(CLAIMS, "p1")
    assert pool.claim_obj("p1") is None  # no finalizer yet: gone at once
    await pool.lab.operator.start()
    await asyncio.sleep(3)
    assert [j for j in pool.jobs() if j["metadata"]["name"].startswith("p1")] == []


async def test_webhook_refuses_a_second_live_claim(pool, tmp_path):
    await pool.claim("first")
    await pool.phase("first", "booting")
    manifest = tmp_path / "second.yaml"
    manifest.write_text(
        "apiVersion: infra.homecluster.dev/v2alpha1\nkind: NodeClaim\nmetadata:\n  name: second\n"
        "spec:\n  slotRef: worker-01\n")
    proc = await asyncio.create_subprocess_exec(
        "kubectl", "--kubeconfig", str(pool.lab.kubeconfig_path), "create", "-f", str(manifest),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await proc.communicate()
    assert proc.returncode != 0
    phase = pool.status("first")["phase"]
    expected = ('admission webhook "nodeclaim-v2alpha1.kb.io" denied the request: spec.slotRef: Forbidden: '
                f'slot "worker-01" already has the live NodeClaim "first" in phase "{phase}": one live claim per slot')
    assert expected in err.decode(), err.decode()
    # the served refusal is a field.Forbidden on spec.slotRef: reason and structured cause, as the API server returns it
    async with aiohttp.ClientSession(pool.api.url) as session:
        async with session.post("/apis/infra.homecluster.dev/v2alpha1/nodeclaims",
                                json=objects.claim("third", "worker-01")) as resp:
            code, body = resp.status, await resp.json()
    assert (code, body["reason"]) == (403, "Forbidden"), body
    assert body["message"].startswith(expected.split(' in phase "')[0]), body  # the phase may have moved on
    assert body["message"].endswith('": one live claim per slot'), body
    [cause] = body["details"]["causes"]
    assert (cause["field"], cause["reason"]) == ("spec.slotRef", "FieldValueForbidden"), body
    assert cause["message"].startswith('slot "worker-01" already has the live NodeClaim "first" in phase '), body


async def test_webhook_down_newest_owns_and_the_other_is_superseded(pool):
    await pool.drop_webhook()
    await pool.lab.operator.stop()
    await pool.claim("older")
    await asyncio.sleep(1.1)  # creationTimestamp has one-second resolution
    await pool.claim("newer")
    await pool.lab.operator.start()
    await pool.phase("older", "failed")
    assert pool.status("older")["reason"] == "Superseded"
    await pool.phase("newer", "ready")
    assert names.FINALIZER not in (pool.claim_obj("older")["metadata"].get("finalizers") or [])
    assert (pool.slot_status().get("lastClaim") or {}).get("name") != "older"


async def test_a_boot_that_never_comes_up_fails_and_is_forced_off(pool):
    await a_boot_past_its_deadline_fails_and_is_forced_off(pool)


async def a_boot_past_its_deadline_fails_and_is_forced_off(pool, slot: str = "worker-02") -> None:
    """Also run on the real control plane (tests/k8s/test_k8s_integration.py), on another slot."""
    from datetime import timedelta
    pool.lab.machine(slot).set_faults(never_boots=True)
    await pool.claim("doomed", slot=slot, budget=timedelta(seconds=6))
    status = await pool.phase("doomed", "failed", timeout=30)
    assert status["reason"] == "DeadlineExceeded", status
    assert status["shutdownAttempts"] == 1
    await until(lambda: pool.lab.machine(slot).power_state() == "off", "the machine forced off", 30)
    last = await pool.last_claim(slot, "doomed")  # written after the claim's failed status
    assert (last["name"], last["attempt"], last["reason"]) == ("doomed", 1, "DeadlineExceeded")
    pool.lab.machine(slot).set_faults(never_boots=False)
    await pool.claim("next", slot=slot)
    await pool.phase("next", "ready", timeout=30)
    assert pool.status("next")["attempt"] == 2
