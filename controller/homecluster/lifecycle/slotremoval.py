"""A slot removed lets its machine go first (the rule and its reasons: model.slotremoval).

The only writer of the slot's metadata.finalizers entry names.SLOT_FINALIZER, and nothing else of the slot's
main resource: a merge patch of metadata.finalizers, conditional on the slot's resourceVersion, so spec is
never touched and a GitOps controller sees no drift. Two steps of the slot pass (lifecycle.slotpass):

- `guard` (early, before the seed and the launch): a slot not being deleted gets the finalizer; a slot being
  deleted has its live claims deleted (each as `kubectl delete nodeclaim` would; an Event on the slot names
  them), and the pass stops: the claims' reversal runs in the passes that follow.
- `release` (late, after the owner's action and the slot status): once nothing holds the slot, the finalizer
  comes off (a `Removed` Event); past the shutdown bound with the machine still on, it comes off with a Warning
  `RemovedMachineOn` Event that says the machine may still be on and how to switch it off by hand.
"""
from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from homecluster import names
from homecluster.kube import client as kube
from homecluster.lifecycle import conditional, shutdown, slotevents
from homecluster.lifecycle.context import Context
from homecluster.lifecycle.facts import Facts, active
from homecluster.lifecycle.recorder import Recorder
from homecluster.model.objects import dig, finalizers_of, marked_for_deletion, name_of
from homecluster.model.shutdown import counter_from_claim, counter_from_slot
from homecluster.model.slotremoval import (Removal, RemovalFacts, exhausted, has_finalizer, removal, reversing,
                                           unreleased_claims)
from homecluster.logging import slot_log

Obj = Mapping[str, Any]
RELEASING, REMOVED, REMOVED_MACHINE_ON = "ReleasingClaim", "Removed", "RemovedMachineOn"
# uid -> when the API server last refused the slot's finalizer. A refusal that stays (an install whose RBAC
# predates the finalizer: 403 on every try) is tried again only after REFUSED_RETRY, never on every pass: a
# refused write still counts as a write, and a pass that wrote is run again at once (operator.controller).
_REFUSED: dict[str, datetime] = {}
REFUSED_RETRY = timedelta(minutes=5)


def removal_facts(ctx: Context, facts: Facts) -> RemovalFacts:
    """The rule's inputs from one slot's facts."""
    slot = facts.slot
    owner = facts.view.owner
    counter = counter_from_claim(owner) if owner is not None else counter_from_slot(slot or {})
    return RemovalFacts(
        deleting=marked_for_deletion(slot), finalized=has_finalizer(slot, names.SLOT_FINALIZER),
        unreleased=unreleased_claims(facts.claims), reversing=reversing(facts.claims),
        jobs_running=any(active(j) for j in facts.jobs), machine_on=facts.on,
        quiet=shutdown.quiet(ctx, facts) is None, exhausted=exhausted(counter, ctx.settings.shutdown_attempt_limit))


async def _set_finalizer(ctx: Context, slot: Obj, present: bool) -> Obj:
    current = list(finalizers_of(slot))
    wanted = [f for f in current if f != names.SLOT_FINALIZER] + ([names.SLOT_FINALIZER] if present else [])
    try:
        return await conditional.patch(ctx, kube.SLOTS, slot, {"metadata": {"finalizers": wanted or None}})
    except kube.NotFound:  # released and deleted meanwhile
        return slot


