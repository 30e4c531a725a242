"""NodeClaim: one request for one machine. A machine is wanted exactly when a live claim names its slot."""
from __future__ import annotations

from typing import Literal, Optional

from pydantic import Field

from homecluster.api.bounds import TtlSeconds
from homecluster.api.common import Conditions
from homecluster.api.resource import Resource
from homecluster.api.types import ApiModel, Name, NonNegativeInt, Timestamp, cel
from homecluster.model.phases import ClaimPhase, Reason

SLOT_REF_IMMUTABLE = "spec.slotRef is immutable: delete this claim and create a new one for the other slot"


# One definition of the phases and reasons: the pure model's enums are the CRD's enums.
ClaimReason = Reason


class NodeClaimSpec(ApiModel):
    """The request: which slot, when, and the boot budget."""

    slot_ref: Name = Field(
        description="The slot this claim asks to be on. Immutable.",
        json_schema_extra={"x-kubernetes-validations": [cel("self == oldSelf", SLOT_REF_IMMUTABLE)]})
    requested_at: Optional[Timestamp] = Field(None, description="When it was asked for; the provider stamps it.")
    deadline_at: Optional[Timestamp] = Field(
        None, description="The boot budget (requestedAt + max(12m10s, the group's maxNodeProvisionTime)); cleared "
        "when the claim becomes ready. Without it the claim never expires.")
    ttl_seconds_after_finished: Optional[TtlSeconds] = Field(
        None, description="Seconds a terminal claim is kept; defaults to the Group's.")
    requested_by: Optional[str] = Field(None, max_length=253, description="Who asked: cluster-autoscaler, a person.")


class NodeClaimStatus(ApiModel):
    """The claim's progress, written by the claim controller only."""

    phase: Optional[ClaimPhase] = Field(None, description="pending, booting, ready, completed or failed; "
                                        "empty is read as pending.")
    attempt: Optional[NonNegativeInt] = Field(None, description="Stamped once from the slot's lastClaim, never rewritten.")
    reason: Optional[ClaimReason] = Field(None, description="Why the claim failed, or how it completed.")
    message: Optional[str] = Field(None, description="The reason, in words.")
    startup_job: Optional[Name] = Field(None, description="The name of the startup Job.")
    shutdown_job: Optional[Name] = Field(None, description="The name of the latest shutdown Job.")
    boot_started_at: Optional[Timestamp] = Field(None, description="The startup Job was created.")
    startup_succeeded_at: Optional[Timestamp] = Field(None, description="The startup Job succeeded; the "
                                                      "registration wait starts.")
    registered_at: Optional[Timestamp] = Field(None, description="The corev1 Node was first seen; the readiness "
                                               "gate starts.")
    ready_at: Optional[Timestamp] = Field(None, description="The claim became ready.")
    machine_observed_off_at: Optional[Timestamp] = Field(
        None, description="The MachineGone clock: first observation of a ready claim's machine off.")
    shutdown_attempts: Optional[NonNegativeInt] = Field(None, description="One per shutdown Job this claim fired.")
    shutdown_held_until: Optional[Timestamp] = Field(None, description="No new shutdown Job before this time.")
    finished_at: Optional[Timestamp] = Field(None, description="The claim became terminal.")
    conditions: Optional[Conditions] = Field(None, description="Observations of the claim, by type.")


class NodeClaim(Resource):
    """One request for one machine (``kubectl get claims``)."""

    kind: Literal["NodeClaim"] = "NodeClaim"
    spec: NodeClaimSpec
    status: NodeClaimStatus = Field(default_factory=NodeClaimStatus)
