"""Shutdown attempts: one per Job, the bound, the 30-minute hold-off from the end of the Job at the bound."""
from datetime import datetime, timedelta, timezone

import pytest

from homecluster.model.phases import ClaimPhase
from homecluster.model.settings import Settings
from homecluster.model.shutdown import (
    ShutdownCounter, after_fire, claim_status_fields, counter_from_claim, counter_from_slot, hold_from_end,
    may_fire_shutdown, settle, slot_status_fields,
)

T0 = datetime(2026, 3, 4, 10, 0, 0, tzinfo=timezone.utc)
DEFAULT = Settings()


def fire(counter, now, settings=DEFAULT):
    assert may_fire_shutdown(counter.attempts, counter.held_until, now, settings)
    return after_fire(counter.attempts, counter.held_until, now, settings)


def test_every_job_counts_and_the_hold_runs_from_the_end_of_the_job_at_the_bound():
    """(b) and (c) on a fake clock: attempts count every Job (never back to 1), the firing that reaches the
    bound writes the latest possible end of the hold, and the Job's end moves it to end + 30 minutes."""
    timeout, holdoff = DEFAULT.shutdown_job_timeout, DEFAULT.shutdown_holdoff
    c = ShutdownCounter()
    c = fire(c, T0)
    assert c == ShutdownCounter(1, None)
    c = fire(c, T0 + timedelta(minutes=10))
    assert c == ShutdownCounter(2, None)
    third = T0 + timedelta(minutes=20)
    c = fire(c, third)
    assert c == ShutdownCounter(3, third + timedelta(minutes=10) + timedelta(minutes=30))  # fire + timeout + holdoff
    assert c.held_until == third + timeout + holdoff
    # the third Job runs its full 10 minutes and ends with the machine still on
    ended = third + timedelta(minutes=10)
    c = hold_from_end(c, ended, DEFAULT)
    assert c == ShutdownCounter(3, ended + timedelta(minutes=30))
    # held for 30 minutes from the END (not from the firing: that would be 20 minutes after the end)
    for later in (ended, third + timedelta(minutes=30), ended + timedelta(minutes=29, seconds=59)):
        assert not may_fire_shutdown(c.attempts, c.held_until, later, DEFAULT)
        with pytest.raises(ValueError, match="held until"):
            after_fire(c.attempts, c.held_until, later, DEFAULT)
    # the hold-off is over: firing is allowed again and the count goes on
    resumed = ended + timedelta(minutes=30)
    c = fire(c, resumed)
    assert c == ShutdownCounter(4, None)
    c = fire(fire(c, resumed + timedelta(minutes=1)), resumed + timedelta(minutes=2))
    assert c == ShutdownCounter(6, resumed + timedelta(minutes=2) + timeout + holdoff)


def test_a_job_that_ends_early_shortens_the_hold_to_30_minutes_after_its_end():
    c = fire(fire(fire(ShutdownCounter(), T0), T0), T0)
    ended = T0 + timedelta(minutes=1)
    assert hold_from_end(c, ended, DEFAULT).held_until == ended + timedelta(minutes=30)
    # its end not known (still running, or collected unseen): the longer hold stands, never a shorter one
    assert hold_from_end(c, None, DEFAULT) == c
    # no hold, or not at the bound: nothing to measure
    assert hold_from_end(ShutdownCounter(2, None), ended, DEFAULT) == ShutdownCounter(2, None)
    assert hold_from_end(ShutdownCounter(4, T0), ended, DEFAULT) == ShutdownCounter(4, T0)


def test_bound_and_hold_off_are_settings():
    quick = Settings(shutdown_attempt_limit=1, shutdown_holdoff=timedelta(seconds=5),
                     shutdown_job_timeout=timedelta(seconds=20))
    c = fire(ShutdownCounter(), T0, quick)
    assert c == ShutdownCounter(1, T0 + timedelta(seconds=25))
    c = hold_from_end(c, T0 + timedelta(seconds=2), quick)
    assert c == ShutdownCounter(1, T0 + timedelta(seconds=7))
    assert not may_fire_shutdown(c.attempts, c.held_until, T0 + timedelta(seconds=6), quick)
    assert fire(c, T0 + timedelta(seconds=7), quick) == ShutdownCounter(2, T0 + timedelta(seconds=32))


