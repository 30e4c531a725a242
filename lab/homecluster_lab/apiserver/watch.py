"""Watch streams: newline-delimited JSON events over a chunked response, as the real server sends them.

- resourceVersion unset or "0": ADDED for every current object first, then changes.
- resourceVersion N: every change after N from the history; if N is older than the history, one ERROR
  event carrying a 410 Expired Status (HTTP stays 200, as on the real server) and the stream ends.
- Selectors apply to old and new state: an object that stops matching is sent as DELETED, one that starts
  matching as ADDED.
- allowWatchBookmarks: BOOKMARK events every `bookmark_interval` seconds, carrying a resourceVersion this
  stream has fully delivered (never one beyond events still pending for it); timeoutSeconds ends the
  stream (EOF of the chunked body), and a write stalled on a client that stopped reading closes it.
- A stream more than the history's length behind its writers ends (as on a full watch buffer); the client
  resumes from the last resourceVersion it read.
- Fault injection: faults.drop_watches ends streams, faults.delay_watches delivers events late.
"""
from __future__ import annotations

import asyncio
import json
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from aiohttp import web

from . import errors, objects
from .faults import Faults
from .resources import ResourceType
from .selectors import FieldRequirement, LabelRequirement, fields_match, labels_match
from .store import Event, Store, TooOld, Watcher


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


# How long a stream may stay blocked writing to a client that does not read, past its timeoutSeconds,
# before the connection is closed (the client reconnects from the last resourceVersion it read).
STALLED_WRITE_GRACE = 30.0
BATCH = 500  # events taken and written at once


def bookmark_rv(sent_rv: int, store_rv: int, backlog: int, overflowed: bool) -> int:
    """The resourceVersion a BOOKMARK may claim: never one beyond an event still pending for the stream.

    `sent_rv` is the version up to which the stream has dealt with every event of its resource (sent it,
    or filtered it out). A client resumes from the last resourceVersion it read, so a bookmark beyond a
    pending event makes it skip that event for good -- a loaded lab lost Node events this way at the
    operator's reconnects. With nothing pending every event up to the store's version has been dealt with
    (the store hands events to watchers synchronously), so an idle stream still advances to `store_rv`.
    """
    if backlog == 0 and not overflowed:
        return max(sent_rv, store_rv)
    return sent_rv


@dataclass
class Start:
    """Where a stream starts: the events it sends first, and the resourceVersion they bring it to."""

    rv: int
    events: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    error: dict[str, Any] | None = None  # a Status sent as one ERROR event (the stream then ends)


def starting_point(store: Store, rt: ResourceType, rv_param: str, namespace: str | None,
                   labels: list[LabelRequirement], fields: list[FieldRequirement]) -> Start:
    if rv_param in ("", "0"):
        return Start(store.rv, [("ADDED", obj) for obj in store.list(rt.key, namespace)
                                if _matches(obj, labels, fields, namespace)])
    try:
        since = int(rv_param)
    except ValueError:
        return Start(0, error=errors.bad_request(f'invalid resource version "{rv_param}"').status())
    try:
        events = store.events_since(rt.key, since)
    except TooOld as exc:
        return Start(0, error=errors.gone(str(exc)).status())
    start = Start(max([since] + [e.rv for e in events]))
    for e in events:
        kind = translate(e, labels, fields, namespace)
        if kind:
            start.events.append((kind, e.obj))
    return start


def whole_seconds(query: Any, name: str) -> int | None:
    """A query parameter kube-apiserver reads as an integer: it answers 400 to `timeoutSeconds=300.0`."""
    text = query.get(name)
    if not text:
        return None
    try:
        return int(text)
    except ValueError:
        raise errors.bad_request(f"invalid {name} {text!r}: must be a whole number of seconds") from None


async def serve(request: web.Request, store: Store, faults: Faults, rt: ResourceType, version: str,
                namespace: str | None, labels: list[LabelRequirement], fields: list[FieldRequirement],
                bookmark_interval: float, render: Callable[[dict[str, Any]], dict[str, Any]]) -> web.StreamResponse:
    """Stream one watch: the starting events, then changes as they happen, until timeoutSeconds, a client
    disconnect, a dropped-watch fault, a server stop or an overflowing backlog."""
    q = request.query
    timeout = whole_seconds(q, "timeoutSeconds")
    watcher = store.subscribe(rt.key, namespace)  # before reading the history: no event falls in between
    resp = web.StreamResponse(status=200, headers={"Content-Type": "application/json",
                                                   "Cache-Control": "no-cache, private"})
    resp.enable_chunked_encoding()
    stall_guard = None
    stalled_at = faults.stall_generation(rt.plural)
    if timeout is not None:
        # A write blocked on a client that stopped reading would keep the stream open past its deadline.
        # (Not for a stream the stall_watches fault made half-open: nothing of the server ends that one.)
        def guard() -> None:
            if faults.stall_generation(rt.plural) == stalled_at:
                _abort(request)
        stall_guard = asyncio.get_running_loop().call_later(timeout + STALLED_WRITE_GRACE, guard)
    stream = _Stream(request, resp, store, faults, watcher, rt, version, namespace, labels, fields, render,
                     stalled_at)
    try:
        await resp.prepare(request)
        start = starting_point(store, rt, q.get("resourceVersion", ""), namespace, labels, fields)
        if start.error is not None:
            await resp.write(_line("ERROR", start.error))
            return resp
        for i in range(0, len(start.events), BATCH):
            await resp.write(b"".join(_line(kind, stream.rendered(obj)) for kind, obj in start.events[i:i + BATCH]))
        await stream.run(start.rv, time.monotonic() + timeout if timeout else None,
                         q.get("allowWatchBookmarks") in ("true", "1"), bookmark_interval)
    except (ConnectionResetError, asyncio.CancelledError):
        pass
    finally:
        if stall_guard is not None:
            stall_guard.cancel()
        store.unsubscribe(watcher)
    return resp


