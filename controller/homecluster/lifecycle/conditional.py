"""A write conditional on the resourceVersion we hold, and what a refusal of it teaches the store.

Every write of a claim or a slot carries the resourceVersion of the copy in the store, so it lands only on
the object the pass decided from. A 409 Conflict means the store is behind the server. The store catches up
from the watch, normally a moment later; but a copy held back for good (an event that never came, or a late
write result) made the pass send the same stale resourceVersion every retry, and a claim stayed unreleased
(seen on the real control plane under load: 207 refused writes over 15 minutes). So on a Conflict the object
is read afresh and stored (the store keeps whichever copy is newer), then the Conflict goes on to the worker,
which runs the pass again from what the server holds. The read is a list of that one name (a field selector):
the operator's role grants list and watch on our kinds, never get (config/rbac/role.yaml).

A 404 NotFound is taught the same way: the object was deleted and its DELETED event never came (it fell between
two watch streams: chaos seed 7018 patched a claim 12 s after its deletion). The list of its name shows it gone,
and the store drops it at once instead of at the next poll (kube.store.forget_unlisted).
"""
from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from homecluster.kube import client as kube
from homecluster.lifecycle.context import Context
from homecluster.model.objects import name_of, resource_version


async def patch(ctx: Context, res: kube.Resource, held: Mapping[str, Any], body: dict[str, Any],
                subresource: str | None = None) -> dict:
    """Patch `held` (conditional on its resourceVersion); store and return the result."""
    rv = resource_version(held)
    body = {**body, "metadata": {**body.get("metadata", {}), "resourceVersion": rv}}
    try:
        result = await ctx.client.patch(res, name_of(held), body, subresource=subresource)
    except (kube.Conflict, kube.NotFound) as exc:
        await refresh(ctx, res, name_of(held), after="a conflict" if isinstance(exc, kube.Conflict) else "a 404")
        raise
    ctx.store.apply(res, result)
    return result


async def refresh(ctx: Context, res: kube.Resource, name: str, *, after: str) -> None:
    """Read one object by name (list + field selector) into the store, or drop it there when the list shows it
    gone; a failed read is logged, not raised: the watch still brings the object, and the pass is retried anyway.
    `after` says what made the read necessary, in that log line ("a conflict", "a 404")."""
    try:
        items, listed_at = await ctx.client.list(res, field_selector=f"metadata.name={name}")
    except kube.READ_FAILURES as exc:
        ctx.log.warning("could not read %s %s afresh after %s (%s); the watch will bring it",
                        res.plural, name, after, exc)
        return
    for item in items:
        if name_of(item) == name:
            ctx.store.apply(res, item)
    ctx.store.forget_unlisted(res, (name_of(i) for i in items), listed_at, among=[name])
