"""What the campaign's recorder makes of the store's events (chaos_record.py), on hand-made objects."""
from __future__ import annotations

from chaos_invariants import (CLAIM_ATTEMPT, CLAIM_CREATED, CLAIM_DELETING, CLAIM_GONE, CLAIM_PHASE, JOB_CREATED,
                              JOB_ENDED)
from chaos_record import claim_events, job_events

from homecluster import names


def claim(phase: str = "", attempt: int | None = None, deleting: bool = False) -> dict:
    md = {"name": "c1", **({"deletionTimestamp": "2026-12-01T10:00:00Z"} if deleting else {})}
    status = {**({"phase": phase} if phase else {}), **({"attempt": attempt} if attempt is not None else {})}
    return {"metadata": md, "spec": {"slotRef": "worker-01", "deadlineAt": "2026-12-01T10:01:00Z"},
            "status": status}


def test_a_claims_life_becomes_events():
    created = claim_events(1.0, "ADDED", claim(), None)
    assert [(e.kind, e.slot, e.claim) for e in created] == [(CLAIM_CREATED, "worker-01", "c1")]
    assert float(created[0].value) == 1796119260.0  # 2026-12-01T10:01:00Z
    seeded = claim_events(2.0, "MODIFIED", claim("pending", 1), claim())
    assert [(e.kind, e.value) for e in seeded] == [(CLAIM_PHASE, "pending"), (CLAIM_ATTEMPT, "1")]
    assert claim_events(3.0, "MODIFIED", claim("pending", 1), claim("pending", 1)) == []
    deleting = claim_events(4.0, "MODIFIED", claim("ready", 1, deleting=True), claim("ready", 1))
    assert [e.kind for e in deleting] == [CLAIM_DELETING]
    assert [e.kind for e in claim_events(5.0, "DELETED", claim("completed", 1, True), None)] == [CLAIM_GONE]


def job(kind: str | None = "startup", failed_reason: str | None = None) -> dict:
    labels = {names.LABEL_SLOT: "worker-01", names.LABEL_CLAIM: "c1", **({names.LABEL_JOB_KIND: kind} if kind else {})}
    conds = [{"type": "Failed", "status": "True", "reason": failed_reason}] if failed_reason else []
    return {"metadata": {"name": "c1-startup", "labels": labels}, "status": {"conditions": conds}}


def test_a_lifecycle_jobs_start_and_end_become_events_and_other_jobs_none():
    assert [(e.kind, e.value) for e in job_events(1.0, "ADDED", job(), None)] == [(JOB_CREATED, "startup")]
    assert job_events(2.0, "MODIFIED", job(), job()) == []
    ended = job_events(3.0, "MODIFIED", job(failed_reason="DeadlineExceeded"), job())
    assert [(e.kind, e.claim) for e in ended] == [(JOB_ENDED, "c1")]
    assert [e.kind for e in job_events(4.0, "DELETED", job(), job())] == [JOB_ENDED]  # removed while running
    assert job_events(4.0, "DELETED", job(failed_reason="X"), job(failed_reason="X")) == []  # ended already
    assert job_events(1.0, "ADDED", job(kind=None), None) == []
