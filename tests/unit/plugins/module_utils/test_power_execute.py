"""power_execute: waiting, graceful-then-forced and timeouts, with a scripted driver and a fake clock.

The driver here is a stand-in on purpose: these tests pin the timing rules (which no real BMC
lets us control to the millisecond). The real protocols are covered by test_power_ipmi/redfish/
wol/ssh against real peers.
"""
from __future__ import annotations

import pytest

from ansible_collections.homecluster.infra.plugins.module_utils.power_common import PowerDriver, PowerError
from ansible_collections.homecluster.infra.plugins.module_utils.power_execute import PowerExecutor


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


class ScriptedMachine(PowerDriver):
    """A machine that takes ``delay`` seconds to follow a command; ignores graceful offs if told to."""

    method = "scripted"

    def __init__(self, clock, state="off", delay=0.0, ignores_graceful=False, can_confirm=True):
        super().__init__("machine-1")
        self.clock, self.state, self.delay = clock, state, delay
        self.ignores_graceful = ignores_graceful
        self.can_confirm = can_confirm
        self.pending = None
        self.commands = []

    def _settle(self):
        if self.pending and self.clock() >= self.pending[1]:
            self.state, self.pending = self.pending[0], None

    def query(self):
        self._settle()
        return self.state if self.can_confirm else "unknown"

    def _go(self, target, name):
        self.commands.append(name)
        self.pending = (target, self.clock() + self.delay)

    def power_on(self):
        self._go("on", "on")

    def power_off(self, graceful):
        if graceful and self.ignores_graceful:
            self.commands.append("graceful-ignored")
            return
        self._go("off", "graceful" if graceful else "forced")

    def reset(self):
        self._go("on", "reset")


def executor(machine, clock, timeout=30, graceful_timeout=10, poll=0.5):
    return PowerExecutor(machine, timeout, graceful_timeout, poll, clock=clock, sleep=clock.sleep)


def test_power_on_waits_for_the_machine_delay():
    clock = Clock()
    machine = ScriptedMachine(clock, delay=3.0)
    result = executor(machine, clock).run("powered_on")
    assert result["changed"] and result["confirmed"] and result["state"] == "on"
    assert 3.0 <= result["elapsed"] <= 3.5


def test_graceful_off_that_works_is_not_forced():
    clock = Clock()
    machine = ScriptedMachine(clock, state="on", delay=2.0)
    result = executor(machine, clock).run("powered_off")
    assert result["steps"] == ["graceful_off"] and not result["forced"]
    assert machine.commands == ["graceful"]


def test_ignored_graceful_off_is_forced_after_graceful_timeout():
    clock = Clock()
    machine = ScriptedMachine(clock, state="on", ignores_graceful=True)
    result = executor(machine, clock, graceful_timeout=10).run("powered_off")
    assert result["steps"] == ["graceful_off", "forced_off"] and result["forced"]
    assert machine.commands == ["graceful-ignored", "forced"]
    assert 10.0 <= result["elapsed"] <= 10.5


@pytest.mark.parametrize("timeout, graceful_timeout, forced_at", [
    (20, 120, 10.0),    # timeout below graceful_timeout: half of the timeout for the soft-off
    (100, 90, 70.0),    # the forced step keeps its 30 s reserve
    (300, 120, 120.0),  # the defaults: graceful_timeout as given
])
def test_an_ignored_graceful_off_leaves_the_forced_step_its_reserve(timeout, graceful_timeout, forced_at):
    clock = Clock()
    machine = ScriptedMachine(clock, state="on", ignores_graceful=True, delay=1.0)
    result = executor(machine, clock, timeout=timeout, graceful_timeout=graceful_timeout).run("powered_off")
    assert result["steps"] == ["graceful_off", "forced_off"] and result["state"] == "off"
    assert machine.commands == ["graceful-ignored", "forced"]
    assert forced_at + 1.0 <= result["elapsed"] <= forced_at + 1.5 <= timeout


def test_state_that_never_arrives_fails_at_the_timeout_naming_host_and_method():
    clock = Clock()
    machine = ScriptedMachine(clock, delay=100.0)
    with pytest.raises(PowerError) as err:
        executor(machine, clock, timeout=5).run("powered_on")
    assert err.value.kind == PowerError.TIMEOUT
    assert "scripted power control of machine-1" in str(err.value)
    assert "still reports 'off'" in str(err.value)
    assert clock.now <= 5.0


class SlowBmc(ScriptedMachine):
    """Answers the first read, then (busy, or the machine switching) every read fails or says 'unknown'."""

    def __init__(self, clock, answer):
        super().__init__(clock, delay=100.0)
        self.answer, self.reads = answer, 0

    def query(self):
        self.reads += 1
        if self.reads == 1:
            return super().query()
        if self.answer == "unknown":
            return "unknown"
        raise self.error(PowerError.TIMEOUT, "no answer within 0.4 s while reading the power state")


@pytest.mark.parametrize("answer", ["unknown", "no answer"])
def test_a_state_that_never_arrives_from_a_slow_bmc_names_the_last_reading_and_the_last_known_state(answer):
    clock = Clock()
    machine = SlowBmc(clock, answer)
    with pytest.raises(PowerError) as err:
        executor(machine, clock, timeout=5).run("powered_on")
    assert err.value.kind == PowerError.TIMEOUT and machine.reads > 2
    assert "still reports 'unknown' (last known: 'off')" in str(err.value), str(err.value)
    assert "expected 'on'" in str(err.value)


def test_unconfirmable_method_reports_unconfirmed_without_waiting():
    clock = Clock()
    machine = ScriptedMachine(clock, can_confirm=False)
    result = executor(machine, clock).run("powered_on")
    assert result["changed"] and result["confirmed"] is False and result["state"] == "unknown"
    assert clock.now == 0.0


def test_check_mode_reads_but_never_commands():
    clock = Clock()
    machine = ScriptedMachine(clock, state="on")
    result = executor(machine, clock).run("forced_off", check_mode=True)
    assert result["changed"] and result["steps"] == ["forced_off"] and machine.commands == []


class WrongPassword(ScriptedMachine):
    def __init__(self, clock, fail_after=0):
        super().__init__(clock)
        self.calls = 0
        self.fail_after = fail_after

    def query(self):
        self.calls += 1
        if self.calls > self.fail_after:
            raise self.error(PowerError.AUTH, "refused")
        return super().query()


def test_bad_credentials_end_the_wait_at_once():
    clock = Clock()
    machine = WrongPassword(clock, fail_after=1)
    with pytest.raises(PowerError) as err:
        executor(machine, clock).run("powered_on")
    assert err.value.kind == PowerError.AUTH and clock.now == 0.0


def test_a_silent_driver_call_is_cut_at_the_timeout():
    """A real thread and a real clock: a call that hangs ends when the budget does."""
    import time

    class Hanging(PowerDriver):
        method = "hanging"

        def query(self):
            time.sleep(10)

    started = time.monotonic()
    with pytest.raises(PowerError) as err:
        PowerExecutor(Hanging("bmc-9"), timeout=0.3, graceful_timeout=0, poll_interval=0.1).run("powered_on")
    assert err.value.kind == PowerError.TIMEOUT and "bmc-9" in str(err.value)
    assert time.monotonic() - started < 1.0
