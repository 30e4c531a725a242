"""The pure boot model and the SimMachine's power record, with an injected clock (no sleeping)."""
from __future__ import annotations

import threading

import pytest

from homecluster_lab.machines.boot import Faults, KubeletPhase, PowerRecord, Timing, node_view
from homecluster_lab.machines.machine import Credentials, Identity, SimMachine

TIMING = Timing(boot_seconds=10, ready_taints_clear_seconds=5, unknown_after_seconds=20, graceful_shutdown_seconds=3)


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def machine(clock: Clock, **faults) -> SimMachine:
    ident = Identity("m1", "slot-1", "52:54:00:00:00:01", "node-1", "k3s://node-1")
    return SimMachine(ident, timing=TIMING, faults=Faults(**faults), credentials=Credentials("admin", "pw"),
                      clock=clock)


def test_off_machine_that_never_ran_reports_nothing():
    view = node_view(PowerRecord(), Faults(), TIMING, 5.0)
    assert view.phase is KubeletPhase.ABSENT and view.ready is None and view.next_change is None


@pytest.mark.parametrize("elapsed, phase, ready, tainted, next_change", [
    (0, KubeletPhase.ABSENT, None, False, 10),  # booting: nothing yet, the kubelet starts at +10
    (9.9, KubeletPhase.ABSENT, None, False, 10),
    (10, KubeletPhase.UP, "True", True, 15),  # registered, readiness taints on until +15
    (15, KubeletPhase.UP, "True", False, None),
])
def test_boot_timeline(elapsed, phase, ready, tainted, next_change):
    rec = PowerRecord(on=True, on_since=0.0, boot_count=1)
    view = node_view(rec, Faults(), TIMING, elapsed)
    assert (view.phase, view.ready, view.readiness_taints, view.next_change) == (phase, ready, tainted, next_change)


def test_power_off_goes_not_ready_then_unknown():
    rec = PowerRecord(on=False, on_since=0.0, kubelet_stopped_at=100.0, boot_count=1)
    assert node_view(rec, Faults(), TIMING, 100.0).ready == "False"
    assert node_view(rec, Faults(), TIMING, 119.9).next_change == 120.0
    view = node_view(rec, Faults(), TIMING, 120.0)
    assert (view.phase, view.ready) == (KubeletPhase.UNKNOWN, "Unknown")


@pytest.mark.parametrize("faults, at, phase, ready, tainted, os_up", [
    (Faults(never_boots=True), 50, KubeletPhase.ABSENT, None, False, False),
    (Faults(boots_but_never_registers=True), 50, KubeletPhase.ABSENT, None, False, True),
    (Faults(taints_never_clear=True), 500, KubeletPhase.UP, "True", True, True),
    (Faults(flaps=True, flap_seconds=2), 10.5, KubeletPhase.UP, "True", True, True),
    (Faults(flaps=True, flap_seconds=2), 12.5, KubeletPhase.UP, "False", True, True),
    (Faults(flaps=True, flap_seconds=2), 14.5, KubeletPhase.UP, "True", True, True),
])
def test_faults_shape_the_view(faults, at, phase, ready, tainted, os_up):
    rec = PowerRecord(on=True, on_since=0.0, boot_count=1)
    view = node_view(rec, faults, TIMING, at)
    assert (view.phase, view.ready, view.readiness_taints, view.os_up) == (phase, ready, tainted, os_up)


def test_a_machine_that_never_registers_still_says_when_its_os_comes_up():
    """The OS coming up is a change the boot check port waits for, though no kubelet follows it."""
    rec = PowerRecord(on=True, on_since=0.0, boot_count=1)
    faults = Faults(boots_but_never_registers=True)
    assert node_view(rec, faults, TIMING, 5.0).next_change == 10.0
    after = node_view(rec, faults, TIMING, 10.0)
    assert (after.os_up, after.phase, after.next_change) == (True, KubeletPhase.ABSENT, None)


def test_machine_power_on_boots_and_power_off_stops_the_kubelet():
    clock = Clock()
    m = machine(clock)
    assert m.power_state() == "off" and m.view().phase is KubeletPhase.ABSENT
    m.power_on(source="test")
    clock.t += 10
    assert m.view().ready == "True" and m.view().boot_count == 1
    m.power_off(source="test")
    assert m.power_state() == "off" and m.view().ready == "False"
    clock.t += 20
    assert m.view().ready == "Unknown"
    assert [e.action for e in m.events] == ["on", "off"]


def test_graceful_shutdown_completes_after_its_delay_unless_ignored():
    clock = Clock()
    m = machine(clock)
    m.power_on()
    clock.t += 15
    assert m.soft_off() is True
    assert m.power_state() == "on"
    clock.t += 3
    assert m.power_state() == "off" and m.view().ready == "False"

    stubborn = machine(clock, ignores_graceful_shutdown=True)
    stubborn.power_on()
    assert stubborn.soft_off() is False
    clock.t += 60
    assert stubborn.power_state() == "on"
    stubborn.power_off()  # the hard way works
    assert stubborn.power_state() == "off"


def test_powers_off_while_ready_after_n_seconds_of_being_usable():
    clock = Clock()
    m = machine(clock, powers_off_while_ready=7)
    m.power_on()
    clock.t += 15 + 6.9  # usable at +15
    assert m.power_state() == "on"
    assert m.view().next_change == pytest.approx(clock.t + 0.1)
    clock.t += 0.1
    assert m.power_state() == "off"
    assert m.events[-1].action == "self-off"


def test_reset_restarts_the_boot_and_counts_a_new_boot():
    clock = Clock()
    m = machine(clock)
    m.power_on()
    clock.t += 20
    m.reset()
    view = m.view()
    assert view.boot_count == 2 and view.ready == "False"  # kubelet down while the OS restarts
    clock.t += 10
    assert m.view().ready == "True" and m.view().readiness_taints


def test_faults_change_at_runtime_and_notify_observers():
    clock = Clock()
    m = machine(clock)
    calls = []
    unsubscribe = m.subscribe(lambda: calls.append(1))
    m.set_faults(wrong_credentials=True)
    assert m.accepts("admin", "pw") is False
    m.set_faults(wrong_credentials=False)
    assert m.accepts("admin", "pw") is True and m.accepts("admin", "nope") is False
    m.power_on()
    assert len(calls) == 3
    unsubscribe()
    m.power_off()
    assert len(calls) == 3
    with pytest.raises(TypeError, match="unknown fault knob"):
        m.set_faults(explodes=True)


def test_a_listener_may_unsubscribe_itself_while_being_called():
    m = machine(Clock())
    calls = []

    def once() -> None:
        calls.append("once")
        unsubscribe_once()  # from inside the notification: no deadlock, and no second call

    unsubscribe_once = m.subscribe(once)
    m.subscribe(lambda: calls.append("always"))
    m.power_on()
    m.power_off()
    assert calls == ["once", "always", "always"]


def test_power_changes_from_many_threads_leave_a_consistent_record():
    m = machine(Clock())

    def hammer() -> None:
        for i in range(200):
            (m.power_on if i % 2 == 0 else m.power_off)(source="thread")
    threads = [threading.Thread(target=hammer) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert m.power_state() == "off"  # every thread ends with an off
    assert m.view().boot_count >= 1
