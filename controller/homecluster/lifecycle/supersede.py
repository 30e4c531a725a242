"""One live claim per slot, enforced where admission cannot see: the newest owns, the others end Superseded.

Admission refuses a second live claim, but a webhook that was down, two providers racing, or a
hand-applied claim can still leave two. model.supersede picks the owner (newest creationTimestamp,
then name); every other live claim is recorded failed/Superseded and its finalizer, if any,
released -- unless one of its OWN Jobs still runs (a deleting claim's reversal shutdown, a forced
shutdown): releasing it then would let the garbage collector delete that Job while its pod may still
be powering the machine off, and the Job's disappearance would let the new owner launch
(lifecycle.shutdown.hold_launch reads the Jobs). Such a claim keeps the finalizer; the ended-claim
release (lifecycle.finalizer.release_ended) drops it once the Job has ended. A superseded claim bought nothing of its own (the machine belongs to the slot's owner),
so it is not written to the slot's lastClaim and never counts as a failed attempt.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster.lifecycle.facts import Facts
from homecluster.lifecycle.recorder import Recorder
from homecluster.model.objects import name_of
from homecluster.model.phases import ClaimPhase, Reason
from homecluster.lifecycle.context import Context

Obj = Mapping[str, Any]


async def supersede(ctx: Context, facts: Facts) -> int:
    """End every superseded live claim of the slot; returns how many were ended."""
    owner = facts.view.owner
    rec = Recorder(ctx)
    for claim in facts.view.superseded:
        text = (f'slot "{facts.slot_name}" is owned by the newer live NodeClaim "{name_of(owner)}": '
                f"one live claim per slot")
        claim = await rec.move(claim, ClaimPhase.FAILED, Reason.SUPERSEDED, text)
        if not facts.running_jobs_of(claim):
            await rec.remove_finalizer(claim)
    return len(facts.view.superseded)
