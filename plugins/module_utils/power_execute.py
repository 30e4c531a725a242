# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a power plan against a driver and wait until the machine confirms each step.

All timing lives here, with the clock and sleep injected, so one rule holds for every
method: nothing blocks past ``timeout`` seconds from the start, a graceful power-off
gets at most ``graceful_timeout`` of that budget before the forced one and always leaves
the forced one its reserve (power_plan.graceful_window), and a slow or silent BMC ends in a
PowerError that names the host, the method and the cause.
"""
from __future__ import annotations

import time

from ansible_collections.homecluster.infra.plugins.module_utils.power_common import (
    UNKNOWN,
    PowerError,
    call_with_deadline,
)
from ansible_collections.homecluster.infra.plugins.module_utils.power_plan import (
    STEP_BOOT_DEVICE,
    STEP_FORCED_OFF,
    STEP_GRACEFUL_OFF,
    STEP_ON,
    STEP_RESET,
    STEP_TARGET,
    graceful_window,
    plan,
    with_boot_device,
)


class PowerExecutor:
    """Carries the deadline of one module run; ``run`` returns the module's result fields."""

    def __init__(self, driver, timeout: float, graceful_timeout: float, poll_interval: float,
                 clock=time.monotonic, sleep=time.sleep, boot_device=None) -> None:
        self.driver = driver
        self.boot_device = boot_device
        self.timeout = float(timeout)
        self.graceful_timeout = float(graceful_timeout)
        self.poll_interval = float(poll_interval)
        self.clock = clock
        self.sleep = sleep
        self.started = clock()

    # --- time -----------------------------------------------------------------
    def remaining(self) -> float:
        return self.timeout - (self.clock() - self.started)

    def elapsed(self) -> float:
        return round(self.clock() - self.started, 3)

    def _call(self, fn, doing: str):
        """Call the driver with whatever is left of the budget, and no longer."""
        budget = self.remaining()
        if budget <= 0:
            raise self.driver.error(PowerError.TIMEOUT, "the %.1f s timeout passed before %s" % (self.timeout, doing))
        return call_with_deadline(
            fn, budget,
            lambda: self.driver.error(
                PowerError.TIMEOUT,
                "no answer within %.1f s while %s (is the endpoint reachable and the port right?)" % (budget, doing)))

    # --- steps ------------------------------------------------------------------
    def query(self) -> str:
        return self._call(self.driver.query, "reading the power state")

    def _perform(self, step: str) -> None:
        actions = {
            STEP_ON: (self.driver.power_on, "asking for power on"),
            STEP_GRACEFUL_OFF: (lambda: self.driver.power_off(graceful=True), "asking for a graceful power off"),
            STEP_FORCED_OFF: (lambda: self.driver.power_off(graceful=False), "asking for a forced power off"),
            STEP_RESET: (self.driver.reset, "asking for a reset"),
            STEP_BOOT_DEVICE: (lambda: self.driver.set_boot_device(self.boot_device),
                               "setting the one-time boot device %s" % self.boot_device),
        }
        fn, doing = actions[step]
        self._call(fn, doing)

    def wait_for(self, target: str, budget: float, known: str = UNKNOWN):
        """Poll until the machine reports ``target`` or ``budget`` seconds pass.

        Returns (reached, last reading, last state known for sure, last transient error).
        ``known`` is the state known before the wait; a reading of ``unknown`` or a read
        that fails (a slow BMC) leaves it as it was. Wrong credentials end the wait at
        once; other errors are retried, since a BMC can drop a request while it switches
        power.
        """
        until = self.clock() + max(budget, 0.0)
        last, last_error = UNKNOWN, None
        while True:
            try:
                last = self.query()
                last_error = None
            except PowerError as exc:
                if exc.kind in (PowerError.AUTH, PowerError.UNSUPPORTED):
                    raise
                last_error = exc
            if last != UNKNOWN:
                known = last
            if last == target:
                return True, last, known, None
            left = until - self.clock()
            if left <= 0:
                return False, last, known, last_error
            self.sleep(min(self.poll_interval, left))

    def run(self, state: str, check_mode: bool = False) -> dict:
        previous = self.query()
        steps = with_boot_device(plan(state, previous), self.boot_device)
        result = {"previous_state": previous, "state": previous, "changed": bool(steps),
                  "steps": [], "forced": False, "confirmed": previous != UNKNOWN}
        if check_mode or not steps:
            result["steps"] = list(steps) if check_mode else []
            result["elapsed"] = self.elapsed()
            return result
        current = known = previous
        for step in steps:
            self._perform(step)
            result["steps"].append(step)
            if step not in STEP_TARGET:
                continue  # nothing to wait for (the boot device)
            if not self.driver.can_confirm:
                result["confirmed"] = False
                current = UNKNOWN
                break
            target = STEP_TARGET[step]
            budget = self.remaining()
            if step == STEP_GRACEFUL_OFF:
                budget = graceful_window(self.graceful_timeout, self.timeout, budget)
            reached, current, known, last_error = self.wait_for(target, budget, known)
            if reached:
                result["confirmed"] = True
                if step == STEP_GRACEFUL_OFF:
                    break  # off without force: the forced step is not needed
                continue
            if step == STEP_GRACEFUL_OFF:
                continue  # the graceful window closed: the forced step runs next
            cause = "the machine still reports %s %.1f s after %s; expected %r" % (
                reading(current, known), self.clock() - self.started, step.replace("_", " "), target)
            if last_error is not None:
                cause += " (last error: %s)" % last_error.cause
            raise self.driver.error(PowerError.TIMEOUT, cause)
        result["forced"] = STEP_FORCED_OFF in result["steps"]
        result["state"] = current
        result["elapsed"] = self.elapsed()
        return result


def reading(last: str, known: str) -> str:
    """What the machine last reported, and, when that was no state (a slow or silent BMC), the state it
    was last known to be in for sure: "'off'", or "'unknown' (last known: 'off')"."""
    if last == UNKNOWN and known != UNKNOWN:
        return "%r (last known: %r)" % (last, known)
    return repr(last)
