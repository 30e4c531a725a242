"""A slot refused because its machine is another slot's (model.identity): said on both slots, and no Job fired.

The second slot to find a Node (reason Conflict), or to declare another slot's providerID or node name
(DuplicateProviderID, DuplicateNodeName), never acts on the machine: its Node is not observed for it
(lifecycle.facts), and a claim on it waits pending -- no startup Job powers anything on -- until the
slot is fixed or the claim's deadline passes (lifecycle.launch). A conflict is announced once, when the
refused slot's NodeAccepted condition is written: a Warning Event on the refused slot and one on the
slot that keeps the Node, so the person looking at either finds the other.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster.lifecycle import slotevents
from homecluster.lifecycle.context import Context
from homecluster.lifecycle.facts import Facts
from homecluster.model.boundary import slot_node_name, slot_provider_id
from homecluster.model.identity import ANOTHER_SLOTS_MACHINE, CONFLICT
from homecluster.model.objects import name_of, uid_of

Obj = Mapping[str, Any]
REASON = "NodeConflict"  # the Events' reason


def holds(facts: Facts) -> bool:
    """The slot's machine is another slot's: nothing may be fired for this slot."""
    return facts.refusal is not None and facts.refusal.reason in ANOTHER_SLOTS_MACHINE


def keeper_text(refused: Obj, node: str) -> str:
    """The Event on the slot that keeps the Node, naming the slot that was refused and what it declares."""
    return (f'slot "{name_of(refused)}" (created later; spec.providerID "{slot_provider_id(refused)}", spec.nodeName '
            f'"{slot_node_name(refused)}") also finds this slot\'s Node "{node}"; this slot keeps it, and '
            f'"{name_of(refused)}" observes nothing and fires no Job until one of the two is fixed')


async def announce(ctx: Context, facts: Facts) -> None:
    """Post the two Warning Events of a Conflict (once each: the Event names derive from both slots' uids)."""
    refusal = facts.refusal
    if refusal is None or refusal.reason != CONFLICT or facts.slot is None:
        return
    ctx.log.warning("%s", refusal.message)
    keeper = ctx.store.slot(refusal.keeper)
    key = f"conflict/{refusal.node}/{uid_of(keeper)}"
    await slotevents.post(ctx, facts.slot, REASON, refusal.message.split(": ", 1)[1], key=key, warning=True)
    if keeper is not None:
        await slotevents.post(ctx, keeper, REASON, keeper_text(facts.slot, refusal.node),
                              key=f"conflict/{refusal.node}/{uid_of(facts.slot)}",
                              warning=True)
