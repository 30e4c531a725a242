"""One pass over one slot: an ordered list of steps, each run on fresh Facts from the cache.

Each step says when it applies (a pure predicate over the Facts) and what it does; a step that does not apply
is passed over. The owner's action (step 4) is itself a table (lifecycle.owner.OWNER_STEPS), of which the
first that applies runs, so a walk of a pass is a walk of STEPS and OWNER_STEPS. Pods, which the cache does
not hold, are read into that step's Facts just before it acts, when its action can need them
(lifecycle.podreads): a failed read is handled like a failed action.
A step performs what the model names for its rule and returns a StepResult: carry on (with the moment it
next needs the slot, if any) or stop the pass. The order and the reason for each place in it are in
docs/controller.md, "One slot pass". A pass that wrote is re-run at once (the controller's work queue),
so a chain of moves needs no events; the pass returns the earliest moment any step asked for.
"""
from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime

from homecluster.kube import client as kube
from homecluster.lifecycle import attempts, collection, finalizer, owner, slotremoval, slotstatus, supersede
from homecluster.lifecycle.context import Context
from homecluster.lifecycle.facts import Facts


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
    await attempts.record_ended(ctx, facts)
    return GO_ON


async def _removal_guard(ctx: Context, facts: Facts) -> StepResult:
    """The slot's finalizer on; a slot being removed has its live claims deleted before anything launches."""
    stop, wake = await slotremoval.guard(ctx, facts)
    return STOP if stop else StepResult(wake=wake)


async def _seed(ctx: Context, facts: Facts) -> StepResult:
    """A live claim not yet stamped gets status.attempt and nothing else happens in this pass."""
    await attempts.seed(ctx, facts)
    return STOP


async def _supersede(ctx: Context, facts: Facts) -> StepResult:
    await supersede.supersede(ctx, facts)
    return GO_ON


async def _owner(ctx: Context, facts: Facts) -> StepResult:
    """The owner's (or the unwanted machine's) action (lifecycle.owner: the first of its steps that applies);
    a refused action still leaves the slot status current.

    A refused action (a Job create refused by a quota or an admission policy, an API error) goes to the
    controller's retry policy, which backs off; the slot status is written first from what is observed,
    so the display never freezes on a stale phase. A conflict or a vanished object re-runs the pass at once.
    """
    try:
        wake, row = await owner.act(ctx, facts)
    except kube.CALL_FAILURES as exc:
        if not isinstance(exc, (kube.Conflict, kube.NotFound)):
            with contextlib.suppress(*kube.CALL_FAILURES):
                await slotstatus.observe(ctx, facts.again(ctx.store))
        raise
    return StepResult(wake=wake, row=row)


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


def _always(facts: Facts) -> bool:
    return True


@dataclass(frozen=True)
class Step:
    name: str
    when: Callable[[Facts], bool]  # pure: whether the step has anything to do on these facts
    do: Callable[[Context, Facts], Awaitable[StepResult]]


# In this order (docs/controller.md, "One slot pass"): each step reads the facts the earlier ones left.
STEPS: tuple[Step, ...] = (
    Step("last claim first", attempts.ended_claim_unrecorded, _last_claim_first),
    Step("slot removal guard", _always, _removal_guard),
    Step("seed", lambda facts: bool(attempts.unseeded(facts)), _seed),
    Step("supersede", lambda facts: bool(facts.view.superseded), _supersede),
    Step("owner's action", _always, _owner),
    Step("slot status", _always, _slot_status),
    Step("release ended claims", _always, _release_ended),
    Step("release a removed slot", _always, _release_slot),
    Step("collection", _always, _collect),
)


async def run_pass(ctx: Context, slot_name: str) -> PassResult:
    writes_before = ctx.client.writes
    now = ctx.now()  # one moment for the whole pass
    wakes: list[datetime] = []
    row: int | None = None
    for step in STEPS:
        facts = Facts.gather(ctx.store, slot_name, now)
        if not step.when(facts):
            continue
        result = await step.do(ctx, facts)
        if result.stop:
            return PassResult(None, True)
        if result.wake is not None:
            wakes.append(result.wake)
        row = result.row if result.row is not None else row
    return PassResult(min(wakes) if wakes else None, ctx.client.writes != writes_before, row)
