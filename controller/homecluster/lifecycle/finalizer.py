"""Releasing ended claims: our finalizer comes off a terminal claim marked for deletion.

Why a step of its own: the reversal only ever runs for a live owner, so a claim that ended `failed` with
the finalizer its launch added (a failed boot, MachineGone) and was then deleted -- by the autoscaler's
DeleteNodes of a creation error, a person, or the collection -- would stay Terminating forever. A delete
is never refused (docs/controller.md, "Deletion and finalizers").
"""
from __future__ import annotations

from homecluster.lifecycle.context import Context
from homecluster.lifecycle.facts import Facts
from homecluster.lifecycle.recorder import Recorder
from homecluster.model.attempts import counts_as_attempt, last_claim_change
from homecluster.model.objects import claim_phase, finalizers_of, marked_for_deletion
from homecluster.model.phases import is_terminal
from homecluster.names import FINALIZER


async def release_ended(ctx: Context, facts: Facts) -> None:
    """Drop the finalizer once the claim's digest is on the slot and none of its OWN Jobs runs.

    The history outlives the claim (the slot status step writes the digest first; that write re-runs the
    pass). A forced shutdown the claim owns finishes first: deleting the claim would delete that Job
    partway. It never waits for the slot's machine: that may belong to a newer claim, and a machine
    nobody wants is the unwanted-machine shutdown's business.
    """
    for claim in facts.claims:
        if not (is_terminal(claim_phase(claim)) and marked_for_deletion(claim)
                and FINALIZER in finalizers_of(claim)):
            continue
        if facts.running_jobs_of(claim):
            continue  # its own pending work; the Job's end wakes the slot
        if facts.slot is not None and counts_as_attempt(claim) \
                and last_claim_change(facts.slot, claim, facts.now) is not None:
            continue  # the digest is written first; the write re-runs the pass
        await Recorder(ctx).remove_finalizer(claim)
