"""lifecycle.owner: the owner's action is the first OWNER_STEPS entry whose precondition holds (pure: Facts built
directly from objects shaped as the API returns them, nothing run)."""
from __future__ import annotations

from datetime import datetime, timezone

from support import objects
from homecluster.lifecycle.facts import Facts
from homecluster.lifecycle.owner import OWNER_STEPS, Turn, first_step

NOW = datetime(2026, 12, 4, 1, 0, 0, tzinfo=timezone.utc)
SLOT = {"metadata": {"name": "worker-01"}, "spec": {"groupRef": "g"}}


def claim(phase: str, **meta) -> dict:
    return objects.claim("c1", phase=phase, attempt=1,
                         metadata={"uid": "u1", "creationTimestamp": "2026-12-04T00:59:00Z", **meta})


def step(*claims: dict, slot: dict | None = SLOT) -> str:
    return first_step(Turn(Facts("worker-01", slot, None, list(claims), None, [], NOW))).name


def test_each_owner_phase_has_its_step():
    assert step() == "no owner"
    assert step(claim("pending")) == "launch"
    assert step(claim("booting")) == "monitor the boot"


def test_a_slot_gone_under_a_booting_or_ready_claim_is_seen_before_any_decision():
    assert step(claim("booting"), slot=None) == "slot gone under its claim"
    assert step(claim("ready"), slot=None) == "slot gone under its claim"
    assert not next(s for s in OWNER_STEPS if s.name == "slot gone under its claim").decided
    assert step(claim("pending"), slot=None) == "launch"


def test_a_deleted_live_claim_is_reversed_whatever_its_phase():
    deleting = {"deletionTimestamp": "2026-12-04T00:59:30Z", "finalizers": ["infra.homecluster.dev/claim"]}
    assert step(claim("pending", **deleting)) == "reverse or complete"
    assert step(claim("booting", **deleting)) == "reverse or complete"


def test_the_last_step_always_applies():
    assert OWNER_STEPS[-1].when(Turn(Facts("worker-01", SLOT, None, [], None, [], NOW)))
