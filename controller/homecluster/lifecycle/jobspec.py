"""A shutdown Job that cannot be built (homecluster.jobs.JobSpecError): said on the slot, once per distinct error.

The builders refuse a slot's or Group's spec, or the operator's settings, that a Job cannot be built from (bad
power block, a Secret reference without a name, a refused Job override...); the error's text names the object,
the field and the fix. The launch path fails the claim with it (StartupJobFailed). A shutdown has nothing to
fail -- the machine must still go off, and a slot being removed waits for that behind its finalizer -- so the
refusal is a Warning Event on the slot (the Node CR, where the admin looks at a stuck removal), and the step
looks again after job_poll_interval, writing nothing meanwhile: a fix of the slot wakes it at once (a watch
event), a fix of the settings at the next look.

Said once per distinct error: the Event's name is derived from the slot's uid and the error's text (a retried
post meets AlreadyExists), and the operator's memory of posted Events (Context.posted, bounded) keeps a pass that
meets the same error again from writing or logging -- a pass that wrote is run again at once, so a post on every
pass would be a hot loop of Event creates.
"""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from typing import Any

from homecluster import names
from homecluster.lifecycle import slotevents
from homecluster.lifecycle.context import Context
from homecluster.model.objects import marked_for_deletion, name_of
from homecluster.logging import slot_log

Obj = Mapping[str, Any]
REASON = "ShutdownJobInvalid"
_TEXT = 900  # the error's text as it goes into the Event: bounded (it quotes spec values)


def refusal_text(ctx: Context, slot: Obj, claim: str | None, error: str) -> str:
    """What the Event says: which shutdown, the builder's words (field and fix), and what waits meanwhile."""
    whose = f'claim "{claim}"' if claim else "the unwanted machine"
    said = " ".join(error.split())[:_TEXT]
    text = (f"cannot build the shutdown Job of {whose}: {said}. The machine is not powered off until this is "
            f"fixed (the operator tries again every {int(ctx.settings.job_poll_interval.total_seconds())} s)")
    if marked_for_deletion(slot):
        text += (f"; the slot's removal waits for it. To let the slot go with its machine possibly on, remove the "
                 f"finalizer {names.SLOT_FINALIZER} from it by hand")
    return text


async def report(ctx: Context, slot: Obj, claim: str | None, error: Exception) -> None:
    """Post the Warning Event once per distinct error (and log it once); never fails the pass."""
    text = refusal_text(ctx, slot, claim, str(error))
    key = f"jobspec/{hashlib.sha256(text.encode()).hexdigest()[:16]}"
    if ctx.posted(slotevents.event_name(slot, REASON, key)):
        return
    slot_log(ctx.log, name_of(slot)).warning('%s', text)
    await slotevents.post(ctx, slot, REASON, text, key=key, warning=True)
