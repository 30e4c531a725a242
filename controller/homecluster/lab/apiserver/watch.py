"""Watch streams: newline-delimited JSON events over a chunked response, as the real server sends them.

- resourceVersion unset or "0": ADDED for every current object first, then changes.
- resourceVersion N: every change after N from the history; if N is older than the history, one ERROR
  event carrying a 410 Expired Status (HTTP stays 200, as on the real server) and the stream ends.
- Selectors apply to old and new state: an object that stops matching is sent as DELETED, one that starts
  matching as ADDED.
- allowWatchBookmarks: BOOKMARK events every `bookmark_interval` seconds; timeoutSeconds ends the stream.
- Fault injection: faults.drop_watches ends streams, faults.delay_watches delivers events late.
"""
from __future__ import annotations

import asyncio
import json
import time
from typing import Any, Callable

from aiohttp import web

from . import errors, objects
from .faults import Faults
from .resources import ResourceType
from .selectors import FieldRequirement, LabelRequirement, fields_match, labels_match
from .store import Event, Store, TooOld


def _matches(obj: dict[str, Any] | None, labels: list[LabelRequirement], fields: list[FieldRequirement],
             namespace: str | None) -> bool:
    if obj is None:
        return False
    if namespace is not None and obj["metadata"].get("namespace") != namespace:
        return False
    return labels_match(labels, obj) and fields_match(fields, obj)


def translate(event: Event, labels: list[LabelRequirement], fields: list[FieldRequirement],
              namespace: str | None) -> str | None:
    """The event type this watcher sees for a store event, or None when it sees nothing."""
    new_ok = event.type != "DELETED" and _matches(event.obj, labels, fields, namespace)
    old_ok = _matches(event.old, labels, fields, namespace) if event.old is not None else False
    if event.type == "DELETED":
        return "DELETED" if _matches(event.obj, labels, fields, namespace) else None
    if new_ok and old_ok:
        return "MODIFIED"
    if new_ok:
        return "ADDED"
    if old_ok:
        return "DELETED"
    return None


async def serve(request: web.Request, store: Store, faults: Faults, rt: ResourceType, version: str,
                namespace: str | None, labels: list[LabelRequirement], fields: list[FieldRequirement],
                bookmark_interval: float, render: Callable[[dict[str, Any]], dict[str, Any]]) -> web.StreamResponse:
    q = request.query
    bookmarks = q.get("allowWatchBookmarks") in ("true", "1")
    timeout = float(q["timeoutSeconds"]) if q.get("timeoutSeconds") else None
    deadline = time.monotonic() + timeout if timeout else None
    rv_param = q.get("resourceVersion", "")
    watcher = store.subscribe(rt.key, namespace)
    drop_gen = faults.drop_generation(rt.plural)
    resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json",
                                                   "Cache-Control": "no-cache, private"})
    resp.enable_chunked_encoding()
    await resp.prepare(request)

    async def send(kind: str, obj: dict[str, Any]) -> None:
        line = json.dumps({"type": kind, "object": obj}, separators=(",", ":")) + "\n"
        await resp.write(line.encode())

    try:
        initial: list[tuple[str, dict[str, Any]]] = []
        if rv_param in ("", "0"):
            start_rv = store.rv
            for obj in store.list(rt.key, namespace):
                if _matches(obj, labels, fields, namespace):
                    initial.append(("ADDED", obj))
        else:
            try:
                since = int(rv_param)
            except ValueError:
                await send("ERROR", errors.bad_request(f'invalid resource version "{rv_param}"').status())
                return resp
            try:
                events = store.events_since(rt.key, since)
            except TooOld as exc:
                await send("ERROR", errors.gone(str(exc)).status())
                return resp
            start_rv = max([since] + [e.rv for e in events])
            for e in events:
                kind = translate(e, labels, fields, namespace)
                if kind:
                    initial.append((kind, e.obj))
        for kind, obj in initial:
            await send(kind, render(objects.for_version(obj, rt, version)))
        last_bookmark = time.monotonic()
        while True:
            now = time.monotonic()
            if deadline is not None and now >= deadline:
                break
            if faults.drop_generation(rt.plural) != drop_gen:
                break
            if request.transport is None or request.transport.is_closing():
                break  # the client went away: end now rather than at the next write
            wait = 0.1
            if deadline is not None:
                wait = min(wait, deadline - now)
            try:
                event = await asyncio.wait_for(watcher.queue.get(), timeout=max(wait, 0.01))
            except asyncio.TimeoutError:
                event = None
            if event is not None and event.rv > start_rv:
                kind = translate(event, labels, fields, namespace)
                if kind:
                    if faults.watch_delay:
                        await asyncio.sleep(faults.watch_delay)
                    await send(kind, render(objects.for_version(event.obj, rt, version)))
            if bookmarks and time.monotonic() - last_bookmark >= bookmark_interval:
                last_bookmark = time.monotonic()
                await send("BOOKMARK", {"kind": rt.kind, "apiVersion": rt.api_version(version),
                                        "metadata": {"resourceVersion": str(store.rv)}})
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        store.unsubscribe(watcher)
    return resp
