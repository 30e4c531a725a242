"""model/slotremoval.py: what a slot's removal asks for, row by row, and the helpers that read its inputs."""
from __future__ import annotations

from datetime import datetime, timezone

import pytest
from support import objects

from homecluster.model.shutdown import ShutdownCounter
from homecluster.model.slotremoval import (Removal, RemovalFacts, exhausted, has_finalizer, refusal_text, removal,
                                           reversing, unreleased_claims)

T = datetime(2026, 3, 4, 10, 0, tzinfo=timezone.utc)
F = "infra.homecluster.dev/slot-release"


def claim(name, phase=None, deleting=False):
    return objects.claim(name, phase=phase, metadata={"deletionTimestamp": "2026-03-04T10:00:00Z"} if deleting else None)


DELETING = dict(deleting=True, finalized=True)


@pytest.mark.parametrize("facts, expected", [
    # not being deleted: the finalizer is all there is to it
    (RemovalFacts(deleting=False, finalized=True), Removal.KEEP),
    (RemovalFacts(deleting=False, finalized=False), Removal.FINALIZE),
    (RemovalFacts(deleting=False, finalized=True, unreleased=("c1",), machine_on=True), Removal.KEEP),
    # being deleted without our finalizer: nothing of ours holds it (today's SlotNotFound path)
    (RemovalFacts(deleting=True, finalized=False, unreleased=("c1",), machine_on=True), Removal.GONE),
    # live claims first, whatever else runs
    (RemovalFacts(**DELETING, unreleased=("c1",), jobs_running=True, machine_on=True, exhausted=True),
     Removal.RELEASE_CLAIMS),
    # a Job running holds it, even past the bound
    (RemovalFacts(**DELETING, jobs_running=True), Removal.WAIT),
    (RemovalFacts(**DELETING, jobs_running=True, machine_on=True, exhausted=True), Removal.WAIT),
    # the machine on: wait for its shutdown, give up only past the bound and quiet
    (RemovalFacts(**DELETING, machine_on=True), Removal.WAIT),
    (RemovalFacts(**DELETING, machine_on=True, exhausted=True, quiet=False), Removal.WAIT),
    (RemovalFacts(**DELETING, machine_on=True, exhausted=True), Removal.GIVE_UP),
    (RemovalFacts(**DELETING, machine_on=True, exhausted=True, reversing=True), Removal.GIVE_UP),
    (RemovalFacts(**DELETING, machine_on=True, reversing=True), Removal.WAIT),
    # the machine off: a reversal still under way completes in its own step
    (RemovalFacts(**DELETING, reversing=True), Removal.WAIT),
    (RemovalFacts(**DELETING, reversing=True, exhausted=True), Removal.WAIT),
    # nothing holds it
    (RemovalFacts(**DELETING), Removal.RELEASE),
    (RemovalFacts(**DELETING, exhausted=True, quiet=False), Removal.RELEASE),
])
def test_each_row(facts, expected):
    assert removal(facts) == expected


def test_the_defaults_read_as_a_quiet_slot_with_nothing_under_way():
    facts = RemovalFacts(deleting=True, finalized=True)
    assert (facts.unreleased, facts.reversing, facts.jobs_running, facts.machine_on, facts.quiet, facts.exhausted) \
        == ((), False, False, False, True, False)
    assert [r.value for r in Removal] == ["keep", "finalize", "release-claims", "wait", "release", "give-up", "gone"]


def test_unreleased_claims_are_the_live_ones_not_being_deleted_by_name():
    claims = [claim("z-pending"), claim("a-ready", "ready"), claim("b-booting", "booting", deleting=True),
              claim("c-failed", "failed"), claim("d-done", "completed"), claim("e-empty", "")]
    assert unreleased_claims(claims) == ("a-ready", "e-empty", "z-pending")
    assert unreleased_claims([]) == ()


def test_reversing_is_a_live_claim_marked_for_deletion():
    assert reversing([claim("a", "booting", deleting=True)]) is True
    assert reversing([claim("a", deleting=True)]) is True  # pending: its cancel is under way
    assert reversing([claim("a", "ready"), claim("b", "failed", deleting=True)]) is False
    assert reversing([]) is False


@pytest.mark.parametrize("counter, limit, expected", [
    (ShutdownCounter(3, T), 3, True),
    (ShutdownCounter(4, T), 3, True),
    (ShutdownCounter(2, T), 3, False),  # a hold below the bound is none of the bound's
    (ShutdownCounter(3, None), 3, False),  # at the bound without a hold: it may fire (model.shutdown, rule 5)
    (ShutdownCounter(0, None), 3, False),
    (ShutdownCounter(1, T), 0, True),  # a limit below 1 reads as 1
    (ShutdownCounter(0, T), 0, False),
])
def test_exhausted_is_the_bound_reached_and_held(counter, limit, expected):
    assert exhausted(counter, limit) is expected


def test_has_finalizer_reads_metadata_finalizers():
    assert has_finalizer({"metadata": {"finalizers": ["x", F]}}, F) is True
    assert has_finalizer({"metadata": {"finalizers": ["x"]}}, F) is False
    assert has_finalizer({"metadata": {"finalizers": None}}, F) is False
    assert has_finalizer({"metadata": {}}, F) is False
    assert has_finalizer(None, F) is False


def test_the_refusal_names_the_slot_the_field_and_why():
    assert refusal_text("worker-07") == ('slot "worker-07" is being removed (it is marked for deletion): no new '
                                         "claim may start on it; name another slot in spec.slotRef")
