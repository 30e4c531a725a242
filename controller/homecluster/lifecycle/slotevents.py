"""core/v1 Events about a slot (infra.homecluster.dev Node): what people ask of a machine.

Posted where the observation changes, never on every pass: the observer posts PowerObservedOn /
PowerObservedOff after the write that changed status.powerState (a steady pool makes no write, so no
Event), and the shutdown path posts ShutdownHeldOff when the hold-off after the bound is measured from
the end of the Job that reached it (written once). `slot_event_text` is pure; the Event's name is
derived from the slot's uid and a key naming the change, so a retried post lands once, and the operator posts
a name once (Context.posted): a pass that meets the same situation again writes nothing.
Events of cluster-scoped objects live in the `default` namespace, like the claims' (docs/events.md).
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from homecluster import names
from homecluster.model.objects import dig, name_of
from homecluster.model.timestamps import format_time
from homecluster.kube import client as kube
from homecluster.lifecycle.context import EVENTS_NAMESPACE, Context
from homecluster.logging import slot_log

Obj = Mapping[str, Any]

POWER_ON, POWER_OFF, HELD_OFF = "PowerObservedOn", "PowerObservedOff", "ShutdownHeldOff"


def power_event(before: Any, after: Any) -> tuple[str, str] | None:
    """(reason, text) when status.powerState changed between two known values or from none to one."""
    if after not in ("on", "off") or before == after:
        return None
    if after == "on":
        return POWER_ON, "the machine is observed on: its Kubernetes Node is Ready"
    return POWER_OFF, ("the machine is observed off: its Kubernetes Node is not Ready, or gone"
                       if before == "on" else "the machine is observed off")


def event_name(slot: Obj, reason: str, key: str) -> str:
    """The Event's name: derived from the slot's uid, the key and the reason, so a retried post lands once."""
    digest = hashlib.sha256(f"{dig(slot, 'metadata', 'uid')}/{key}/{reason}".encode()).hexdigest()[:10]
    return f"{name_of(slot)[:200]}.{digest}"


def event_body(slot: Obj, reason: str, text: str, key: str, now: str, *, warning: bool) -> dict:
    name = name_of(slot)
    return {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": event_name(slot, reason, key), "namespace": EVENTS_NAMESPACE},
        "involvedObject": {"apiVersion": names.GROUP_VERSION, "kind": names.SLOT_KIND, "name": name,
                           "uid": dig(slot, "metadata", "uid"),
                           "resourceVersion": dig(slot, "metadata", "resourceVersion")},
        "reason": reason, "message": f'slot "{name}": {text}', "type": "Warning" if warning else "Normal",
        "source": {"component": "homecluster-controller"}, "reportingComponent": "homecluster-controller",
        "firstTimestamp": now, "lastTimestamp": now, "count": 1,
    }


async def post(ctx: Context, slot: Obj, reason: str, text: str, *, key: str, warning: bool = False) -> None:
    """Post one Event about the slot. Events are for people: a failure is logged, never fails the pass."""
    body = event_body(slot, reason, text, key, format_time(ctx.now()), warning=warning)
    if ctx.posted(body["metadata"]["name"]):
        return
    try:
        await ctx.client.create(kube.EVENTS, body, namespace=EVENTS_NAMESPACE)
    except kube.AlreadyExists:
        pass
    except kube.CALL_FAILURES as exc:
        slot_log(ctx.log, name_of(slot)).warning('could not post the %s event: %s', reason, exc)
        return
    ctx.remember_post(body["metadata"]["name"])
