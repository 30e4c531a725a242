"""The provider's only writes: create and delete NodeClaims.

`build_claim` (pure) makes the body the provider creates: generateName `<slot>-`, the slot and
group labels, spec.slotRef, spec.requestedAt, spec.deadlineAt = requestedAt + max(boot floor,
group.spec.maxNodeProvisionTime) (homecluster.model.deadlines), spec.requestedBy. It never sets
status.attempt: the claim controller seeds it from the slot's lastClaim, and a claim built from a
possibly stale cache must not bake in a number the controller cannot correct.

A `ClaimWriter` does the I/O: operator/providerglue.py's, which the lab uses too when it runs the provider
without the operator (homecluster_lab.provider.writer). Deletes of claims chosen from the cache
carry a resourceVersion precondition, so "cancel this pending claim" can never delete a claim that
started booting in the meantime (the API server answers 409 and the caller refuses with ABORTED).
Every call takes a timeout: the whole RPC must finish inside CA's grpc_timeout (5 s by default).
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any, Protocol

from homecluster import GROUP_VERSION
from homecluster.model.deadlines import deadline_at
from homecluster.model.objects import name_of
from homecluster.model.settings import Settings
from homecluster.model.timestamps import format_time
from homecluster.names import CLAIM_KIND, LABEL_GROUP, LABEL_SLOT

Obj = Mapping[str, Any]
REQUESTED_BY = "cluster-autoscaler"


def build_claim(slot: Obj, group: Obj, now: datetime, settings: Settings,
                requested_by: str = REQUESTED_BY) -> dict[str, Any]:
    """The NodeClaim the provider creates for one slot of one group."""
    slot_name, group_name = name_of(slot), name_of(group)
    requested = format_time(now)
    return {
        "apiVersion": GROUP_VERSION,
        "kind": CLAIM_KIND,
        "metadata": {
            "generateName": f"{slot_name}-",
            "labels": {LABEL_SLOT: slot_name, LABEL_GROUP: group_name},
        },
        "spec": {
            "slotRef": slot_name,
            "requestedAt": requested,
            "deadlineAt": format_time(deadline_at(requested, group, settings)),
            "requestedBy": requested_by,
        },
    }


class ClaimWriter(Protocol):
    """What the provider needs to write (operator/providerglue.py's; the lab's tests keep a memory one)."""

    async def create_claim(self, body: dict[str, Any], timeout: float) -> Obj:
        """Create the claim; return the object as the API server stored it (with its name)."""

    async def delete_claim(self, name: str, resource_version: str | None, timeout: float) -> Obj | None:
        """Delete the claim; return the object if it still exists (finalizers), None once it is gone."""