def test_counter_at_the_bound_with_its_hold_removed_fires_and_counts_on():
    assert may_fire_shutdown(3, None, T0, DEFAULT)
    assert after_fire(3, None, T0, DEFAULT) == ShutdownCounter(4, None)


def test_landing_resets_the_counter():
    held = ShutdownCounter(3, T0)
    assert settle(held, True) == ShutdownCounter()
    assert settle(held, False) is held


def test_round_trip_through_claim_status():
    c = fire(fire(fire(ShutdownCounter(), T0), T0), T0)
    fields = claim_status_fields(c)
    assert fields == {"shutdownAttempts": 3, "shutdownHeldUntil": "2026-03-04T10:40:00Z"}
    assert counter_from_claim({"status": fields}) == c
    assert claim_status_fields(ShutdownCounter(1)) == {"shutdownAttempts": 1, "shutdownHeldUntil": None}
    assert counter_from_claim({"metadata": {"name": "x"}}) == ShutdownCounter()


def test_round_trip_through_slot_status():
    c = ShutdownCounter(2, None)
    fields = slot_status_fields(c)
    assert fields == {"shutdown": {"attempts": 2, "heldUntil": None}}
    assert counter_from_slot({"status": fields}) == c
    held = ShutdownCounter(3, T0)
    assert counter_from_slot({"status": slot_status_fields(held)}) == held


@pytest.mark.parametrize("status", [None, {}, {"shutdown": None}, {"shutdown": {"attempts": None, "heldUntil": None}}])
def test_a_slot_that_never_shut_down_has_a_zero_counter(status):
    """No status.shutdown (or nulls in it): no Job fired, no hold."""
    slot = {"metadata": {"name": "worker-01"}, **({} if status is None else {"status": status})}
    assert counter_from_slot(slot) == ShutdownCounter(0, None)


def test_quiet_only_once_no_shutdown_runs_and_the_last_one_ended_a_grace_ago():
    from homecluster.model.shutdown import quiet_at
    grace = timedelta(seconds=30)
    assert quiet_at(True, None, T0, grace) == T0 + grace  # a Job runs: look again in one grace
    assert quiet_at(True, T0 - timedelta(hours=1), T0, grace) == T0 + grace
    ended = T0 - timedelta(seconds=10)
    assert quiet_at(False, ended, T0, grace) == ended + grace  # ended within the grace: wait for its end
    assert quiet_at(False, ended, ended + grace, grace) is None
    assert quiet_at(False, None, T0, grace) is None  # never a shutdown


@pytest.mark.parametrize("phase", [ClaimPhase.BOOTING, ClaimPhase.READY])
def test_a_claim_that_takes_the_machine_ends_the_unwanted_episode(phase):
    """On a fake clock: an unwanted machine's shutdown fails twice, then a claim takes the machine (it is never
    seen off). The count does not carry into the next unwanted episode: that one holds off at the bound (the
    third Job), not after its first."""
    c = fire(fire(ShutdownCounter(), T0), T0 + timedelta(minutes=2))
    assert c == ShutdownCounter(2, None)
    assert settle(c, False, ClaimPhase.PENDING) is c  # pending bought nothing: still the episode
    assert settle(c, False, None) is c
    c = settle(c, False, phase)
    assert c == ShutdownCounter()
    later = T0 + timedelta(hours=5)  # the claim ended; the machine is unwanted again
    c = fire(c, later)
    assert c == ShutdownCounter(1, None)  # no hold after one Job
    c = fire(fire(c, later + timedelta(minutes=2)), later + timedelta(minutes=4))
    assert c.attempts == 3 and c.held_until is not None


def test_a_pod_that_has_not_ended_is_live_terminating_or_not():
    from homecluster.lifecycle.facts import live_pod
    ended = [{"metadata": {"name": "a"}, "status": {"phase": "Succeeded"}},
             {"metadata": {"name": "b"}, "status": {"phase": "Failed"}}]
    assert live_pod(ended) is None and live_pod([]) is None
    killed = {"metadata": {"name": "c", "deletionTimestamp": "2026-03-04T10:00:00Z"}, "status": {"phase": "Running"}}
    assert live_pod(ended + [killed]) is killed
    unscheduled = {"metadata": {"name": "d"}}  # no status yet: Pending
    assert live_pod([unscheduled]) is unscheduled
