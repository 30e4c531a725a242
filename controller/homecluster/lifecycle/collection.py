"""Collection: a terminal claim is deleted at model.collection.collect_at (ttlSecondsAfterFinished).

Deleted with Background propagation, so the lifecycle Jobs it owns (and their Pods) go with it. The
slot's lastClaim has been written before (the observer runs before collection in every pass), so the
attempt history outlives the claim. A claim is not collected while a Job it owns still runs: deleting
the claim would delete a forced shutdown it owns partway, and a machine that powered on without joining
looks "off" to the observation, so nothing would fire it again. Jobs it does not own (the slot's, a newer
claim's) do not hold it.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from homecluster.lifecycle.facts import Facts
from homecluster.logging import claim_log
from homecluster.model.collection import collect_at
from homecluster.model.objects import dig, marked_for_deletion, name_of
from homecluster.kube import client as kube
from homecluster.lifecycle.context import Context
from homecluster.model.attempts import counts_as_attempt, last_claim_change

Obj = Mapping[str, Any]


async def collect(ctx: Context, facts: Facts) -> datetime | None:
    """Delete the terminal claims whose time has come; returns the next collection moment."""
    upcoming: list[datetime] = []
    for claim in facts.claims:
        when = collect_at(claim, facts.group, ctx.settings)
        if when is None or marked_for_deletion(claim):
            continue
        if when > facts.now:
            upcoming.append(when)
            continue
        if facts.slot is not None and counts_as_attempt(claim) and last_claim_change(facts.slot, claim, facts.now):
            continue  # its digest is not on the slot yet: the observer writes it first, next pass collects
        if facts.running_jobs_of(claim):
            upcoming.append(facts.now + ctx.settings.job_poll_interval)  # the Job's end wakes us sooner
            continue
        try:
            left = await ctx.client.delete(kube.CLAIMS, name_of(claim), propagation="Background",
                                           resource_version=dig(claim, "metadata", "resourceVersion"))
            claim_log(ctx.log, claim).info("collected: ttlSecondsAfterFinished passed")
        except kube.NotFound:  # gone already, and no event said so: the store forgets it (no DELETE again)
            left = None
        except kube.Conflict:
            continue
        ctx.store.apply(kube.CLAIMS, left if left is not None else claim, deleted=left is None)
    return min(upcoming) if upcoming else None
