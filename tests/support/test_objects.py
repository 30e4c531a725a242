"""support.objects: what the builders write is what the CRDs admit, and only what a test asked for."""
from __future__ import annotations

from support import objects

from homecluster import names
from homecluster.api.crd import all_crds
from homecluster_lab.crdcheck.openapi import crd_schema, validate


def test_every_builder_writes_an_object_its_crd_admits():
    schema = {kind: crd_schema(crd) for kind, crd in all_crds().items()}
    built = [objects.claim("c1", "worker-01", "booting", requested_at="2026-01-01T00:00:00Z",
                           deadline_at="2026-01-01T00:05:00Z", labelled=True, finalizers=[names.FINALIZER],
                           spec={"ttlSecondsAfterFinished": 600}, attempt=1),
             objects.claim("c2"), objects.slot(power=objects.ipmi()), objects.group(max_size=5)]
    assert {o["kind"]: [str(e) for e in validate(o, schema[o["kind"]])] for o in built} == \
        {"NodeClaim": [], "Node": [], "Group": []}


def test_a_claim_says_only_what_it_was_given():
    bare = objects.claim("c2", "worker-02")
    assert bare["spec"] == {"slotRef": "worker-02"} and "status" not in bare and "labels" not in bare["metadata"]
    full = objects.claim("c1", phase="pending", labelled=True, attempt=1)
    assert full["metadata"]["labels"] == {names.LABEL_SLOT: "worker-01"}
    assert full["status"] == {"phase": "pending", "attempt": 1}
    assert objects.node("w1", "homecluster://w1", ready=False)["status"]["conditions"] == \
        [{"type": "Ready", "status": "False"}]
