"""A Job's identity cannot be mixed up (issue 23, items 4 and 13).

- Label values are cut to 63 characters with a hash; a 24-bit hash was made to collide by two long slot
  names (found by a birthday search: the two names below). The slot a Job belongs to is its label value
  confirmed by its full name in an annotation, so even a collision of the cut value never mixes two slots.
- The three kinds of Job name end in suffixes no other kind can end in, whatever the owner is called: a claim
  named like its slot never needs a name the slot's own shutdown Jobs hold.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass
from datetime import timedelta

import pytest
from support import objects

from homecluster import names
from homecluster.jobs import label_value, names_slot, shutdown_job, shutdown_job_name, startup_job, startup_job_name
from homecluster.kube.store import JOBS, Store
from homecluster.kube.cache import SLOTS

NS = "homecluster-system"
IMAGE = "runner:test"
# two slot names whose label values collided under the 24-bit hash (sha256(name)[:6] == "2825b9" for both)
A = "rack-07-chassis-02-blade-" + "x" * 40 + "-747"
B = "rack-07-chassis-02-blade-" + "x" * 40 + "-3566"
GROUP = {"metadata": {"name": "pool-a", "uid": "g"}, "spec": {"maxSize": 3}}


@dataclass
class Settings:
    startup_job_timeout: timedelta = timedelta(minutes=5)
    shutdown_job_timeout: timedelta = timedelta(minutes=10)


def slot(name: str, uid: str) -> dict:
    return {"apiVersion": "infra.homecluster.dev/v2alpha1", "kind": "Node",
            "metadata": {"name": name, "uid": uid, "resourceVersion": "1"},
            "spec": {"groupRef": "pool-a", "power": {"method": "ipmi", "ipmi": {
                "address": "10.0.0.1", "credentialsSecretRef": {"name": "bmc"}}}}}


def claim(name: str, slot_name: str, uid: str) -> dict:
    return objects.claim(name, slot_name, "pending", metadata={"uid": uid}, attempt=1)


def job_of(slot_name: str, uid: str, rv: str) -> dict:
    job = startup_job(claim(f"c-{uid}", slot_name, uid), slot(slot_name, f"s-{uid}"), GROUP, Settings(),
                      namespace=NS, image=IMAGE)
    job["metadata"]["resourceVersion"] = rv
    return job


def test_two_long_slot_names_never_share_their_jobs():
    store = Store()
    for s in (A, B):
        store.apply(SLOTS, slot(s, s[-4:]))
    a, b = job_of(A, "1", "10"), job_of(B, "2", "11")
    store.apply(JOBS, a)
    store.apply(JOBS, b)
    assert [j["metadata"]["name"] for j in store.jobs_of_slot(A)] == [a["metadata"]["name"]]
    assert [j["metadata"]["name"] for j in store.jobs_of_slot(B)] == [b["metadata"]["name"]]
    assert store.slots_for(JOBS, a) == [A] and store.slots_for(JOBS, b) == [B]
    assert label_value(A) != label_value(B) and all(len(label_value(s)) <= 63 for s in (A, B))


def test_a_colliding_label_value_is_not_the_identity():
    """Whatever hash is used, a cut label value can be matched: the annotation decides."""
    forged = copy.deepcopy(job_of(B, "2", "11"))
    forged["metadata"]["labels"][names.LABEL_SLOT] = label_value(A)  # as if B's cut value equalled A's
    assert names_slot(forged, B) is False and names_slot(forged, A) is False
    store = Store()
    store.apply(JOBS, forged)
    assert store.jobs_of_slot(A) == [] and store.jobs_of_slot(B) == []
    pod_annotations = forged["spec"]["template"]["metadata"]["annotations"]
    assert pod_annotations[names.ANNOTATION_SLOT_NAME] == B  # the pods are confirmed the same way


def test_a_short_slot_named_like_a_cut_label_value_is_not_the_long_slot():
    short = label_value(A)  # a slot literally named like A's cut value (it fits in 63 characters)
    job = job_of(A, "1", "10")
    assert names_slot(job, A) and not names_slot(job, short)


def test_a_job_without_the_annotation_is_taken_only_by_a_whole_label_value():
    legacy = {"metadata": {"name": "j", "labels": {names.LABEL_SLOT: "worker-01"}}}
    assert names_slot(legacy, "worker-01")
    cut = {"metadata": {"name": "j", "labels": {names.LABEL_SLOT: label_value(A)}}}
    assert not names_slot(cut, A)
    assert not names_slot(legacy, "")


@pytest.mark.parametrize("owner", ["worker-01", "worker-01-unwanted", "w-shutdown", "a-startup", "x-1", "n" * 80])
def test_a_claim_named_like_its_slot_never_meets_the_slots_names(owner):
    slot_names = {shutdown_job_name(owner, n, slot_owned=True) for n in range(1, 12)}
    claim_names = {shutdown_job_name(c, n) for c in (owner, owner + "-unwanted", owner[:-1]) for n in range(1, 12)}
    claim_names |= {startup_job_name(c) for c in (owner, owner + "-unwanted-1")}
    assert not slot_names & claim_names
    assert all(len(n) <= 63 for n in slot_names | claim_names)


def test_the_slots_own_shutdown_is_named_unwanted():
    s = slot("worker-01", "s1")
    s["status"] = {"shutdown": {"attempts": 2}}
    job = shutdown_job(None, s, GROUP, Settings(), force=False, namespace=NS, image=IMAGE)
    assert job["metadata"]["name"] == "worker-01-unwanted-3"
    mine = shutdown_job(claim("worker-01", "worker-01", "c1"), s, GROUP, Settings(), force=False, namespace=NS,
                        image=IMAGE)
    assert mine["metadata"]["name"] == "worker-01-shutdown-1"
    assert job["metadata"]["annotations"][names.ANNOTATION_SLOT_NAME] == "worker-01"
