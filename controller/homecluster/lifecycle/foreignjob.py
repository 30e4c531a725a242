"""A Job of the name a shutdown needs exists and is someone else's (lifecycle.jobio.ForeignJob): said on the slot.

It is never adopted (its outcome is not ours to read) and never deleted (it may be a person's). The
unwanted-machine shutdown has no claim to carry a condition, so the refusal is a Warning Event on the
slot (the Node CR), naming the Job and its owner; the pass looks again later instead of failing, so it
is not a retry-as-bug loop with a traceback. Deterministic Event name: said once per Job name.
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

Obj = Mapping[str, Any]
REASON = "ForeignJob"


async def report_on_slot(ctx: Context, slot: Obj, job_name: str, text: str) -> None:
    """Post (once) a Warning Event on the slot; a failure to post is logged, never fails the pass."""
    slot_name = name_of(slot)
    ctx.log.warning('slot "%s": %s', slot_name, text)
    digest = hashlib.sha256(f"{dig(slot, 'metadata', 'uid')}/{job_name}/{REASON}".encode()).hexdigest()[:10]
    stamp = format_time(ctx.now())
    body = {
        "apiVersion": "v1", "kind": "Event",
        "metadata": {"name": f"{slot_name[:200]}.{digest}", "namespace": EVENTS_NAMESPACE},
        "involvedObject": {"apiVersion": names.GROUP_VERSION, "kind": names.SLOT_KIND, "name": slot_name,
                           "uid": dig(slot, "metadata", "uid"),
                           "resourceVersion": dig(slot, "metadata", "resourceVersion")},
        "reason": REASON, "type": "Warning",
        "message": f'slot "{slot_name}": the unwanted machine\'s shutdown was not fired: {text}',
        "source": {"component": "homecluster-controller"}, "reportingComponent": "homecluster-controller",
        "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1,
    }
    try:
        await ctx.client.create(kube.EVENTS, body, namespace=EVENTS_NAMESPACE)
    except kube.AlreadyExists:
        pass
    except (kube.ApiError, OSError) as exc:
        ctx.log.warning('slot "%s": could not post the %s event: %s', slot_name, REASON, exc)
