"""A Job of the name a shutdown needs exists and is someone else's (lifecycle.jobio.ForeignJob): said on the slot.

It is never adopted (its outcome is not ours to read) and never deleted (it may be a person's). The
unwanted-machine shutdown has no claim to carry a condition, so the refusal is a Warning Event on the
slot (the Node CR), naming the Job and its owner; the pass looks again later instead of failing, so it
is not a retry-as-bug loop with a traceback. Deterministic Event name: said once per Job name.
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster.lifecycle import slotevents
from homecluster.lifecycle.context import Context
from homecluster.model.objects import name_of
from homecluster.logging import slot_log

Obj = Mapping[str, Any]
REASON = "ForeignJob"


async def report_on_slot(ctx: Context, slot: Obj, job_name: str, text: str) -> None:
    """Post (once) a Warning Event on the slot; a failure to post is logged, never fails the pass."""
    slot_log(ctx.log, name_of(slot)).warning('%s', text)
    await slotevents.post(ctx, slot, REASON, f"the unwanted machine's shutdown was not fired: {text}", key=job_name,
                          warning=True)
