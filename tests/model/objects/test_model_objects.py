"""model/objects.py: the read-only accessors every rule reads fields through (absent, null and present)."""
from __future__ import annotations

import pytest

from homecluster.model import objects as o

ABSENT = {"metadata": {"name": "x"}}
NULLS = {"metadata": {"name": "x", "annotations": None, "ownerReferences": None, "labels": None},
         "spec": {"taints": None}, "status": {"powerState": None, "shutdownJob": None}}


@pytest.mark.parametrize("read, empty", [
    (o.resource_version, ""), (o.annotations_of, {}), (o.owner_references, []), (o.power_state_text, ""),
    (o.claim_shutdown_job, ""), (o.labels_of, {}), (o.taints_of, []), (o.provider_id, ""),
])
def test_an_absent_or_null_field_reads_as_empty(read, empty):
    assert read(ABSENT) == empty and read(NULLS) == empty and read(None) == empty


def test_present_fields_are_read_as_written():
    obj = {"metadata": {"name": "x", "resourceVersion": "12", "annotations": {"a": "1"},
                        "ownerReferences": [{"uid": "u"}]},
           "spec": {"providerID": "homecluster://x"},
           "status": {"powerState": "on", "shutdownJob": "x-shutdown-1"}}
    assert o.resource_version(obj) == "12"
    assert o.annotations_of(obj) == {"a": "1"}
    assert o.owner_references(obj) == [{"uid": "u"}]
    assert o.power_state_text(obj) == "on"
    assert o.claim_shutdown_job(obj) == "x-shutdown-1"
    assert o.provider_id(obj) == "homecluster://x"


@pytest.mark.parametrize("read, empty", [
    (o.name_of, ""), (o.uid_of, ""), (o.phase_text, ""), (o.slot_group, ""), (o.claim_slot, ""),
    (o.claim_reason, ""), (o.claim_attempt, 0), (o.slot_last_claim, None),
])
def test_an_object_without_the_field_reads_as_empty(read, empty):
    """Absent, null, or no object at all: the same empty value, never None where a string is promised."""
    for obj in ({}, {"metadata": None, "spec": None, "status": None}, None,
                {"metadata": {"name": None, "uid": None}, "spec": {"groupRef": None, "slotRef": None},
                 "status": {"phase": None, "reason": None, "attempt": None, "lastClaim": None}}):
        got = read(obj)
        assert got == empty and type(got) is type(empty), (read.__name__, obj, got)


def test_slot_and_claim_fields_are_read_as_written():
    digest = {"name": "worker-01-a", "attempt": 2, "phase": "failed"}
    slot = {"metadata": {"name": "worker-01", "uid": "u-1"}, "spec": {"groupRef": "workers"},
            "status": {"phase": "ready", "lastClaim": digest}}
    claim = {"metadata": {"name": "worker-01-b"}, "spec": {"slotRef": "worker-01"},
             "status": {"phase": "failed", "reason": "MachineGone", "attempt": "3"}}
    assert (o.name_of(slot), o.uid_of(slot), o.slot_group(slot), o.phase_text(slot)) == (
        "worker-01", "u-1", "workers", "ready")
    assert o.slot_last_claim(slot) == digest
    assert (o.claim_slot(claim), o.claim_reason(claim), o.claim_attempt(claim)) == ("worker-01", "MachineGone", 3)


def test_describe_names_the_kind_and_the_object_or_says_unnamed():
    assert o.describe({"metadata": {"name": "worker-01"}}, "slot") == 'slot "worker-01"'
    assert o.describe({}, "NodeClaim") == 'NodeClaim "<unnamed>"'


def test_an_unreadable_timestamp_names_the_field_and_the_object():
    from homecluster.model.timestamps import TimestampError
    bad = {"metadata": {"name": "worker-01-b"}, "status": {"readyAt": "soon"}}
    with pytest.raises(TimestampError) as err:
        o.time_field(bad, "status", "readyAt")
    assert str(err.value).startswith("status.readyAt of worker-01-b: 'soon' is not an RFC 3339 timestamp")
    with pytest.raises(TimestampError) as err:
        o.time_field({"status": {"readyAt": "soon"}}, "status", "readyAt")
    assert str(err.value).startswith("status.readyAt of <unnamed>: ")


def test_an_object_without_a_name_cannot_be_indexed_and_the_error_quotes_at_most_200_characters():
    big = {"metadata": {"labels": {"k": "v" * 500}}}
    with pytest.raises(ValueError) as err:
        o.required_name(big)
    assert str(err.value) == f"object without metadata.name cannot be cached: {str(big)[:200]}"
    assert o.required_name({"metadata": {"name": "x"}}) == "x"
