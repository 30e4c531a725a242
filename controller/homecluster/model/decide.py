"""The decision table of the NodeClaim model, as one total function.

    a machine is wanted <=> a live NodeClaim names its slot

A reconcile pass reads three facts -- the phase of the slot's claim, the observed power, the node's
usability -- plus whether a live claim is marked for deletion, and gets back what the slot reports
(Node.status.phase, for display only) and the one thing that runs. Each `Decision` carries the
number of the specification's table row it comes from (1-12, in the table's order), so a log line
or a test can point at the exact rule.

`claim` is the phase of "the slot's claim": its live claim when it has one, otherwise its most
recent terminal claim (failed/completed, the last two rows), otherwise None (a free slot). Use
`supersede.slot_claim_view(...).deciding_phase` to obtain it. An unstamped claim must be passed as
`ClaimPhase.PENDING` (or ""); None here means "no claim", not "no phase".
"""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from homecluster.model.phases import TERMINAL_PHASES, ClaimPhase, PowerState, SlotPhase, effective_phase


class Action(str, Enum):
    """What runs after a pass: names of the handler that owns the slot, not of API writes."""

    NOTHING = "nothing"  # a free slot, or a ready claim on a usable machine
    START = "start"  # create the startup Job: the boot becomes committed
    MONITOR_BOOT = "monitor-boot"  # the Job monitor of the boot owns the slot
    GATE = "gate"  # the readiness gate owns the slot (untaint, uncordon, wait for usability)
    AWAIT_MACHINE_GONE = "await-machine-gone"  # nothing fires; the MachineGone clock ends the claim
    SHUTDOWN = "shutdown"  # an unwanted machine is on: fire the shutdown
    REVERSE = "reverse"  # a live claim is being deleted with its machine on: shutdown, then release
    COMPLETE = "complete"  # a live claim is being deleted and its machine is off: it ends completed


@dataclass(frozen=True)
class Decision:
    """What the slot reports, what runs, and the table row (1-12) that says so."""

    phase: SlotPhase
    action: Action
    row: int


def decide(
    claim: ClaimPhase | None,
    power: PowerState,
    usable: bool,
    *,
    deleting: bool = False,
) -> Decision:
    """One row of the table for every input; never raises.

    Precedence, where two rows could both read on an input: a live claim marked for deletion takes
    the deletion rows (9, 10) whatever its phase, because its finalizer owns the reversal from that
    moment; `deleting` is ignored for a terminal claim or no claim (a terminal claim being
    collected is still "not a want"). Usability is read only for a ready claim on a machine that is
    on (rows 6, 7): everywhere else the table marks it "--".
    """
    on = power == PowerState.ON
    if claim is not None:
        claim = effective_phase(claim)  # accept the raw API string too ("" reads as pending)
    if claim is None:
        return Decision(SlotPhase.DRAINING, Action.SHUTDOWN, 2) if on else Decision(SlotPhase.OFF, Action.NOTHING, 1)
    if claim in TERMINAL_PHASES:
        return Decision(SlotPhase.DRAINING, Action.SHUTDOWN, 11) if on else Decision(SlotPhase.OFF, Action.NOTHING, 12)
    if deleting:
        return Decision(SlotPhase.DRAINING, Action.REVERSE, 9) if on else Decision(SlotPhase.OFF, Action.COMPLETE, 10)
    if claim == ClaimPhase.PENDING:
        return Decision(SlotPhase.BOOTING, Action.MONITOR_BOOT, 4) if on else Decision(SlotPhase.PENDING, Action.START, 3)
    if claim == ClaimPhase.BOOTING:
        return Decision(SlotPhase.BOOTING, Action.MONITOR_BOOT, 5)
    # ready
    if not on:
        return Decision(SlotPhase.BOOTING, Action.AWAIT_MACHINE_GONE, 8)
    if usable:
        return Decision(SlotPhase.READY, Action.NOTHING, 6)
    return Decision(SlotPhase.BOOTING, Action.GATE, 7)
