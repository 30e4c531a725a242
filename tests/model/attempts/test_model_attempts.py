"""Seeding status.attempt from the slot's lastClaim, the bound, and the digest written when a claim ends."""
from datetime import datetime, timedelta, timezone

import pytest
from support import objects

from homecluster.model.attempts import (
    attempt_exceeded, attempt_limit_reason, counts_as_attempt, last_claim_digest, needs_seed, newest_attempt,
    reached_ready, seed_attempt,
)
from homecluster.model.phases import ClaimPhase, Reason
from homecluster.model.settings import Settings

NOW = datetime(2026, 3, 4, 10, 0, 0, tzinfo=timezone.utc)
DEFAULT = Settings()


def digest(phase, attempt, reached_ready=False, reason=None):
    return {"name": "worker-01-aaaaa", "attempt": attempt, "phase": phase, "reason": reason,
            "reachedReady": reached_ready, "finishedAt": "2026-03-04T09:59:00Z"}


def claim(phase="pending", attempt=None, **status):
    return objects.claim("worker-01-bbbbb", phase=phase, **status, **({} if attempt is None else {"attempt": attempt}))


def test_no_last_claim_is_attempt_one():
    assert seed_attempt(None) == 1
    assert seed_attempt({}) == 1


@pytest.mark.parametrize("previous", [1, 2, 3])
def test_a_failed_boot_continues_the_streak(previous):
    assert seed_attempt(digest("failed", previous, reason="StartupJobFailed")) == previous + 1


def test_failed_at_two_without_ready_is_three():
    assert seed_attempt(digest("failed", 2, reason="DeadlineExceeded")) == 3


def test_completed_restarts_at_one():
    assert seed_attempt(digest("completed", 3, reason="Released")) == 1


def test_a_cancel_leaves_the_digest_so_the_streak_continues():
    """The controller never writes a Canceled digest: the slot keeps the failure before it."""
    from homecluster.model.attempts import last_claim_change
    slot = {"metadata": {"name": "worker-01"}, "status": {"lastClaim": digest("failed", 2, reason="StartupJobFailed")}}
    canceled = claim("completed", 3, reason="Canceled", finishedAt="2026-03-04T09:59:30Z")
    assert last_claim_change(slot, canceled, NOW) is None
    assert seed_attempt(slot["status"]["lastClaim"]) == 3


BOUGHT = {"startupJob": "worker-01-bbbbb-startup", "bootStartedAt": "2026-03-04T09:39:00Z"}


@pytest.mark.parametrize("phase, reason, status, counts", [
    ("failed", "StartupJobFailed", BOUGHT, True),
    ("failed", "RegistrationTimedOut", BOUGHT, True),
    ("failed", "DeadlineExceeded", BOUGHT, True),  # the deadline passed while booting
    ("completed", "Released", BOUGHT, True),
    ("failed", "SlotNotFound", {}, False),
    ("failed", "GroupNotFound", {}, False),
    ("failed", "AttemptLimitExceeded", {}, False),
    ("failed", "StartupJobFailed", {}, False),  # the Job was refused for a bad slot spec: never created
    ("failed", "DeadlineExceeded", {}, False),  # the deadline passed while pending
    ("completed", "Canceled", {}, False),
    ("failed", "Superseded", BOUGHT, False),
    ("failed", "StartupPodBlocked", BOUGHT, False),  # the Job's pod never started: nothing was powered
    ("booting", None, BOUGHT, False),  # not over yet
])
def test_only_a_claim_whose_startup_job_was_created_is_an_attempt(phase, reason, status, counts):
    assert counts_as_attempt(claim(phase, 2, reason=reason, **status)) is counts


def test_reached_ready_then_machine_gone_restarts_at_one():
    assert seed_attempt(digest("failed", 2, reached_ready=True, reason="MachineGone")) == 1


def test_seeded_four_exceeds_the_bound():
    attempt = seed_attempt(digest("failed", 3, reason="RegistrationTimedOut"))
    assert attempt == 4
    assert attempt_exceeded(attempt, DEFAULT)
    assert not attempt_exceeded(3, DEFAULT)
    assert attempt_limit_reason(claim("pending", attempt), DEFAULT) == Reason.ATTEMPT_LIMIT_EXCEEDED
    assert attempt_limit_reason(claim(None, attempt), DEFAULT) == Reason.ATTEMPT_LIMIT_EXCEEDED
    assert attempt_limit_reason(claim("pending", 3), DEFAULT) is None


