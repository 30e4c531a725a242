"""The owner's action, step 4 of a slot pass: a table of steps, the first whose precondition holds runs.

Each OwnerStep says when it applies -- a pure predicate over the pass's Facts and the decision table's row
(model.decide, docs/model.md "What decides") -- and what it does; `act` runs the first that applies, so a
walk of the owner's actions is a walk of OWNER_STEPS, in order. The decision is read only by the steps that
need it (`Turn.decision`): a slot gone under its claim is handled before anything is decided. A step whose
action decides on pods (the launch's shutdown hold, the boot monitor's pod look) declares which (`reads`,
pure); `act` has them read into the facts first (lifecycle.podreads), so the action reads only its Facts.
"""
from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from functools import cached_property
from typing import Any

from homecluster.lifecycle import bootmonitor, deadlines, gate, launch, machinegone, podreads, reversal, shutdown
from homecluster.lifecycle.context import Context
from homecluster.lifecycle.facts import Facts
from homecluster.lifecycle.podsview import PodReads
from homecluster.model.decide import Action, Decision, decide
from homecluster.model.objects import claim_phase
from homecluster.model.phases import ClaimPhase


@dataclass
class Turn:
    """What the owner's steps read: the pass's facts, and the decision table's row for them (computed once, when
    a step first asks)."""

    facts: Facts

    @property
    def owner(self) -> Any:
        return self.facts.view.owner

    @cached_property
    def decision(self) -> Decision:
        view = self.facts.view
        return decide(view.deciding_phase, self.facts.power, self.facts.observation.usable,
                      deleting=view.owner_deleting)

    def owner_in(self, *phases: ClaimPhase) -> bool:
        return self.owner is not None and claim_phase(self.owner) in phases


@dataclass(frozen=True)
class OwnerStep:
    name: str
    when: Callable[[Turn], bool]  # pure: reads the facts and the decision only
    do: Callable[[Context, Turn], Awaitable[datetime | None]]  # the next moment it needs the slot (None: events)
    decided: bool = True  # the pass reports the decision table's row (False: the step runs before any decision)
    # pure: the pods its action decides on, read into the facts before it runs (lifecycle.podreads)
    reads: Callable[[Context, Turn], PodReads] | None = None


async def _slot_gone(ctx: Context, turn: Turn) -> None:
    """The slot went without its finalizer (removed by hand, or never observed): nothing is left to power, so the
    claim ends completed/SlotNotFound now -- not failed/MachineGone a boot window later, its machine read "off"
    only because no slot says which Node is its."""
    await reversal.slot_gone(ctx, turn.facts, turn.owner)


async def _reverse(ctx: Context, turn: Turn) -> datetime | None:
    _, wake = await reversal.reverse(ctx, turn.facts, turn.owner)
    return wake


async def _shut_down(ctx: Context, turn: Turn) -> datetime | None:
    return await shutdown.shut_down_unwanted(ctx, turn.facts)


async def _nothing(ctx: Context, turn: Turn) -> None:
    return None


async def _launch(ctx: Context, turn: Turn) -> datetime | None:
    """Rows 3 and 4: "pending" only means no Job exists yet. A claim still pending after it waits for a shutdown
    Job (or its pod) of the slot to end: a pod's end is not watched, so it is polled."""
    facts = turn.facts
    claim = await launch.launch(ctx, facts, turn.owner)
    if claim_phase(claim) != ClaimPhase.PENDING:
        return None
    return shutdown.quiet(ctx, facts) or facts.now + ctx.settings.job_poll_interval


async def _monitor_boot(ctx: Context, turn: Turn) -> datetime | None:
    return (await bootmonitor.monitor(ctx, turn.facts, turn.owner)).wake


async def _keep_ready(ctx: Context, turn: Turn) -> datetime | None:
    """Rows 6, 7, 8: a ready claim's deadline healed, its machine watched (MachineGone), and its gate re-opened
    when the table says so and the claim is still ready after those (the autoscaler's marks stay)."""
    facts = turn.facts
    claim = await deadlines.heal_ready(ctx, turn.owner)
    claim, expires = await machinegone.tick(ctx, facts, claim)
    if turn.decision.action == Action.GATE and claim_phase(claim) == ClaimPhase.READY and facts.node is not None:
        await gate.open_gate(ctx, facts.node, facts.slot_name, boot=False)
    return expires


# In this order: the first step whose `when` holds is the owner's action of this pass.
OWNER_STEPS: tuple[OwnerStep, ...] = (
    OwnerStep("slot gone under its claim", lambda t: t.facts.slot is None
              and t.owner_in(ClaimPhase.BOOTING, ClaimPhase.READY), _slot_gone, decided=False),
    OwnerStep("reverse or complete", lambda t: t.decision.action in (Action.REVERSE, Action.COMPLETE)
              and t.owner is not None, _reverse),
    OwnerStep("shut the unwanted machine down", lambda t: t.decision.action == Action.SHUTDOWN, _shut_down),
    OwnerStep("no owner", lambda t: t.owner is None, _nothing),
    OwnerStep("launch", lambda t: t.owner_in(ClaimPhase.PENDING), _launch,
              reads=lambda ctx, t: launch.pod_reads(ctx, t.facts, t.owner)),
    OwnerStep("monitor the boot", lambda t: t.owner_in(ClaimPhase.BOOTING), _monitor_boot,
              reads=lambda ctx, t: bootmonitor.pod_reads(t.facts, t.owner)),
    OwnerStep("keep a ready claim", lambda t: True, _keep_ready),
)


def first_step(turn: Turn) -> OwnerStep:
    """The owner's action for these facts (the last step always applies)."""
    return next(step for step in OWNER_STEPS if step.when(turn))


async def act(ctx: Context, facts: Facts) -> tuple[datetime | None, int | None]:
    """Run the first owner step that applies, on these facts with the pods it declared read (`reads`); its
    wake-up and the decision table's row it came from."""
    turn = Turn(facts)
    step = first_step(turn)
    if step.reads is not None:
        turn = Turn(await podreads.load(ctx, facts, step.reads(ctx, turn)))
    wake = await step.do(ctx, turn)
    return wake, turn.decision.row if step.decided else None
