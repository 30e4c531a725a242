"""The bound and hold-off on shutdown Jobs that never land.

A scale-down whose shutdown never takes effect must not fire the same script forever, and it must
not spend the boot attempts of the machine it is draining. So shutdowns have their own counter,
persisted next to the object that asked for the scale-down (NodeClaim status.shutdownAttempts /
status.shutdownHeldUntil, or Node status.shutdown {attempts, heldUntil} for an unwanted machine
no claim asked for).

Semantics:

1. `attempts` counts every shutdown Job its owner fired (the specification: "one per shutdown Job"); it is never
   restarted while the owner lives, except the slot's counter when its episode ends (6).
2. The firing that brings attempts to a multiple of settings.shutdown_attempt_limit sets a hold in
   the same write (no crash can leave the bound without its hold). The hold-off runs from the END of
   that Job (30 minutes after the last shutdown that failed, not after its firing), which is not
   known at the firing: so the firing writes the latest moment the hold can end, now + shutdown_job_timeout +
   shutdown_holdoff (the Job cannot outlive its activeDeadlineSeconds), and once the Job is seen ended
   `hold_from_end` moves heldUntil to its end + shutdown_holdoff. A Job collected before its end was
   seen leaves the longer hold: never a shorter one.
3. While now < heldUntil, `may_fire_shutdown` is False.
4. Once the hold-off has passed, firing is allowed again; the count goes on (bound 3: Jobs 4, 5, 6,
   then the next hold) and the old heldUntil is dropped by that firing.
5. A heldUntil removed by hand reads as "the hold is over": the next firing is allowed.
6. When the machine is seen off for good the shutdown has landed: the slot's counter is reset (`settle`),
   so the next unwanted episode of the same machine starts fresh. "For good" (model.liveness): off, and its
   kubelet has said nothing since the last shutdown Job that succeeded, or nothing for longer than its Lease's
   grace -- a NotReady blip (a kubelet that still posts or renews its Lease) does not end a hold-off. So is it when a live claim launches
   on the machine or reaches ready (the episode ended with the machine wanted again, not off). A claim's counter ends with the claim.

Where a counter lives (lifecycle.shutdown): a reversal or a failed boot counts on that claim; an unwanted
machine (rows 2 and 11) always on the slot, which no collection removes, so a hold-off survives the
TTL collection (or any delete) of the slot's last terminal claim.

The caller reads the Jobs: it must not fire a second shutdown Job while one is active, nor launch a
startup Job (`quiet_at` says when the slot is quiet again).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from homecluster.model.objects import dig, time_field
from homecluster.model.phases import ClaimPhase
from homecluster.model.settings import Settings
from homecluster.model.timestamps import format_time

Obj = Mapping[str, Any]


@dataclass(frozen=True)
class ShutdownCounter:
    """Shutdown Jobs fired in the current round, and the end of the hold-off, if any."""

    attempts: int = 0
    held_until: datetime | None = None


def may_fire_shutdown(attempts: int, held_until: datetime | None, now: datetime, settings: Settings) -> bool:
    """False only while a hold-off is running (now < held_until); True otherwise (see module doc).

    `attempts` does not change the answer on its own: the bound acts through the hold that the
    firing which reached it set (rule 2), and a counter at the bound without a hold may fire (rule 5).
    """
    return held_until is None or now >= held_until


def after_fire(attempts: int, held_until: datetime | None, now: datetime, settings: Settings) -> ShutdownCounter:
    """The counter to persist together with firing one shutdown Job at `now`.

    Raises ValueError if called while firing is not allowed: the caller asked may_fire_shutdown
    first, and a hold must never be bypassed silently.
    """
    if not may_fire_shutdown(attempts, held_until, now, settings):
        raise ValueError(f"shutdown is held until {format_time(held_until)}; it may not fire at {format_time(now)}")
    fired = attempts + 1
    at_bound = fired % max(settings.shutdown_attempt_limit, 1) == 0
    hold = now + settings.shutdown_job_timeout + settings.shutdown_holdoff if at_bound else None
    return ShutdownCounter(fired, hold)


def hold_from_end(counter: ShutdownCounter, ended_at: datetime | None, settings: Settings) -> ShutdownCounter:
    """The counter with its hold-off measured from `ended_at`, the end of the Job that reached the bound
    (Job number `counter.attempts`); unchanged while there is no hold, or that Job's end is not known."""
    if counter.held_until is None or ended_at is None \
            or counter.attempts % max(settings.shutdown_attempt_limit, 1) != 0:
        return counter
    return ShutdownCounter(counter.attempts, ended_at + settings.shutdown_holdoff)


def quiet_at(running: bool, last_end: datetime | None, now: datetime, grace: timedelta) -> datetime | None:
    """None when no shutdown Job of the slot runs and the last one ended at least `grace` ago; else the
    moment to look again.

    Two rules read this: no second shutdown Job while one runs, and no startup Job while one runs (the
    launch of a live claim waits, so that no power-off can land after its startup began). The grace
    (one job_poll_interval) lets a kubelet's NotReady catch up with the BMC's "off" before the next
    step reads the observed power (a real kubelet that is switched off posts nothing: the boot monitor does
    not take a Ready from before the shutdown's end as a new boot's join, lifecycle.facts.registered_at).
    """
    if running:
        return now + grace
    if last_end is not None and now < last_end + grace:
        return last_end + grace
    return None


# the owner's phases in which a live claim has taken the machine (its startup Job was launched)
_TAKEN = frozenset({ClaimPhase.BOOTING, ClaimPhase.READY})


def settle(counter: ShutdownCounter, off_for_good: bool, owner_phase: ClaimPhase | None = None) -> ShutdownCounter:
    """The slot's counter reset once its unwanted episode is over: the machine is seen off for good (the
    shutdown landed: model.liveness), or a live claim launched on it or reached ready (`owner_phase` booting
    or ready: the machine is wanted again). Without the second, a shutdown that failed before a claim took the machine would
    carry its count into the next unwanted episode (the hold-off after 1 Job instead of the bound, and
    the provider never seeing the slot quiet)."""
    if off_for_good or owner_phase in _TAKEN:
        return ShutdownCounter()
    return counter


def counter_from_claim(claim: Obj) -> ShutdownCounter:
    """Read NodeClaim status.shutdownAttempts / status.shutdownHeldUntil."""
    return ShutdownCounter(
        int(dig(claim, "status", "shutdownAttempts", default=0) or 0),
        time_field(claim, "status", "shutdownHeldUntil"),
    )


def counter_from_slot(slot: Obj) -> ShutdownCounter:
    """Read Node status.shutdown {attempts, heldUntil}."""
    return ShutdownCounter(
        int(dig(slot, "status", "shutdown", "attempts", default=0) or 0),
        time_field(slot, "status", "shutdown", "heldUntil"),
    )


def claim_status_fields(counter: ShutdownCounter) -> dict[str, Any]:
    """The NodeClaim status fields for `counter`, as a merge patch (a null removes the hold)."""
    held = format_time(counter.held_until) if counter.held_until else None
    return {"shutdownAttempts": counter.attempts, "shutdownHeldUntil": held}


def slot_status_fields(counter: ShutdownCounter) -> dict[str, Any]:
    """The Node (slot) status.shutdown value for `counter`, as a merge patch."""
    held = format_time(counter.held_until) if counter.held_until else None
    return {"shutdown": {"attempts": counter.attempts, "heldUntil": held}}
