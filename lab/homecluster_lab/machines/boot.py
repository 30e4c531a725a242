"""The pure boot model of a simulated machine: what its kubelet would report at a given moment.

No I/O and no clock: every function takes the machine's power record, its fault knobs, its timings
and `now` (seconds on a monotonic clock), so each rule can be tested row by row. The machine
(`machine.py`) keeps the record; the kubelet (`node/kubelet.py`) turns a `NodeView` into API writes.

The story the model tells:
- power on at t0; the operating system is up at t0 + boot_seconds (never, with `never_boots`);
- then the kubelet runs (never, with `boots_but_never_registers`): the Node is registered Ready=True
  and carries the pool's readiness taints until t0 + boot_seconds + ready_taints_clear_seconds
  (forever, with `taints_never_clear`); with `flaps` it alternates Ready and NotReady;
- the kubelet stops when the machine powers off or resets: the Node is NotReady from then on, and
  Unknown after a further `unknown_after_seconds` (what the node lifecycle controller would post).
- a graceful shutdown completes after `graceful_shutdown_seconds`; `powers_off_while_ready` turns the
  machine off by itself that many seconds after its node became usable.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

from homecluster_lab.node.view import KubeletPhase, NodeView


@dataclass
class Faults:
    """Fault knobs of one simulated machine. All may be changed while the lab runs."""

    bmc_unreachable: bool = False  # the BMC (or, for wol machines, the NIC) answers nothing
    wrong_credentials: bool = False  # the BMC rejects the right password
    never_boots: bool = False  # power is on, the operating system never comes up
    boots_but_never_registers: bool = False  # the OS is up (SSH works), the kubelet never registers
    taints_never_clear: bool = False  # the pool's readiness taints stay on the Node
    flaps: bool = False  # the Node alternates Ready and NotReady every flap_seconds
    flap_seconds: float = 2.0
    powers_off_while_ready: float | None = None  # seconds after the node became usable
    ignores_graceful_shutdown: bool = False  # soft off does nothing; hard off works
    ignores_power_commands: bool = False  # the BMC accepts power commands and does nothing
    power_readback_lies: bool = False  # the BMC reports the opposite of the machine's real power


@dataclass(frozen=True)
class Timing:
    """How long the phases of a boot and of a shutdown take, in seconds."""

    boot_seconds: float = 2.0
    ready_taints_clear_seconds: float = 1.0
    unknown_after_seconds: float = 5.0
    graceful_shutdown_seconds: float = 0.5


@dataclass(frozen=True)
class PowerRecord:
    """What the machine remembers about its power (times on the monotonic clock)."""

    on: bool = False
    on_since: float | None = None  # the last power-on or reset
    kubelet_stopped_at: float | None = None  # the last power-off or reset after a power-on
    shutdown_requested_at: float | None = None  # a graceful shutdown in progress
    boot_count: int = 0  # incremented by every power-on and reset: a new boot, a new bootID


def os_up_at(rec: PowerRecord, faults: Faults, timing: Timing) -> float | None:
    """When the operating system is (or will be) up in the current power-on; None if never."""
    if not rec.on or rec.on_since is None or faults.never_boots:
        return None
    return rec.on_since + timing.boot_seconds


def usable_at(rec: PowerRecord, faults: Faults, timing: Timing) -> float | None:
    """When the node becomes usable (registered, taints cleared); None if it never does."""
    up = os_up_at(rec, faults, timing)
    if up is None or faults.boots_but_never_registers or faults.taints_never_clear:
        return None
    return up + timing.ready_taints_clear_seconds


def self_power_off_at(rec: PowerRecord, faults: Faults, timing: Timing) -> float | None:
    """When the machine turns itself off: a graceful shutdown finishing, or `powers_off_while_ready`."""
    if not rec.on:
        return None
    candidates = []
    if rec.shutdown_requested_at is not None:
        candidates.append(rec.shutdown_requested_at + timing.graceful_shutdown_seconds)
    if faults.powers_off_while_ready is not None:
        usable = usable_at(rec, faults, timing)
        if usable is None:  # taints never clear: count from registration instead
            usable = os_up_at(rec, faults, timing) if not faults.boots_but_never_registers else None
        if usable is not None:
            candidates.append(usable + faults.powers_off_while_ready)
    return min(candidates) if candidates else None


def _earliest(*times: float | None) -> float | None:
    present = [t for t in times if t is not None]
    return min(present) if present else None


def node_view(rec: PowerRecord, faults: Faults, timing: Timing, now: float) -> NodeView:
    """The Node's state at `now` for a machine whose record is already settled at `now`."""
    up = os_up_at(rec, faults, timing)
    os_up = up is not None and now >= up
    self_off = self_power_off_at(rec, faults, timing)
    if os_up and not faults.boots_but_never_registers:
        clear_at = up + timing.ready_taints_clear_seconds
        tainted = faults.taints_never_clear or now < clear_at
        next_change = clear_at if (tainted and not faults.taints_never_clear) else None
        ready = "True"
        if faults.flaps and faults.flap_seconds > 0:
            period = math.floor((now - up) / faults.flap_seconds)
            ready = "True" if period % 2 == 0 else "False"
            next_change = _earliest(next_change, up + (period + 1) * faults.flap_seconds)
        return NodeView(KubeletPhase.UP, ready, tainted, True, rec.boot_count, _earliest(next_change, self_off))

    # The kubelet is not running. The OS coming up is a change (the boot check port opens), whether or not
    # the kubelet then starts (`boots_but_never_registers`: it never does)
    next_change = up if (up is not None and now < up) else None
    next_change = _earliest(next_change, self_off)
    if rec.kubelet_stopped_at is None:
        return NodeView(KubeletPhase.ABSENT, None, False, os_up, rec.boot_count, next_change)
    unknown_at = rec.kubelet_stopped_at + timing.unknown_after_seconds
    if now < unknown_at:
        return NodeView(KubeletPhase.NOT_READY, "False", False, os_up, rec.boot_count,
                        _earliest(next_change, unknown_at))
    return NodeView(KubeletPhase.UNKNOWN, "Unknown", False, os_up, rec.boot_count, next_change)
