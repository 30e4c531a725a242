"""Seeding status.attempt from the slot's lastClaim, the bound, and the digest written when a claim ends."""
from datetime import datetime, timedelta, timezone

import pytest
from support import objects

from homecluster.model.attempts import (
    attempt_exceeded, attempt_limit_reason, counts_as_attempt, last_claim_change, last_claim_digest, needs_seed,
    newest_attempt, reached_ready, seed_attempt,
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


@pytest.mark.parametrize("recorded", [None, 0, -2])
def test_a_failed_digest_without_a_usable_attempt_seeds_one(recorded):
    """A failed lastClaim whose attempt is missing, 0 or negative counts as no earlier attempt: the next is 1."""
    last = digest("failed", recorded, reason="StartupJobFailed")
    assert seed_attempt(last) == 1


def test_the_digest_is_plain_json_data():
    """The digest goes to the API server as is: the reason and phase are the plain strings, not the enums."""
    d = last_claim_digest(claim("booting", 1, bootStartedAt="2026-03-04T09:39:00Z"), NOW,
                          phase=ClaimPhase.FAILED, reason=Reason.REGISTRATION_TIMED_OUT)
    assert type(d["reason"]) is str and d["reason"] == "RegistrationTimedOut"
    assert type(d["phase"]) is str and d["phase"] == "failed"


# ---- last_claim_change: which digest a slot's status.lastClaim takes -------------------------------------------

def ended(name, finished, phase="failed", reason="RegistrationTimedOut", attempt=2, **status):
    """A claim that bought a machine and ended at `finished` (None: finishedAt not stamped yet)."""
    stamps = {} if finished is None else {"finishedAt": finished}
    return objects.claim(name, phase=phase, attempt=attempt, reason=reason, **BOUGHT, **stamps, **status)


def slot_with(last_claim=None):
    s = objects.slot("worker-01")
    if last_claim is not None:
        s["status"] = {"lastClaim": last_claim}
    return s


def test_the_first_attempt_on_a_slot_writes_its_digest():
    c = ended("worker-01-bbbbb", "2026-03-04T09:58:00Z")
    assert last_claim_change(slot_with(), c, NOW) == {
        "name": "worker-01-bbbbb", "attempt": 2, "phase": "failed", "reason": "RegistrationTimedOut",
        "reachedReady": False, "finishedAt": "2026-03-04T09:58:00Z"}


def test_an_unstamped_end_is_recorded_as_ending_now():
    """A claim whose finishedAt is not written yet is recorded as ending at the pass's `now`."""
    assert last_claim_change(slot_with(), ended("worker-01-bbbbb", None), NOW)["finishedAt"] == "2026-03-04T10:00:00Z"


def test_a_claim_that_is_no_attempt_never_changes_the_slot():
    assert last_claim_change(slot_with(), ended("worker-01-bbbbb", "2026-03-04T09:58:00Z", reason="Superseded"),
                             NOW) is None
    live = objects.claim("worker-01-bbbbb", phase="booting", attempt=2, **BOUGHT)
    assert last_claim_change(slot_with(), live, NOW) is None


def test_a_slot_that_already_records_the_digest_is_left_alone():
    """Re-running the pass writes nothing: the write is idempotent."""
    c = ended("worker-01-bbbbb", "2026-03-04T09:58:00Z")
    assert last_claim_change(slot_with(last_claim_digest(c, NOW)), c, NOW) is None


def test_a_claim_that_ended_later_replaces_the_slots_record():
    held = last_claim_digest(ended("worker-01-zzzzz", "2026-03-04T09:00:00Z"), NOW)
    later = ended("worker-01-aaaaa", "2026-03-04T09:30:00Z", attempt=3)
    assert last_claim_change(slot_with(held), later, NOW) == last_claim_digest(later, NOW)


def test_a_claim_that_ended_earlier_never_overwrites_a_newer_record():
    """Passes can see claims out of order: an older end never rolls the slot's record back."""
    held = last_claim_digest(ended("worker-01-aaaaa", "2026-03-04T09:30:00Z", attempt=3), NOW)
    earlier = ended("worker-01-zzzzz", "2026-03-04T09:00:00Z")
    assert last_claim_change(slot_with(held), earlier, NOW) is None


def test_the_same_end_is_settled_by_the_name_the_greater_keeps_the_slot():
    """Two claims that ended in the same second: the greater name is the record, whichever pass runs first."""
    at = "2026-03-04T09:30:00Z"
    low, high = ended("worker-01-aaaaa", at), ended("worker-01-zzzzz", at, attempt=3)
    assert last_claim_change(slot_with(last_claim_digest(high, NOW)), low, NOW) is None
    assert last_claim_change(slot_with(last_claim_digest(low, NOW)), high, NOW) == last_claim_digest(high, NOW)


def test_a_record_without_an_end_time_is_replaced():
    """A lastClaim whose finishedAt is missing cannot be shown to be newer: the ended claim's digest replaces it."""
    held = {"name": "worker-01-zzzzz", "attempt": 1, "phase": "failed", "reason": "StartupJobFailed",
            "reachedReady": False}
    c = ended("worker-01-aaaaa", "2026-03-04T09:30:00Z")
    assert last_claim_change(slot_with(held), c, NOW) == last_claim_digest(c, NOW)


def test_a_record_without_a_name_sorts_first_on_the_same_end():
    """A lastClaim without a name reads as the empty name: on the same end any named claim replaces it (a name
    may start with a digit, which sorts before every letter)."""
    at = "2026-03-04T09:30:00Z"
    held = {"attempt": 1, "phase": "failed", "reason": "StartupJobFailed", "reachedReady": False, "finishedAt": at}
    for name in ("worker-01-aaaaa", "0-worker-01"):
        c = ended(name, at)
        assert last_claim_change(slot_with(held), c, NOW) == last_claim_digest(c, NOW)


def test_a_claims_own_record_is_always_brought_up_to_date():
    """The slot's record of this very claim is rewritten when the claim's digest changed (here its end, stamped
    after a first digest was written with a later `now`), however the two end times compare."""
    c = ended("worker-01-bbbbb", "2026-03-04T09:58:00Z")
    first = last_claim_digest(ended("worker-01-bbbbb", None), NOW)  # written at 10:00 before finishedAt was stamped
    assert last_claim_change(slot_with(first), c, NOW) == last_claim_digest(c, NOW)
    assert last_claim_change(slot_with(first), c, NOW)["finishedAt"] == "2026-03-04T09:58:00Z"


def test_newest_attempt_goes_by_the_end_before_the_name():
    """The claim that ended last is the newest attempt even when its name sorts first."""
    job = {"startupJob": "x-startup-1"}
    late = objects.claim("a-late", phase="failed", finishedAt="2026-12-05T03:00:00Z", reason="BootTimedOut", **job)
    early = objects.claim("z-early", phase="failed", finishedAt="2026-12-05T01:00:00Z", reason="BootTimedOut", **job)
    assert newest_attempt([late, early]) is late and newest_attempt([early, late]) is late


def test_newest_attempt_takes_an_unstamped_end_as_the_oldest():
    """An ended attempt without status.finishedAt sorts before every stamped one (and the name decides between
    two unstamped ones)."""
    job = {"startupJob": "x-startup-1"}
    unstamped = objects.claim("z-unstamped", phase="failed", reason="BootTimedOut", **job)
    stamped = objects.claim("a-stamped", phase="failed", finishedAt="2026-12-05T01:00:00Z", reason="BootTimedOut",
                            **job)
    assert newest_attempt([unstamped, stamped]) is stamped and newest_attempt([stamped, unstamped]) is stamped
    other = objects.claim("a-unstamped", phase="failed", reason="BootTimedOut", **job)
    assert newest_attempt([other, unstamped]) is unstamped
