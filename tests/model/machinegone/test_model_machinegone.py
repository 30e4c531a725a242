"""The MachineGone clock: started at the first off observation, cleared when the machine is back,
expiring past one boot window, and read only from the persisted timestamp."""
from datetime import datetime, timedelta, timezone

import pytest

from homecluster.model.machinegone import ClockStep, machine_gone
from homecluster.model.phases import PowerState, Reason
from homecluster.model.timestamps import format_time

T0 = datetime(2026, 3, 4, 10, 0, 0, tzinfo=timezone.utc)
WINDOW = timedelta(minutes=12, seconds=10)
ON, OFF = PowerState.ON, PowerState.OFF


def ready_claim(off_since=None, phase="ready"):
    status = {"phase": phase}
    if off_since is not None:
        status["machineObservedOffAt"] = format_time(off_since)
    return {"metadata": {"name": "worker-01-7f4b9c"}, "status": status}


def apply(claim, patch):
    """What the Recorder does with the verdict's status patch (merge-patch semantics)."""
    for key, value in (patch or {}).items():
        if value is None:
            claim["status"].pop(key, None)
        else:
            claim["status"][key] = value
    return claim


def test_first_off_observation_starts_the_clock():
    v = machine_gone(ready_claim(), OFF, T0, WINDOW)
    assert v.step == ClockStep.START
    assert v.status_patch == {"machineObservedOffAt": "2026-03-04T10:00:00Z"}
    assert v.expires_at == T0 + WINDOW


def test_running_clock_is_not_restarted_by_later_passes():
    claim = apply(ready_claim(), machine_gone(ready_claim(), OFF, T0, WINDOW).status_patch)
    for minutes in (1, 5, 12):
        v = machine_gone(claim, OFF, T0 + timedelta(minutes=minutes), WINDOW)
        assert v.step == ClockStep.NONE and v.status_patch is None
        assert v.expires_at == T0 + WINDOW


def test_a_restart_keeps_counting_from_the_persisted_timestamp():
    """A fresh controller sees only the object; the clock continues from machineObservedOffAt."""
    persisted = ready_claim(off_since=T0 - timedelta(minutes=12))
    assert machine_gone(persisted, OFF, T0, WINDOW).step == ClockStep.NONE
    assert machine_gone(persisted, OFF, T0 + timedelta(seconds=11), WINDOW).step == ClockStep.EXPIRE


def test_expiry_is_strictly_past_one_window():
    claim = ready_claim(off_since=T0)
    assert machine_gone(claim, OFF, T0 + WINDOW, WINDOW).step == ClockStep.NONE
    v = machine_gone(claim, OFF, T0 + WINDOW + timedelta(seconds=1), WINDOW)
    assert v.step == ClockStep.EXPIRE and v.reason == Reason.MACHINE_GONE


def test_machine_back_on_clears_the_clock_and_a_later_outage_starts_fresh():
    claim = ready_claim(off_since=T0)
    v = machine_gone(claim, ON, T0 + timedelta(minutes=3), WINDOW)
    assert v.step == ClockStep.CLEAR and v.status_patch == {"machineObservedOffAt": None}
    apply(claim, v.status_patch)
    assert "machineObservedOffAt" not in claim["status"]
    later = T0 + timedelta(minutes=20)
    assert machine_gone(claim, OFF, later, WINDOW).status_patch == {"machineObservedOffAt": format_time(later)}


def test_on_without_clock_does_nothing():
    assert machine_gone(ready_claim(), ON, T0, WINDOW).step == ClockStep.NONE


@pytest.mark.parametrize("phase", ["", "pending", "booting", "failed", "completed"])
def test_only_a_ready_claim_has_a_clock(phase):
    assert machine_gone(ready_claim(phase=phase), OFF, T0, WINDOW).step == ClockStep.NONE
    assert machine_gone(ready_claim(off_since=T0, phase=phase), OFF, T0 + timedelta(days=1), WINDOW).step == ClockStep.NONE
