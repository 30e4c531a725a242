"""When a terminal claim is collected: spec.ttlSecondsAfterFinished after status.finishedAt.

The claim's own spec.ttlSecondsAfterFinished wins, then its Group's spec.ttlSecondsAfterFinished,
then settings.claim_ttl (600s), held to [0, limits.MAX_TTL_SECONDS] (365 days) whatever the object
says: the CRD refuses more, and a claim stored before that maximum must not overflow the sum below
and wedge its slot's pass. A live claim is never collected. Collection is why attempts live on
the claim and the history on the slot (lastClaim must be written before the claim goes).
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from homecluster.limits import MAX_TTL_SECONDS, clamp_int
from homecluster.model.objects import claim_phase, dig, time_field
from homecluster.model.phases import is_terminal
from homecluster.model.settings import Settings

Obj = Mapping[str, Any]


def ttl_after_finished(claim: Obj, group: Obj | None, settings: Settings) -> timedelta:
    """The claim's, else the Group's, else the default time-to-live of a terminal claim."""
    for owner in (claim, group):
        seconds = dig(owner, "spec", "ttlSecondsAfterFinished")
        if seconds is not None:
            return timedelta(seconds=clamp_int(seconds, MAX_TTL_SECONDS))
    return settings.claim_ttl


def collect_at(claim: Obj, group: Obj | None, settings: Settings) -> datetime | None:
    """When the claim may be deleted; None while it is live or has no status.finishedAt yet."""
    finished = time_field(claim, "status", "finishedAt")
    if not is_terminal(claim_phase(claim)) or finished is None:
        return None
    try:
        return finished + ttl_after_finished(claim, group, settings)
    except OverflowError:  # a finishedAt near year 9999 (written by hand): collectable now
        return finished
