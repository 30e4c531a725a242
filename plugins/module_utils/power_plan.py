# -*- coding: utf-8 -*-
# Copyright: homecluster maintainers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Pure decisions of machine_power: which steps a requested state needs from the observed one.

No I/O here, so every row of the table is tested without a BMC.
"""
from __future__ import annotations

from ansible_collections.homecluster.infra.plugins.module_utils.power_common import OFF, ON
from ansible_collections.homecluster.infra.plugins.module_utils.power_registry import ALL_STATES as STATES, METHODS

# Steps the executor knows how to run.
STEP_ON = "power_on"
STEP_GRACEFUL_OFF = "graceful_off"
STEP_FORCED_OFF = "forced_off"
STEP_RESET = "reset"
STEP_BOOT_DEVICE = "set_boot_device"  # a one-time boot device before the boot; nothing to wait for

BOOT_DEVICES = ("pxe", "disk")
# The states that boot the machine (which methods can set a one-time boot device: their registration).
BOOT_DEVICE_STATES = ("powered_on", "reset")

# The state each step must reach before the next one runs.
STEP_TARGET = {STEP_ON: ON, STEP_GRACEFUL_OFF: OFF, STEP_FORCED_OFF: OFF, STEP_RESET: ON}

# A powered_off keeps the last FORCED_RESERVE seconds of its timeout (at most half of it) for the forced
# step, so a soft-off the machine ignores still ends off within the timeout the user gave.
FORCED_RESERVE = 30.0


def plan(state: str, current: str) -> tuple:
    """Return the steps that take a machine observed in ``current`` to ``state``.

    An empty tuple means nothing to do (changed: false). ``current`` may be "unknown"
    (a method that cannot observe): then the step runs, since we cannot prove it is done.
    A reset of a machine that is off powers it on: the outcome a person asking for a
    reset wants, and what most BMCs refuse to do otherwise.
    """
    if state not in STATES:
        raise ValueError("unknown state %r; expected one of %s" % (state, ", ".join(STATES)))
    if state == "query":
        return ()
    if state == "powered_on":
        return () if current == ON else (STEP_ON,)
    if state == "powered_off":
        return () if current == OFF else (STEP_GRACEFUL_OFF, STEP_FORCED_OFF)
    if state == "forced_off":
        return () if current == OFF else (STEP_FORCED_OFF,)
    return (STEP_ON,) if current == OFF else (STEP_RESET,)


def with_boot_device(steps: tuple, boot_device) -> tuple:
    """Put the one-time boot device step before a plan that boots the machine (power on or reset).

    A plan that boots nothing (a machine already on, for powered_on) sets nothing: a boot device left
    pending would surprise whoever boots the machine next.
    """
    if boot_device and steps and steps[-1] in (STEP_ON, STEP_RESET):
        return (STEP_BOOT_DEVICE,) + tuple(steps)
    return tuple(steps)


def boot_device_problem(method: str, state: str, boot_device):
    """None when a one-time boot device can go with this method and state, else why not."""
    if not boot_device:
        return None
    if not METHODS[method].boot_device:
        return "boot_device is not possible with method=%s; use %s" % (
            method, " or ".join(name for name, known in METHODS.items() if known.boot_device))
    if state not in BOOT_DEVICE_STATES:
        return "boot_device needs state=powered_on or state=reset (a boot), got state=%s" % state
    return None


def graceful_window(graceful_timeout: float, timeout: float, remaining: float) -> float:
    """Seconds the graceful step of a powered_off may wait before the forced step runs.

    ``graceful_timeout`` or what is left of the ``timeout`` budget (``remaining``) minus the
    forced step's reserve, whichever is shorter: with ``timeout: 20`` and the default
    ``graceful_timeout: 120`` the soft-off gets 10 s and the forced power-off the other 10 s,
    instead of the soft-off using up the whole budget and leaving the machine on.
    """
    reserve = min(FORCED_RESERVE, timeout / 2.0)
    return max(0.0, min(graceful_timeout, remaining - reserve))


def method_allows(method: str, state: str) -> bool:
    """Whether ``method`` can serve ``state`` (WoL only powers on, SSH only powers off: their registrations)."""
    return method in METHODS and state in METHODS[method].states
