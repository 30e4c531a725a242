"""The sweep: every kind listed again, what the store missed taken in, what is gone dropped.

kopf starts each watch stream with a list of its own and sends no DELETED for what went before it (at the
operator's start, after its own list; again after a 410 Gone), so an object deleted between two lists stays in
the store: a ghost. Issue 23's fault campaign found two: a startup Job deleted just after a restart held a claim
Terminating for good (seed 7000), and a deleted claim was still held, and patched, 12 s later (seed 7018).

Every `job_poll_interval` (the specification's 30 s Job monitor poll, which the Jobs' list is) the sweep lists
the Groups, slots, claims, Nodes and the lifecycle Jobs, takes in each object newer than the store's copy and
drops each one held that the list shows gone (kube.store.forget_unlisted: absent and not newer than the list),
queueing the slots it concerned. Every replica sweeps, leader or not: a follower's cache answers admission, and a
ghost claim there would refuse a new claim for its slot. A failed list is said and left to the next sweep; the
other kinds go on; nothing ends the loop but its cancellation.
"""
from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from homecluster.kube import client as kube
from homecluster.kube.store import KINDS
from homecluster.model.objects import name_of


def kubectl_name(kind: kube.Resource) -> str:
    """The kind as kubectl names it: plural.group, or the plural alone for the core group (a slot and a Node are
    both `nodes`: nodes.infra.homecluster.dev tells them apart)."""
    return f"{kind.plural}.{kind.group}" if kind.group else kind.plural


class Sweep:
    """`lists(kind)` lists one kind ((items, resourceVersion)); `ingest` takes one object in as a watch event
    would; `queue(slot)` asks for a pass."""

    def __init__(self, ctx: Any, lists: Callable[[kube.Resource], Awaitable[tuple[list[dict], str]]],
                 ingest: Callable[[kube.Resource, Mapping[str, Any]], None], queue: Callable[[str], None]) -> None:
        self.ctx, self.lists, self.ingest, self.queue = ctx, lists, ingest, queue

    async def once(self) -> None:
        """One sweep of every kind."""
        for kind in KINDS:
            try:
                items, listed_at = await self.lists(kind)
            except kube.READ_FAILURES as exc:
                self.ctx.log.warning("sweep: could not list the %s (%s); the next sweep lists again",
                                     kubectl_name(kind), exc)
                continue
            for item in items:
                self.ingest(kind, item)
            for obj in self.ctx.store.forget_unlisted(kind, (name_of(i) for i in items), listed_at):
                self.ctx.log.info("%s %s is gone (no watch event said so; a list found it)", kubectl_name(kind),
                                  name_of(obj))
                for slot in self.ctx.store.slots_for(kind, obj):
                    self.queue(slot)

    async def forever(self) -> None:
        """Sweep every job_poll_interval until cancelled; a sweep that raises is logged, the next one runs."""
        interval = max(self.ctx.settings.job_poll_interval.total_seconds(), 0.5)
        while True:
            await asyncio.sleep(interval)
            try:
                await self.once()
            except asyncio.CancelledError:
                raise
            except Exception:  # never a dead sweep: say it, sweep again next time
                self.ctx.log.exception("sweep failed; the next one runs in %.0fs", interval)
