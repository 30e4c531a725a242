"""One pass over one slot: an ordered list of steps, each run on fresh Facts from the cache.

A step performs what the model names for its rule and returns a StepResult: carry on (with the moment it
next needs the slot, if any) or stop the pass. The order and the reason for each place in it are in
docs/controller.md, "One slot pass". A pass that wrote is re-run at once (the controller's work queue),
so a chain of moves needs no events; the pass returns the earliest moment any step asked for.
"""
from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from homecluster.kube import client as kube
from homecluster.lifecycle import (bootmonitor, collection, deadlines, finalizer, gate, launch, machinegone, reversal,
                                   shutdown, slotremoval, slotstatus, supersede)
from homecluster.lifecycle.context import Context
from homecluster.lifecycle.facts import Facts
from homecluster.lifecycle.recorder import Recorder
from homecluster.model.attempts import last_claim_change, needs_seed, newest_attempt
from homecluster.model.decide import Action, decide
from homecluster.model.objects import claim_phase, marked_for_deletion
from homecluster.model.phases import ClaimPhase, is_live


@dataclass(frozen=True)
class StepResult:
    wake: datetime | None = None  # the next moment this step needs the slot looked at (None: only events)
    stop: bool = False  # the step wrote what the later steps read: end the pass here, it re-runs at once
    row: int | None = None  # the decision table row (docs/model.md) the owner's action came from


GO_ON = StepResult()
STOP = StepResult(stop=True)


@dataclass(frozen=True)
class PassResult:
    wake: datetime | None  # the next moment this slot needs a pass (None: only events)
    wrote: bool  # the pass changed something: run it again at once
    row: int | None = None  # the decision table row the owner's action came from


async def _last_claim_first(ctx: Context, facts: Facts) -> StepResult:
    """A claim that ended in an earlier pass gets its digest on the slot before the seed step reads it."""
    newest = newest_attempt(facts.claims)
    if newest is not None and facts.slot is not None and last_claim_change(facts.slot, newest, facts.now) is not None:
        await slotstatus.observe(ctx, facts)
    return GO_ON


async def _removal_guard(ctx: Context, facts: Facts) -> StepResult:
    """The slot's finalizer on; a slot being removed has its live claims deleted before anything launches."""
    stop, wake = await slotremoval.guard(ctx, facts)
    return STOP if stop else StepResult(wake=wake)


async def _seed(ctx: Context, facts: Facts) -> StepResult:
    """A live claim not yet stamped gets status.attempt and nothing else happens in this pass."""
    rec = Recorder(ctx)
    seeded = False
    for claim in facts.claims:
        if is_live(claim_phase(claim)) and needs_seed(claim) and not marked_for_deletion(claim):
            await rec.seed(claim, facts.slot)
            seeded = True
    if not seeded:
        return GO_ON
    await slotstatus.observe(ctx, facts.again(ctx.store))  # the slot reports pending before anything is bought
    return STOP


async def _supersede(ctx: Context, facts: Facts) -> StepResult:
    if facts.view.superseded:
        await supersede.supersede(ctx, facts)
    return GO_ON


async def _owner(ctx: Context, facts: Facts) -> StepResult:
    """The owner's (or the unwanted machine's) action; a refused action still leaves the slot status current.

    A refused action (a Job create refused by a quota or an admission policy, an API error) goes to the
    controller's retry policy, which backs off; the slot status is written first from what is observed,
    so the display never freezes on a stale phase. A conflict or a vanished object re-runs the pass at once.
    """
    try:
        wake, row = await _act(ctx, facts)
    except (kube.ApiError, OSError, asyncio.TimeoutError) as exc:
        if not isinstance(exc, (kube.Conflict, kube.NotFound)):
            with contextlib.suppress(kube.ApiError, OSError, asyncio.TimeoutError):
                await slotstatus.observe(ctx, facts.again(ctx.store))
        raise
    return StepResult(wake=wake, row=row)


