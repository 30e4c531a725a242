"""Attempts are a property of the request: status.attempt is seeded once from the slot's lastClaim.

The seeding (Recorder.seed, the specification's Seed, run once, on the first pass, only while status.attempt
is 0) takes the next number while the slot keeps failing, and restarts at 1 after an episode that
landed. "Landed" is read as: the last claim reached ready at some point (so a MachineGone failure
after a healthy run restarts the streak), or it ended completed. Nothing rewrites the number
afterwards: one claim is one attempt.

Past the bound (attempt > settings.attempt_limit), a claim still in its boot window ends failed
with AttemptLimitExceeded before any machine is bought.

Only a claim that bought a machine is an attempt (`counts_as_attempt`): its startup Job was created
(status.startupJob is written with the booting move). A claim that ended before that -- SlotNotFound,
GroupNotFound, AttemptLimitExceeded, a startup Job refused for a bad slot spec (StartupJobFailed with
no Job), DeadlineExceeded while still pending, Canceled, Superseded, StartupPodBlocked (the Job was created but
its pod never started, so the machine was never touched) -- keeps its own reason on its own
status but is never written to the slot's lastClaim, so it neither extends nor resets the streak: a
typo in a slot is fixed without spending the machine's attempts.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from homecluster.model.deadlines import deadline_applies
from homecluster.model.objects import (claim_attempt, claim_phase, claim_reason, claim_startup_job, dig, name_of,
                                       slot_last_claim, time_field)
from homecluster.model.phases import ClaimPhase, Reason, is_terminal
from homecluster.model.settings import Settings
from homecluster.model.timestamps import format_time, parse_time

Obj = Mapping[str, Any]


# reasons of claims that never bought a machine even if a startup Job name was recorded (another claim
# owned the slot; deleted while pending; the startup Job's pod never started, so nothing was powered)
NOT_ATTEMPTS = frozenset({Reason.SUPERSEDED.value, Reason.CANCELED.value, Reason.STARTUP_POD_BLOCKED.value})


def started_a_boot(claim: Obj) -> bool:
    """The claim's startup Job was created: the booting move recorded its name in status.startupJob."""
    return bool(claim_startup_job(claim))


def counts_as_attempt(claim: Obj) -> bool:
    """A terminal claim that bought a machine: its startup Job was created. Only these reach lastClaim."""
    return is_terminal(claim_phase(claim)) and started_a_boot(claim) \
        and claim_reason(claim) not in NOT_ATTEMPTS


def seed_attempt(last_claim: Obj | None) -> int:
    """The attempt number of a new claim on a slot whose status.lastClaim is `last_claim`.

    No digest: 1. The last claim failed without ever reaching ready: its attempt + 1. It reached
    ready, or ended completed: 1. A digest with any other phase (not a terminal claim; it should not
    happen) also restarts at 1, since only a failed boot continues a streak.
    """
    if not last_claim:
        return 1
    if last_claim.get("reachedReady") or last_claim.get("phase") != ClaimPhase.FAILED.value:
        return 1
    previous = last_claim.get("attempt") or 0
    return max(int(previous), 0) + 1


def attempt_exceeded(attempt: int, settings: Settings) -> bool:
    """True past the bound: attempt > settings.attempt_limit (4 and more with the default 3)."""
    return attempt > settings.attempt_limit


def needs_seed(claim: Obj) -> bool:
    """True while status.attempt is absent or 0; once non-zero it is never rewritten."""
    return claim_attempt(claim) == 0


def attempt_limit_reason(claim: Obj, settings: Settings) -> Reason | None:
    """AttemptLimitExceeded for a seeded claim past the bound that is still in its boot window.

    A ready or terminal claim is never failed for its attempt number: the bound stops buying a
    machine, it does not take one away.
    """
    if deadline_applies(claim_phase(claim)) and attempt_exceeded(claim_attempt(claim), settings):
        return Reason.ATTEMPT_LIMIT_EXCEEDED
    return None


def reached_ready(claim: Obj) -> bool:
    """The claim was ready at some point: it is ready now, or status.readyAt was stamped."""
    return claim_phase(claim) == ClaimPhase.READY or time_field(claim, "status", "readyAt") is not None


def last_claim_digest(
    claim: Obj,
    now: datetime,
    *,
    phase: ClaimPhase | None = None,
    reason: Reason | str | None = None,
) -> dict[str, Any]:
    """Node.status.lastClaim for a claim that ended: {name, attempt, phase, reason, reachedReady, finishedAt}.

    `phase` and `reason` override the claim's status when the digest is written in the same pass
    as (or just before) the claim's own terminal write; otherwise the claim's status is read.
    `reason` is always present, None when there is none: the slot's status is written with a JSON
    merge patch, where a key left out would keep the previous claim's reason and a null deletes
    it. finishedAt is status.finishedAt, or `now` when not stamped yet.
    """
    finished = time_field(claim, "status", "finishedAt") or now
    ended = phase if phase is not None else claim_phase(claim)
    why = reason if reason is not None else dig(claim, "status", "reason")
    return {
        "name": name_of(claim),
        "attempt": claim_attempt(claim),
        "phase": ClaimPhase(ended).value,
        "reason": (why.value if isinstance(why, Reason) else why) or None,
        "reachedReady": reached_ready(claim),
        "finishedAt": format_time(finished),
    }


def last_claim_change(slot: Obj, claim: Obj, now) -> dict | None:
    """The lastClaim to write for a terminal `claim`, or None when the slot already has it or a newer one."""
    if not counts_as_attempt(claim):
        return None
    digest = last_claim_digest(claim, now)
    current = slot_last_claim(slot)
    if current == digest:
        return None
    if current and current.get("name") != digest["name"]:
        held, mine = parse_time(current.get("finishedAt")), parse_time(digest["finishedAt"])
        if held is not None and (held > mine or (held == mine and current.get("name", "") > digest["name"])):
            return None  # the slot already records a request that ended later
    return digest


def newest_attempt(claims: list[Obj]) -> Obj | None:
    ended = [c for c in claims if counts_as_attempt(c)]
    return max(ended, key=lambda c: (dig(c, "status", "finishedAt", default=""), name_of(c))) if ended else None