def test_bound_is_a_setting():
    assert attempt_exceeded(2, Settings(attempt_limit=1))


def test_the_bound_never_takes_a_machine_away():
    assert attempt_limit_reason(claim("ready", 7), DEFAULT) is None
    assert attempt_limit_reason(claim("failed", 7), DEFAULT) is None


@pytest.mark.parametrize("attempt, needed", [(None, True), (0, True), (1, False), (4, False)])
def test_needs_seed_only_while_zero(attempt, needed):
    assert needs_seed(claim("booting", attempt)) is needed


def test_attempt_is_never_rewritten_once_seeded():
    """The Recorder's Seed protocol: seed only while needs_seed; later passes see other digests and keep it."""
    c = claim("pending")
    for last in (digest("failed", 1), digest("completed", 3), digest("failed", 3)):
        if needs_seed(c):
            c["status"]["attempt"] = seed_attempt(last)
    assert c["status"]["attempt"] == 2


def test_digest_of_a_failed_claim_that_was_ready():
    c = claim("failed", 2, reason="MachineGone", readyAt="2026-03-04T09:40:00Z", finishedAt="2026-03-04T09:58:00Z")
    assert last_claim_digest(c, NOW) == {
        "name": "worker-01-bbbbb", "attempt": 2, "phase": "failed", "reason": "MachineGone",
        "reachedReady": True, "finishedAt": "2026-03-04T09:58:00Z",
    }
    assert seed_attempt(last_claim_digest(c, NOW)) == 1


def test_digest_written_with_the_terminal_write_round_trips_into_the_next_seed():
    c = claim("booting", 2, bootStartedAt="2026-03-04T09:39:00Z")
    d = last_claim_digest(c, NOW, phase=ClaimPhase.FAILED, reason=Reason.STARTUP_JOB_FAILED)
    assert d["phase"] == "failed" and d["reason"] == "StartupJobFailed" and d["reachedReady"] is False
    assert d["finishedAt"] == "2026-03-04T10:00:00Z"
    assert seed_attempt(d) == 3


def test_digest_always_carries_reason_so_a_merge_patch_clears_the_old_one():
    d = last_claim_digest(claim("completed", 1, finishedAt="2026-03-04T09:58:00Z"), NOW)
    assert "reason" in d and d["reason"] is None


def test_reached_ready():
    assert reached_ready(claim("ready", 1))
    assert not reached_ready(claim("failed", 1))
    assert reached_ready(claim("completed", 1, readyAt=(NOW - timedelta(minutes=1)).isoformat()))


def test_newest_attempt_is_the_last_ended_claim_that_bought_a_machine():
    job = {"startupJob": "x-startup-1"}
    old = objects.claim("a-old", phase="completed", finishedAt="2026-12-05T01:00:00Z", reason="Released", **job)
    new = objects.claim("b-new", phase="failed", finishedAt="2026-12-05T02:00:00Z", reason="BootTimedOut", **job)
    canceled = objects.claim("c-canceled", phase="failed", finishedAt="2026-12-05T03:00:00Z", reason="Canceled",
                             **job)
    never_booted = objects.claim("d-unbooted", phase="failed", finishedAt="2026-12-05T04:00:00Z",
                                 reason="BootTimedOut")
    live = objects.claim("e-live", phase="ready", finishedAt="2026-12-05T05:00:00Z", **job)
    assert newest_attempt([old, new, canceled, never_booted, live]) is new
    assert newest_attempt([new, old]) is new
    assert newest_attempt([canceled, never_booted, live]) is None
    assert newest_attempt([]) is None
    # the same end: the name decides, so every replica picks the same claim
    twin = objects.claim("a-twin", phase="failed", finishedAt="2026-12-05T02:00:00Z", reason="BootTimedOut", **job)
    assert newest_attempt([new, twin]) is new and newest_attempt([twin, new]) is new
