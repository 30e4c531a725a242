"""One live claim per slot, enforced where admission cannot see.

If two or more live claims name one slot (concurrent providers, a hand-applied claim, a webhook
that was down), the newest owns the slot and every other live claim must end failed/Superseded.
Terminal claims free their slot and take no part.

"Newest" is decided by metadata.creationTimestamp; the API server stamps it at one-second
resolution, so ties are real. Tie rule: among claims created in the same second, the one whose
metadata.name sorts last (plain string order) is the newest. Every controller replica therefore
picks the same owner from the same set of claims, whatever order a list or a watch delivers them
in. A claim with no creationTimestamp sorts as the oldest.
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from homecluster.model.objects import EPOCH, claim_phase, claim_slot, created_at, marked_for_deletion, name_of, time_field
from homecluster.model.phases import ClaimPhase, is_live, is_terminal

Obj = Mapping[str, Any]


def newest_key(claim: Obj) -> tuple[datetime, str]:
    """The order of "newest": creationTimestamp, then name. The greatest key is the newest."""
    return (created_at(claim), name_of(claim))


def _finished_key(claim: Obj) -> tuple[datetime, datetime, str]:
    finished = time_field(claim, "status", "finishedAt") or EPOCH
    return (finished, created_at(claim), name_of(claim))


def claims_for_slot(claims: Iterable[Obj], slot_name: str) -> list[Obj]:
    """The claims whose spec.slotRef names `slot_name`."""
    return [c for c in claims if claim_slot(c) == slot_name]


@dataclass(frozen=True)
class Ownership:
    """The live claim that owns the slot (None: the slot is free) and the live claims that must end Superseded."""

    owner: Obj | None
    superseded: list[Obj] = field(default_factory=list)


def resolve_owner(claims: Iterable[Obj]) -> Ownership:
    """The owner among the live claims of one slot, and the others (oldest first) to supersede.

    `claims` must all name the same slot (see claims_for_slot); terminal claims are ignored.
    """
    live = sorted((c for c in claims if is_live(claim_phase(c))), key=newest_key)
    if not live:
        return Ownership(None, [])
    return Ownership(live[-1], live[:-1])


@dataclass(frozen=True)
class SlotClaimView:
    """Everything the decision table needs to know about the claims of one slot."""

    owner: Obj | None
    superseded: list[Obj]
    last_terminal: Obj | None

    @property
    def deciding_phase(self) -> ClaimPhase | None:
        """The phase decide() takes: the owner's, else the most recent terminal claim's, else None."""
        if self.owner is not None:
            return claim_phase(self.owner)
        if self.last_terminal is not None:
            return claim_phase(self.last_terminal)
        return None

    @property
    def owner_deleting(self) -> bool:
        """The live owner is marked for deletion (its finalizer runs the reversal)."""
        return self.owner is not None and marked_for_deletion(self.owner)


def slot_claim_view(claims: Iterable[Obj]) -> SlotClaimView:
    """Owner, superseded live claims and most recent terminal claim of one slot.

    The most recent terminal claim is the one that finished last (status.finishedAt, then
    creationTimestamp, then name); it is what the table's last two rows read when no claim is live.
    """
    all_claims = list(claims)
    ownership = resolve_owner(all_claims)
    terminal = [c for c in all_claims if is_terminal(claim_phase(c))]
    last = max(terminal, key=_finished_key) if terminal else None
    return SlotClaimView(ownership.owner, ownership.superseded, last)
