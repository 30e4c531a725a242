"""What the campaign's recorder makes of the store's events (chaos_record.py), on hand-made objects."""
from __future__ import annotations

import contextlib

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


async def test_the_operators_slot_writes_are_judged_by_what_they_did_to_the_slots_generation(tmp_path):
    """Invariant 4 reads every operator write to a slot's main resource: the finalizer's patch (metadata only)
    passes, a patch that touches spec -- as a broken operator would send it -- is caught, and neither a refused
    write nor one that changed nothing counts. The lab API server and the operator's own client (its user agent)."""
    from pathlib import Path

    from chaos_invariants import SLOT_SPEC_WRITE
    from chaos_record import StoreRecorder, slot_spec_writes
    from homecluster_lab.apiserver.server import LabAPIServer

    from homecluster.kube import client as kube
    from homecluster.kube.connection import Connection

    crds = Path(__file__).resolve().parents[2] / "config" / "crd"
    async with LabAPIServer(crd_dir=crds, workdir=tmp_path / "lab-api") as api:
        await api.create({"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node", "metadata": {"name": "w1"},
                          "spec": {"groupRef": "workers", "power": {"method": "ipmi", "ipmi": {
                              "address": "127.0.0.1", "port": 6230, "credentialsSecretRef": {"name": "w1-bmc"}}}}})
        operator = kube.KubeClient(Connection(server=api.url))
        try:
            with StoreRecorder(api) as store:
                await operator.patch(kube.SLOTS, "w1", {"metadata": {"finalizers": [names.SLOT_FINALIZER]}})
                await operator.patch(kube.SLOTS, "w1", {"metadata": {"finalizers": [names.SLOT_FINALIZER]}})  # no-op
                assert slot_spec_writes(api.audit, store.slot_changes) == []
                with contextlib.suppress(kube.ApiError):  # refused (stale): nothing stored
                    await operator.patch(kube.SLOTS, "w1", {"metadata": {"resourceVersion": "1"},
                                                            "spec": {"power": {"ipmi": {"port": 6231}}}})
                assert slot_spec_writes(api.audit, store.slot_changes) == []
                await operator.patch(kube.SLOTS, "w1", {"spec": {"power": {"ipmi": {"port": 6231}}}})  # broken
                await api.patch("nodes.infra.homecluster.dev", "w1", {"spec": {"power": {"ipmi": {"port": 6232}}}})
                [caught] = slot_spec_writes(api.audit, store.slot_changes)  # Git's own edit is not the operator's
        finally:
            await operator.close()
    assert (caught.kind, caught.slot) == (SLOT_SPEC_WRITE, "w1")
    assert caught.value.startswith("homecluster-operator") and caught.value.endswith(
        ": patch moved metadata.generation 1 -> 2"), caught
