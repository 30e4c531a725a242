"""spec.deadlineAt, its scope (the boot window) and the sub-deadlines of one boot."""
from datetime import datetime, timedelta, timezone

import pytest
from support import objects

from homecluster.model.deadlines import (
    GroupSpecError, boot_timeout, boot_window, deadline_applies, deadline_at, deadline_passed, next_boot_check,
    readiness_gate_timed_out, registration_timed_out, startup_budget_refusal, startup_job_timed_out,
)
from homecluster.model.phases import ClaimPhase, Reason
from homecluster.model.settings import Settings
from homecluster.model.timestamps import TimestampError, format_time

T0 = datetime(2026, 3, 4, 9, 38, 15, tzinfo=timezone.utc)
DEFAULT = Settings()


def group(max_provision=None):
    spec = {"maxSize": 3}
    if max_provision is not None:
        spec["maxNodeProvisionTime"] = max_provision
    return {"metadata": {"name": "workers"}, "spec": spec}


def claim(phase=None, deadline=None, **status):
    return objects.claim("worker-01-7f4b9c", phase=phase, requested_at=format_time(T0),
                         deadline_at=None if deadline is None else format_time(deadline),
                         **{k: format_time(v) if isinstance(v, datetime) else v for k, v in status.items()})


@pytest.mark.parametrize("max_provision, budget", [
    ("5m", timedelta(minutes=12, seconds=10)),
    ("20m", timedelta(minutes=20)),
    (None, timedelta(minutes=12, seconds=10)),
    ("12m10s", timedelta(minutes=12, seconds=10)),
    ("12m11s", timedelta(minutes=12, seconds=11)),
])
def test_deadline_is_requested_at_plus_the_larger_budget(max_provision, budget):
    assert deadline_at(T0, group(max_provision), DEFAULT) == T0 + budget
    assert boot_window(group(max_provision), DEFAULT) == budget


def test_seed_example_deadline():
    assert format_time(deadline_at("2026-03-04T09:38:15Z", group(), DEFAULT)) == "2026-03-04T09:50:25Z"


def test_shorter_settings_give_the_shorter_floor():
    fast = Settings.from_mapping({"startup_job_timeout": "2s", "job_poll_interval": "1s", "registration_wait": "3s",
                                  "readiness_gate": "4s", "uncordon_retry_ceiling": "0s", "slack": "1s"})
    assert fast.boot_floor == timedelta(seconds=11)
    assert deadline_at(T0, group(), fast) == T0 + timedelta(seconds=11)
    assert deadline_at(T0, group("5m"), fast) == T0 + timedelta(minutes=5)


def test_missing_group_uses_the_floor():
    assert boot_window(None, DEFAULT) == DEFAULT.boot_floor


def test_bad_group_duration_names_the_group_and_field():
    with pytest.raises(GroupSpecError, match=r'Group "workers" spec.maxNodeProvisionTime'):
        boot_window(group("five minutes"), DEFAULT)


@pytest.mark.parametrize("phase, applies", [
    (None, True), ("", True), ("pending", True), ("booting", True), (ClaimPhase.BOOTING, True),
    ("ready", False), ("failed", False), ("completed", False),
])
def test_deadline_applies_only_in_the_boot_window(phase, applies):
    assert deadline_applies(phase) is applies


@pytest.mark.parametrize("phase", [None, "pending", "booting"])
def test_deadline_passes_at_deadline_in_boot_window(phase):
    c = claim(phase, deadline=T0 + timedelta(minutes=12, seconds=10))
    assert not deadline_passed(c, T0 + timedelta(minutes=12, seconds=9))
    assert deadline_passed(c, T0 + timedelta(minutes=12, seconds=10))
    assert boot_timeout(c, T0 + timedelta(hours=1), DEFAULT) == Reason.DEADLINE_EXCEEDED


@pytest.mark.parametrize("phase", ["ready", "failed", "completed"])
def test_a_leftover_deadline_is_inert_outside_the_boot_window(phase):
    c = claim(phase, deadline=T0 + timedelta(minutes=1))
    assert not deadline_passed(c, T0 + timedelta(days=1))
    assert boot_timeout(c, T0 + timedelta(days=1), DEFAULT) is None


@pytest.mark.parametrize("phase", [None, "pending", "booting"])
def test_no_deadline_never_expires(phase):
    c = claim(phase)
    assert not deadline_passed(c, T0 + timedelta(days=365))
    assert boot_timeout(c, T0 + timedelta(days=365), DEFAULT) is None
    assert next_boot_check(c, DEFAULT) is None


def test_startup_job_timeout():
    c = claim("booting", bootStartedAt=T0)
    assert startup_job_timed_out(c, T0 + timedelta(minutes=4, seconds=59), DEFAULT) is None
    assert startup_job_timed_out(c, T0 + timedelta(minutes=5), DEFAULT) == Reason.STARTUP_JOB_TIMED_OUT
    assert next_boot_check(c, DEFAULT) == T0 + timedelta(minutes=5)
    # a Job that succeeded, or a machine that joined while the Job was polled, stops that clock
    assert startup_job_timed_out(claim("booting", bootStartedAt=T0, startupSucceededAt=T0),
                                 T0 + timedelta(hours=1), DEFAULT) is None
    assert startup_job_timed_out(claim("booting", bootStartedAt=T0, registeredAt=T0),
                                 T0 + timedelta(hours=1), DEFAULT) is None