async def _add_finalizer(ctx: Context, slot: Obj, now: datetime) -> datetime | None:
    """Add the finalizer; a refusal other than a Conflict (an install whose RBAC predates it: 403) is said once,
    never stops the pass, and is tried again REFUSED_RETRY later (the moment returned) -- the slot meanwhile
    works as before, only without the wait on its delete."""
    uid = str(dig(slot, "metadata", "uid") or name_of(slot))
    refused_at = _REFUSED.get(uid)
    if refused_at is not None and now < refused_at + REFUSED_RETRY:
        return refused_at + REFUSED_RETRY
    try:
        await _set_finalizer(ctx, slot, True)
    except kube.Conflict:
        raise
    except kube.ApiError as exc:
        _REFUSED[uid] = now
        if refused_at is None:
            fix = ("grant patch on nodes.infra.homecluster.dev (config/rbac/role.yaml)" if exc.status == 403
                   else f"the operator tries again every {int(REFUSED_RETRY.total_seconds() // 60)} minutes")
            slot_log(ctx.log, name_of(slot)).warning(
                "cannot add the finalizer %s (%s): a delete of this slot will not wait for its machine to be let go; "
                "%s", names.SLOT_FINALIZER, exc, fix)
        return now + REFUSED_RETRY
    _REFUSED.pop(uid, None)
    return None


async def guard(ctx: Context, facts: Facts) -> tuple[bool, datetime | None]:
    """Add the finalizer, or delete the live claims of a slot being removed. (stop, wake): stop the pass (it
    deleted claims the later steps would otherwise launch or seed); wake: when to try a refused finalizer again."""
    slot = facts.slot
    if slot is None:
        return False, None
    decision = removal(removal_facts(ctx, facts))
    if decision == Removal.FINALIZE:
        return False, await _add_finalizer(ctx, slot, facts.now)
    if decision != Removal.RELEASE_CLAIMS:
        return False, None
    for claim in facts.claims:
        if name_of(claim) not in unreleased_claims([claim]):
            continue
        text = (f'slot "{facts.slot_name}" is being removed (it is marked for deletion): its claim is deleted, '
                f"so its machine is released (drained and powered off) before the slot goes")
        await Recorder(ctx).event(claim, "SlotRemoved", text, key="slot-removed")
        try:
            result = await ctx.client.delete(kube.CLAIMS, name_of(claim), propagation="Background",
                                             resource_version=dig(claim, "metadata", "resourceVersion"))
        except kube.NotFound:
            result = None
        ctx.store.apply(kube.CLAIMS, result if result is not None else claim, deleted=result is None)
        slot_log(ctx.log, facts.slot_name).info('being removed; deleted its live claim %s', name_of(claim))
        await slotevents.post(ctx, slot, RELEASING,
                              f'being removed (marked for deletion): deleted its live claim "{name_of(claim)}"; the '
                              f"slot goes once its machine is off", key=f"releasing/{dig(claim, 'metadata', 'uid')}")
    return True, None


async def release(ctx: Context, facts: Facts) -> datetime | None:
    """Remove the finalizer of a slot being removed once nothing holds it; returns when to look again."""
    slot = facts.slot
    if slot is None:
        return None
    decision = removal(removal_facts(ctx, facts))
    if decision == Removal.WAIT:
        return shutdown.quiet(ctx, facts)  # the grace after a shutdown's end; events wake the rest
    if decision == Removal.RELEASE:
        await slotevents.post(ctx, slot, REMOVED, "no live claim, no Job running and the machine observed off: "
                              "the slot's finalizer is released and the slot goes", key="removed")
        slot_log(ctx.log, facts.slot_name).info('removed; its machine is off, the finalizer is released')
        await _set_finalizer(ctx, slot, False)
    elif decision == Removal.GIVE_UP:
        text = (f"the machine may still be on: {ctx.settings.shutdown_attempt_limit} shutdown Jobs did not power it "
                f"off, so the slot's finalizer is released anyway and nothing manages this machine any more; "
                f"switch it off by hand (its BMC, or `ansible-playbook -i machines.yml homecluster.infra.power "
                f"-e slot={facts.slot_name} -e state=powered_off` with an inventory that describes it: "
                f"docs/collection.md)")
        await slotevents.post(ctx, slot, REMOVED_MACHINE_ON, text, key="removed-machine-on", warning=True)
        slot_log(ctx.log, facts.slot_name).warning('removed with its machine still on: %s', text)
        await _set_finalizer(ctx, slot, False)
    return None
