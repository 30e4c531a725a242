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