def test_registration_wait_starts_at_startup_success():
    ok = T0 + timedelta(minutes=2)
    c = claim("booting", bootStartedAt=T0, startupSucceededAt=ok)
    assert registration_timed_out(c, ok + timedelta(seconds=89), DEFAULT) is None
    assert registration_timed_out(c, ok + timedelta(seconds=90), DEFAULT) == Reason.REGISTRATION_TIMED_OUT
    assert boot_timeout(c, ok + timedelta(seconds=90), DEFAULT) == Reason.REGISTRATION_TIMED_OUT
    assert registration_timed_out(claim("booting", startupSucceededAt=ok, registeredAt=ok),
                                  ok + timedelta(hours=1), DEFAULT) is None


def test_readiness_gate_starts_at_registration():
    seen = T0 + timedelta(minutes=3)
    c = claim("booting", bootStartedAt=T0, startupSucceededAt=T0, registeredAt=seen)
    assert readiness_gate_timed_out(c, seen + timedelta(minutes=3, seconds=59), DEFAULT) is None
    assert readiness_gate_timed_out(c, seen + timedelta(minutes=4), DEFAULT) == Reason.READINESS_GATE_TIMED_OUT
    assert next_boot_check(c, DEFAULT) == seen + timedelta(minutes=4)
    ready = claim("ready", registeredAt=seen)
    assert readiness_gate_timed_out(ready, seen + timedelta(hours=1), DEFAULT) is None


def test_sub_deadlines_only_while_booting():
    pending = claim("pending", bootStartedAt=T0, startupSucceededAt=T0, registeredAt=T0)
    later = T0 + timedelta(hours=1)
    assert (startup_job_timed_out(pending, later, DEFAULT), registration_timed_out(pending, later, DEFAULT),
            readiness_gate_timed_out(pending, later, DEFAULT)) == (None, None, None)


def test_next_check_is_the_earliest_clock():
    c = claim("booting", deadline=T0 + timedelta(minutes=3), bootStartedAt=T0)
    assert next_boot_check(c, DEFAULT) == T0 + timedelta(minutes=3)
    assert next_boot_check(claim("ready", deadline=T0), DEFAULT) is None


def test_the_gates_clock_waits_for_its_look_the_umbrella_does_not():
    seen = T0 + timedelta(minutes=3)
    c = claim("booting", deadline=T0 + timedelta(minutes=30), bootStartedAt=T0, startupSucceededAt=T0,
              registeredAt=seen)
    late = seen + timedelta(minutes=5)
    assert boot_timeout(c, late, DEFAULT) == Reason.READINESS_GATE_TIMED_OUT
    assert boot_timeout(c, late, DEFAULT, gate_looked=False) is None
    assert boot_timeout(c, T0 + timedelta(minutes=30), DEFAULT, gate_looked=False) == Reason.DEADLINE_EXCEEDED
    # the registration wait is not the gate's: it still ends a boot whose Node never joined
    waiting = claim("booting", bootStartedAt=T0, startupSucceededAt=T0)
    assert boot_timeout(waiting, T0 + timedelta(seconds=90), DEFAULT, gate_looked=False) == \
        Reason.REGISTRATION_TIMED_OUT


def test_next_check_after_the_startup_job_succeeded_is_the_registration_wait():
    """Once the startup Job succeeded, the clock that runs is the registration wait, from that success."""
    ok = T0 + timedelta(minutes=2)
    c = claim("booting", bootStartedAt=T0, startupSucceededAt=ok)
    assert next_boot_check(c, DEFAULT) == ok + DEFAULT.registration_wait
    assert next_boot_check(claim("booting", deadline=ok + timedelta(seconds=30), bootStartedAt=T0,
                                 startupSucceededAt=ok), DEFAULT) == ok + timedelta(seconds=30)


def test_a_deadline_needs_a_requested_at():
    with pytest.raises(ValueError) as err:
        deadline_at("", group(), DEFAULT)
    assert str(err.value) == "spec.requestedAt is required to compute spec.deadlineAt"


def test_an_unreadable_requested_at_is_refused_naming_the_field():
    with pytest.raises(TimestampError) as err:
        deadline_at("yesterday", group(), DEFAULT)
    assert str(err.value).startswith("spec.requestedAt: 'yesterday' is not an RFC 3339 timestamp")


def test_an_empty_max_node_provision_time_is_unset():
    assert boot_window(group(""), DEFAULT) == DEFAULT.boot_floor


def test_the_slot_budget_refusal_opens_with_the_slot_and_its_field():
    slot = {"metadata": {"name": "big-01"}, "spec": {"bootCheck": {"port": 22, "timeout": "9m"}}}
    refused = startup_budget_refusal(slot, group(), DEFAULT)
    assert refused.startswith('slot "big-01" spec.bootCheck.timeout 9m does not fit the claim\'s boot budget: ')