@dataclass
class _Stream:
    request: web.Request
    resp: web.StreamResponse
    store: Store
    faults: Faults
    watcher: Watcher
    rt: ResourceType
    version: str
    namespace: str | None
    labels: list[LabelRequirement]
    fields: list[FieldRequirement]
    render: Callable[[dict[str, Any]], dict[str, Any]]
    stalled_at: int = 0  # faults.stall_generation when the stream opened

    def rendered(self, obj: dict[str, Any]) -> dict[str, Any]:
        return self.render(objects.for_version(obj, self.rt, self.version))

    def over(self, deadline: float | None, drop_gen: int) -> bool:
        if deadline is not None and time.monotonic() >= deadline:
            return True
        if self.watcher.closed or self.watcher.overflowed or self.faults.drop_generation(self.rt.plural) != drop_gen:
            return True
        transport = self.request.transport
        return transport is None or transport.is_closing()  # the client went away: end now

    async def run(self, start_rv: int, deadline: float | None, bookmarks: bool, bookmark_interval: float) -> None:
        drop_gen = self.faults.drop_generation(self.rt.plural)
        sent_rv = start_rv
        last_bookmark = time.monotonic()
        while not self.over(deadline, drop_gen):
            if self.faults.stall_generation(self.rt.plural) != self.stalled_at:
                await self._half_open()
                return
            batch = self.watcher.take(BATCH)
            if not batch:
                wait = 0.1
                if deadline is not None:
                    wait = min(wait, deadline - time.monotonic())
                if bookmarks:
                    wait = min(wait, last_bookmark + bookmark_interval - time.monotonic())
                await self._idle(wait)
            sent_rv = await self._send(batch, start_rv, sent_rv)
            if bookmarks and time.monotonic() - last_bookmark >= bookmark_interval:
                sent_rv = bookmark_rv(sent_rv, self.store.rv, len(self.watcher.pending), self.watcher.overflowed)
                last_bookmark = time.monotonic()
                await self.resp.write(_line("BOOKMARK", {
                    "kind": self.rt.kind, "apiVersion": self.rt.api_version(self.version),
                    "metadata": {"resourceVersion": str(sent_rv)}}))

    async def _half_open(self) -> None:
        """The stall_watches fault: send nothing and never end; only the client's going away ends it."""
        while (transport := self.request.transport) is not None and not transport.is_closing():
            await asyncio.sleep(0.1)

    async def _idle(self, wait: float) -> None:
        """Sleep until an event is offered or `wait` passes (an Event, not a queue: a lost wake-up costs a
        poll, never an event)."""
        self.watcher.wakeup.clear()
        if self.watcher.pending or wait <= 0:
            return
        try:
            await asyncio.wait_for(self.watcher.wakeup.wait(), timeout=wait)
        except asyncio.TimeoutError:
            pass

    async def _send(self, batch: list[Event], start_rv: int, sent_rv: int) -> int:
        """Write what this watcher sees of `batch` in one chunk; returns the new `sent_rv`."""
        out: list[bytes] = []
        for event in batch:
            if event.rv <= start_rv:
                continue  # the history already brought the stream past it
            kind = translate(event, self.labels, self.fields, self.namespace)
            if kind:
                if self.faults.watch_delay:
                    if out:
                        await self.resp.write(b"".join(out))
                        out = []
                    await asyncio.sleep(self.faults.watch_delay)
                out.append(_line(kind, self.rendered(event.obj)))
            sent_rv = max(sent_rv, event.rv)
        if out:
            await self.resp.write(b"".join(out))
        return sent_rv


def _line(kind: str, obj: dict[str, Any]) -> bytes:
    return (json.dumps({"type": kind, "object": obj}, separators=(",", ":")) + "\n").encode()


def _abort(request: web.Request) -> None:
    transport = request.transport
    if transport is not None and not transport.is_closing():
        transport.abort()
