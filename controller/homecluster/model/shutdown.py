"""The bound and hold-off on shutdown Jobs that never land.

A scale-down whose shutdown never takes effect must not fire the same script forever, and it must
not spend the boot attempts of the machine it is draining. So shutdowns have their own counter,
persisted next to the object that asked for the scale-down (NodeClaim status.shutdownAttempts /
status.shutdownHeldUntil, or Node status.shutdown {attempts, heldUntil} for an unwanted machine
no claim asked for).

Semantics, as one round-trip:

1. A round starts with attempts = 0 and no hold. Each shutdown Job fired adds one (`after_fire`).
2. The firing that brings attempts to settings.shutdown_attempt_limit also sets
   heldUntil = now + settings.shutdown_holdoff (30m by default). The counter and the hold are one
   write, so no crash can leave a full counter without its hold.
3. While now < heldUntil, `may_fire_shutdown` is False.
4. Once the hold-off has passed, firing is allowed again, and that firing starts a new round:
   attempts goes back to 1 and the old heldUntil is dropped (or, with a bound of 1, replaced by a
   new hold straight away).
5. A counter at the bound without any heldUntil (someone removed the hold by hand) is read as
   "the hold is over": the next firing starts a new round.
6. When the machine is observed off the shutdown has landed, and the counter is reset
   (`settle`), so the next scale-down of the same machine starts fresh.

This module does not know whether a shutdown Job is currently running; the caller must not fire a
second one while one is active (that is what the Job name in status is for).
"""
from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from homecluster.model.objects import dig, time_field
from homecluster.model.phases import PowerState
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
    firing which reached it set (rule 2), and a full counter without a hold may fire (rule 5).
    """
    return held_until is None or now >= held_until


def after_fire(attempts: int, held_until: datetime | None, now: datetime, settings: Settings) -> ShutdownCounter:
    """The counter to persist together with firing one shutdown Job at `now`.

    Raises ValueError if called while firing is not allowed: the caller asked may_fire_shutdown
    first, and a hold must never be bypassed silently.
    """
    if not may_fire_shutdown(attempts, held_until, now, settings):
        raise ValueError(f"shutdown is held until {format_time(held_until)}; it may not fire at {format_time(now)}")
    new_round = attempts >= settings.shutdown_attempt_limit or held_until is not None
    fired = 1 if new_round else attempts + 1
    hold = now + settings.shutdown_holdoff if fired >= settings.shutdown_attempt_limit else None
    return ShutdownCounter(fired, hold)


def quiet_at(running: bool, last_end: datetime | None, now: datetime, grace: timedelta) -> datetime | None:
    """None when no shutdown Job of the slot runs and the last one ended at least `grace` ago; else the
    moment to look again.

    Two rules read this: no second shutdown Job while one runs, and no startup Job while one runs (the
    launch of a live claim waits, so that no power-off can land after its startup began). The grace
    (one job_poll_interval) lets a kubelet's NotReady catch up with the BMC's "off" before the next
    step reads the observed power.
    """
    if running:
        return now + grace
    if last_end is not None and now < last_end + grace:
        return last_end + grace
    return None


def settle(counter: ShutdownCounter, power: PowerState) -> ShutdownCounter:
    """Reset the counter once the machine is observed off: the shutdown landed."""
    return ShutdownCounter() if power == PowerState.OFF else counter


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
