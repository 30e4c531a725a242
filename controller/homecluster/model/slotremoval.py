"""A slot removed (its Node CR deleted, e.g. pruned by Flux) lets its machine go before it goes.

The operator keeps a finalizer on every slot it observes (names.SLOT_FINALIZER; metadata only, never spec).
When the slot is marked for deletion:

1. every live claim of the slot that is not already being deleted is deleted, exactly as
   `kubectl delete nodeclaim` would: a pending one ends completed/Canceled, a booting or ready one runs the
   claim finalizer's reversal (cordon, shutdown Job reading the still-present slot, power off,
   completed/Released);
2. the slot waits while a live claim remains, a Job of the slot runs, or its machine is observed on (an
   unwanted machine gets the ordinary shutdown, rows 2 and 11);
3. then the finalizer is released and the delete completes.

A machine that cannot be switched off: once the shutdown counter that governs it (the live claim's while
one is reversing, else the slot's own) has reached its bound and is held off, and no shutdown Job runs (and
the last one ended at least one grace ago), the finalizer is released all the same, with a Warning Event
saying the machine may still be on (`GIVE_UP`). The operator has then tried everything it would try
before a hold-off; keeping the slot Terminating would only block Git (a slot of that name cannot be
re-added while the old one is Terminating) and hide the problem in a state few look at.

A slot without our finalizer that is marked for deletion (it was never observed, or the finalizer was
removed by hand) is left alone (`GONE`): the API server deletes it, and a claim on it ends
completed/SlotNotFound as before. No finalizer is ever added to a slot marked for deletion (the API
server refuses it anyway).
"""
from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import Enum
from typing import Any

from homecluster.model.objects import claim_phase, finalizers_of, marked_for_deletion, name_of
from homecluster.model.phases import is_live
from homecluster.model.shutdown import ShutdownCounter

Obj = Mapping[str, Any]


class Removal(str, Enum):
    """What the slot's removal rule asks for in this pass."""

    KEEP = "keep"  # not being deleted, our finalizer on it: nothing to do
    FINALIZE = "finalize"  # not being deleted, our finalizer missing: add it
    RELEASE_CLAIMS = "release-claims"  # being deleted: delete its live claims that are not being deleted yet
    WAIT = "wait"  # being deleted: a claim's reversal, a Job or the machine's shutdown is still under way
    RELEASE = "release"  # being deleted, nothing holds it: remove the finalizer
    GIVE_UP = "give-up"  # being deleted, the machine still on past the shutdown bound: remove it, and warn
    GONE = "gone"  # being deleted without our finalizer: nothing of ours holds it


@dataclass(frozen=True)
class RemovalFacts:
    """The inputs of the rule, read from one slot's facts."""

    deleting: bool  # the slot carries metadata.deletionTimestamp
    finalized: bool  # our finalizer is on the slot
    unreleased: tuple[str, ...] = ()  # live claims of the slot not marked for deletion (names)
    reversing: bool = False  # a live claim of the slot is marked for deletion: its reversal runs
    jobs_running: bool = False  # a Job of the slot has not ended (startup or shutdown, anyone's)
    machine_on: bool = False  # the slot's machine is observed on
    quiet: bool = True  # no shutdown Job runs and the last one ended at least one grace ago
    exhausted: bool = False  # the governing shutdown counter reached its bound and is held off


def has_finalizer(obj: Obj | None, finalizer: str) -> bool:
    return finalizer in finalizers_of(obj)


def unreleased_claims(claims: Iterable[Obj]) -> tuple[str, ...]:
    """The live claims not yet marked for deletion, by name (the ones step 1 deletes)."""
    return tuple(sorted(name_of(c) for c in claims if is_live(claim_phase(c)) and not marked_for_deletion(c)))


def reversing(claims: Iterable[Obj]) -> bool:
    """A live claim marked for deletion: its finalizer's reversal is still running."""
    return any(is_live(claim_phase(c)) and marked_for_deletion(c) for c in claims)


def exhausted(counter: ShutdownCounter, limit: int) -> bool:
    """The counter reached the bound and holds off (model.shutdown, rule 2): nothing more fires for now."""
    return counter.held_until is not None and counter.attempts >= max(limit, 1)


def removal(facts: RemovalFacts) -> Removal:
    """The one thing the removal rule asks for; never raises. Precedence, top first: not deleting
    (finalize or keep); no finalizer of ours (gone); live claims to delete; a Job running (wait, even past
    the bound: the Job that reached it may still land); the machine on, or a reversal under way (give up
    only when the machine is on, the bound is reached and the slot is quiet; else wait); release."""
    if not facts.deleting:
        return Removal.KEEP if facts.finalized else Removal.FINALIZE
    if not facts.finalized:
        return Removal.GONE
    if facts.unreleased:
        return Removal.RELEASE_CLAIMS
    if facts.jobs_running:
        return Removal.WAIT
    if facts.machine_on:
        return Removal.GIVE_UP if facts.exhausted and facts.quiet else Removal.WAIT
    if facts.reversing:
        return Removal.WAIT  # machine off: the reversal completes the claim in its own step
    return Removal.RELEASE


def refusal_text(slot: str) -> str:
    """Why a new claim on a slot being removed is refused (admission) or deleted (the controller)."""
    return (f'slot "{slot}" is being removed (it is marked for deletion): no new claim may start on it; '
            f"name another slot in spec.slotRef")