async def _act(ctx: Context, facts: Facts) -> tuple[datetime | None, int | None]:
    view = facts.view
    if facts.slot is None and view.owner is not None and claim_phase(view.owner) in (ClaimPhase.BOOTING,
                                                                                         ClaimPhase.READY):
        # the slot went without its finalizer (removed by hand, or never observed): nothing is left to power, so
        # the claim ends completed/SlotNotFound now -- not failed/MachineGone a boot window later, its machine
        # read "off" only because no slot says which Node is its
        await reversal.slot_gone(ctx, facts, view.owner)
        return None, None
    decision = decide(view.deciding_phase, facts.power, facts.observation.usable, deleting=view.owner_deleting)
    owner = view.owner
    action = decision.action
    if action in (Action.REVERSE, Action.COMPLETE) and owner is not None:
        _, wake = await reversal.reverse(ctx, facts, owner)
        return wake, decision.row
    if action == Action.SHUTDOWN:
        return await shutdown.shut_down_unwanted(ctx, facts), decision.row
    if owner is None:
        return None, decision.row
    phase = claim_phase(owner)
    if phase == ClaimPhase.PENDING:  # rows 3 and 4: "pending" only means no Job exists yet
        claim = await launch.launch(ctx, facts, owner)
        held = claim_phase(claim) == ClaimPhase.PENDING  # waiting for a shutdown Job (or its pod) of the slot to end
        wake = (shutdown.quiet(ctx, facts) or facts.now + ctx.settings.job_poll_interval) if held else None
        return wake, decision.row  # (a pod's end is not watched: polled)
    if phase == ClaimPhase.BOOTING:
        step = await bootmonitor.monitor(ctx, facts, owner)
        return step.wake, decision.row
    # ready: rows 6, 7, 8
    claim = await deadlines.heal_ready(ctx, owner)
    claim, expires = await machinegone.tick(ctx, facts, claim)
    if action == Action.GATE and claim_phase(claim) == ClaimPhase.READY and facts.node is not None:
        await gate.open_gate(ctx, facts.node, facts.slot_name, boot=False)  # the autoscaler's marks stay
    return expires, decision.row


async def _slot_status(ctx: Context, facts: Facts) -> StepResult:
    await slotstatus.observe(ctx, facts)
    return GO_ON


async def _release_ended(ctx: Context, facts: Facts) -> StepResult:
    await finalizer.release_ended(ctx, facts)
    return GO_ON


async def _release_slot(ctx: Context, facts: Facts) -> StepResult:
    return StepResult(wake=await slotremoval.release(ctx, facts))


async def _collect(ctx: Context, facts: Facts) -> StepResult:
    return StepResult(wake=await collection.collect(ctx, facts))


Step = Callable[[Context, Facts], Awaitable[StepResult]]

# In this order (docs/controller.md, "One slot pass"): each step reads the facts the earlier ones left.
STEPS: tuple[tuple[str, Step], ...] = (
    ("last claim first", _last_claim_first),
    ("slot removal guard", _removal_guard),
    ("seed", _seed),
    ("supersede", _supersede),
    ("owner's action", _owner),
    ("slot status", _slot_status),
    ("release ended claims", _release_ended),
    ("release a removed slot", _release_slot),
    ("collection", _collect),
)


async def run_pass(ctx: Context, slot_name: str) -> PassResult:
    writes_before = ctx.client.writes
    now = ctx.now()  # one moment for the whole pass
    wakes: list[datetime] = []
    row: int | None = None
    for _name, step in STEPS:
        result = await step(ctx, Facts.gather(ctx.store, slot_name, now))
        if result.stop:
            return PassResult(None, True)
        if result.wake is not None:
            wakes.append(result.wake)
        row = result.row if result.row is not None else row
    return PassResult(min(wakes) if wakes else None, ctx.client.writes != writes_before, row)
